import type { Db } from './database.ts'

/** Per-model figures over a window: null when there were no samples. */
export type ModelCallStats = { avgTimeToFirstTokenMs: number | null; uptime: string | null }

/**
 * One row per provider request after retries. Requests that never reached the provider (local
 * validation) or whose outcome is unknown (interrupted runs) are not recorded, so they cannot count.
 */
export function createProviderCallStore(db: Db) {
  const insert = db.prepare<[string, string, number, number | null]>(
    'INSERT INTO provider_calls (model_id, started_at, succeeded, first_delta_ms) VALUES (?, ?, ?, ?)',
  )
  const stats = db.prepare<[string], { model_id: string; calls: number; successes: number; avg_ms: number | null }>(
    `SELECT model_id, count(*) AS calls, sum(succeeded) AS successes,
       avg(CASE WHEN succeeded = 1 THEN first_delta_ms END) AS avg_ms
     FROM provider_calls WHERE started_at >= ? GROUP BY model_id`,
  )
  const listeners: (() => void)[] = []
  return {
    record(call: { modelId: string; startedAt: string; succeeded: boolean; firstDeltaMs: number | null }) {
      insert.run(call.modelId, call.startedAt, call.succeeded ? 1 : 0, call.firstDeltaMs)
      for (const listener of listeners) listener()
    },
    /** Calls `listener` after each recorded call (the catalogue refreshes its figures soon after). */
    onRecord(listener: () => void) {
      listeners.push(listener)
    },
    statsSince(since: string): Map<string, ModelCallStats> {
      return new Map(
        stats.all(since).map((row) => [
          row.model_id,
          {
            avgTimeToFirstTokenMs: row.avg_ms === null ? null : Math.round(row.avg_ms * 10) / 10,
            uptime: row.calls === 0 ? null : (row.successes / row.calls).toFixed(4),
          },
        ]),
      )
    },
  }
}
