import type { Database } from 'better-sqlite3'

/**
 * The admin command line lists an organisation's recent runs (`runs --org`) and each API key's
 * newest run (`key list`). Runs were indexed by chat and, for running customer runs only, by
 * organisation (0012); without this index both read every run of every organisation.
 */
export function up(db: Database): void {
  db.exec(`CREATE INDEX runs_org_created ON runs(org_id, created_at);`)
}
