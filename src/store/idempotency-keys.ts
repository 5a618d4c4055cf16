import type { Db } from './database.ts'

export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000

/** Keys are organisation-scoped and honoured for 24 hours (docs/guide/runs.md). */
export function createIdempotencyKeyStore(db: Db) {
  const find = db.prepare<[string, string, string], { run_id: string }>(
    'SELECT run_id FROM idempotency_keys WHERE org_id = ? AND key = ? AND created_at > ?',
  )
  const upsert = db.prepare<[string, string, string, string]>(
    `INSERT INTO idempotency_keys (org_id, key, run_id, created_at) VALUES (?, ?, ?, ?)
     ON CONFLICT (org_id, key) DO UPDATE SET run_id = excluded.run_id, created_at = excluded.created_at`,
  )
  return {
    /** The run that used this key within the last 24 hours, if any. */
    runOf(orgId: string, key: string, now: Date): string | null {
      return find.get(orgId, key, new Date(now.getTime() - IDEMPOTENCY_TTL_MS).toISOString())?.run_id ?? null
    },
    /** Records the key for a run; an expired use of the same key is replaced. */
    record: (orgId: string, key: string, runId: string, now: Date) => upsert.run(orgId, key, runId, now.toISOString()),
  }
}
