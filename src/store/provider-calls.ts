import type { Db } from './database.ts'

/** Per-model figures over a window: null when there were no samples. */
export type ModelCallStats = { avgTimeToFirstTokenMs: number | null; uptime: string | null }

type Totals = { model_id: string; calls: number; successes: number; first_delta_sum: number; first_delta_count: number }

/** The UTC minute of an ISO instant, as `provider_call_minutes` keys it (`2026-11-29T01:23`). */
export const minuteOf = (iso: string) => iso.slice(0, 16)

/**
 * One row per provider request after retries. Requests that never reached the provider (local
 * validation) or whose outcome is unknown (interrupted runs) are not recorded, so they cannot count.
 * Each call also adds to its model's minute (migration 0016), so the statistics of a window cost the
 * window's minutes, not its calls: whole minutes from the totals, the first, partial minute from the calls.
 */
export function createProviderCallStore(db: Db) {
  const insert = db.prepare<[string, string, number, number | null]>(
    'INSERT INTO provider_calls (model_id, started_at, succeeded, first_delta_ms) VALUES (?, ?, ?, ?)',
  )
  const addToMinute = db.prepare<[string, string, number, number, number]>(
    `INSERT INTO provider_call_minutes VALUES (?, ?, 1, ?, ?, ?)
     ON CONFLICT (model_id, minute) DO UPDATE SET calls = calls + 1, successes = successes + excluded.successes,
       first_delta_sum = first_delta_sum + excluded.first_delta_sum, first_delta_count = first_delta_count + excluded.first_delta_count`,
  )
  // [since, the minute after since's): calls one by one; from that minute on: the minutes' totals.
  const totals = db.prepare<{ since: string; nextMinute: string }, Totals>(
    `SELECT model_id, sum(calls) AS calls, sum(successes) AS successes, sum(first_delta_sum) AS first_delta_sum,
       sum(first_delta_count) AS first_delta_count
     FROM (
       SELECT model_id, calls, successes, first_delta_sum, first_delta_count FROM provider_call_minutes WHERE minute >= @nextMinute
       UNION ALL
       SELECT model_id, 1, succeeded, CASE WHEN succeeded = 1 THEN coalesce(first_delta_ms, 0) ELSE 0 END,
         CASE WHEN succeeded = 1 AND first_delta_ms IS NOT NULL THEN 1 ELSE 0 END
       FROM provider_calls WHERE started_at >= @since AND started_at < @nextMinute
     ) GROUP BY model_id`,
  )
  type Call = { modelId: string; startedAt: string; succeeded: boolean; firstDeltaMs: number | null }
  const write = (call: Call) => {
    insert.run(call.modelId, call.startedAt, call.succeeded ? 1 : 0, call.firstDeltaMs)
    const timed = call.succeeded && call.firstDeltaMs !== null
    addToMinute.run(call.modelId, minuteOf(call.startedAt), call.succeeded ? 1 : 0, timed ? call.firstDeltaMs! : 0, timed ? 1 : 0)
  }
  const writeAlone = db.transaction(write)
  // The call and its minute together: a settlement's transaction holds them already (no savepoint then).
  const record = (call: Call) => (db.inTransaction ? write(call) : writeAlone(call))
  const listeners: (() => void)[] = []
  return {
    record(call: Call) {
      record(call)
      for (const listener of listeners) listener()
    },
    /** Calls `listener` after each recorded call (the catalogue refreshes its figures soon after). */
    onRecord(listener: () => void) {
      listeners.push(listener)
    },
    statsSince(since: string): Map<string, ModelCallStats> {
      const nextMinute = minuteOf(new Date(Date.parse(`${minuteOf(since)}:00.000Z`) + 60_000).toISOString())
      return new Map(
        totals.all({ since, nextMinute }).map((row) => [
          row.model_id,
          {
            avgTimeToFirstTokenMs: row.first_delta_count === 0 ? null : Math.round((row.first_delta_sum / row.first_delta_count) * 10) / 10,
            uptime: row.calls === 0 ? null : (row.successes / row.calls).toFixed(4),
          },
        ]),
      )
    },
  }
}
