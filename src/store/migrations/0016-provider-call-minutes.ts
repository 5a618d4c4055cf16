import type { Database } from 'better-sqlite3'

/**
 * The catalogue's call statistics kept as they come (issue 34): one row per model and UTC minute
 * with its calls, successes and the sum and count of the successes' first-delta times, upserted
 * with each provider call. A 24-hour window then reads at most 1,441 rows per model, however many
 * calls it held; `provider_calls` keeps the calls themselves for the window's first, partial minute.
 * Filled from the calls already recorded.
 */
export function up(db: Database): void {
  db.exec(`
    CREATE TABLE provider_call_minutes (
      model_id TEXT NOT NULL,
      minute TEXT NOT NULL,
      calls INTEGER NOT NULL,
      successes INTEGER NOT NULL,
      first_delta_sum INTEGER NOT NULL,
      first_delta_count INTEGER NOT NULL,
      PRIMARY KEY (model_id, minute)
    ) STRICT, WITHOUT ROWID;
    CREATE INDEX provider_call_minutes_by_minute ON provider_call_minutes (minute);
    INSERT INTO provider_call_minutes
    SELECT model_id, substr(started_at, 1, 16), count(*), sum(succeeded),
      coalesce(sum(CASE WHEN succeeded = 1 THEN first_delta_ms END), 0),
      count(CASE WHEN succeeded = 1 THEN first_delta_ms END)
    FROM provider_calls GROUP BY 1, 2;
  `)
}
