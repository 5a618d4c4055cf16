import type { Database } from 'better-sqlite3'

/**
 * docs/decisions/033-running-run-caps.md: admission counts an organisation's running customer runs
 * (MAX_RUNNING_RUNS_PER_ORG) twice per turn, once before packing and once in the transaction that
 * writes the run. No index covered runs by organisation; this partial one holds just the running
 * customer runs, so the count reads at most the cap's worth of entries. Compaction runs do not count.
 */
export function up(db: Database): void {
  db.exec(`CREATE INDEX runs_org_running_customer ON runs(org_id) WHERE status = 'running' AND origin = 'customer';`)
}
