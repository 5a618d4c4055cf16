import type { Database } from 'better-sqlite3'

/**
 * What a run's charge records beside its amount, the hourly roll-up the usage report reads, and
 * the provider calls the catalogue's latency and uptime figures come from.
 */
export function up(db: Database): void {
  db.exec(`
    ALTER TABLE balance_entries ADD COLUMN run_id TEXT;
    ALTER TABLE balance_entries ADD COLUMN api_key_id TEXT;
    ALTER TABLE balance_entries ADD COLUMN model_id TEXT;
    ALTER TABLE balance_entries ADD COLUMN model_name TEXT;
    ALTER TABLE balance_entries ADD COLUMN namespace TEXT;
    ALTER TABLE balance_entries ADD COLUMN input_tokens INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE balance_entries ADD COLUMN output_tokens INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE balance_entries ADD COLUMN reasoning_tokens INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE balance_entries ADD COLUMN cache_read_tokens INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE balance_entries ADD COLUMN cache_write_tokens INTEGER NOT NULL DEFAULT 0;
    -- A run is charged at most once.
    CREATE UNIQUE INDEX balance_entries_run ON balance_entries(run_id) WHERE run_id IS NOT NULL;

    -- One row per (org, hour, dimensions); '' stands for null so the key can be a primary key.
    -- cost_units is model-call spend (positive) in 10^-10 USD; credits add nothing to it.
    CREATE TABLE usage_hourly (
      org_id TEXT NOT NULL,
      hour TEXT NOT NULL,
      entry_type TEXT NOT NULL,
      model_id TEXT NOT NULL,
      model_name TEXT NOT NULL,
      namespace TEXT NOT NULL,
      api_key_id TEXT NOT NULL,
      entries INTEGER NOT NULL,
      runs INTEGER NOT NULL,
      input_tokens INTEGER NOT NULL,
      output_tokens INTEGER NOT NULL,
      reasoning_tokens INTEGER NOT NULL,
      cache_read_tokens INTEGER NOT NULL,
      cache_write_tokens INTEGER NOT NULL,
      cost_units INTEGER NOT NULL,
      PRIMARY KEY (org_id, hour, entry_type, model_id, model_name, namespace, api_key_id)
    ) STRICT, WITHOUT ROWID;

    INSERT INTO usage_hourly
    SELECT org_id, substr(occurred_at, 1, 13) || ':00:00.000Z', entry_type, '', '', '', '',
           count(*), 0, 0, 0, 0, 0, 0, 0
    FROM balance_entries GROUP BY 1, 2, 3;

    CREATE TABLE provider_calls (
      id INTEGER PRIMARY KEY,
      model_id TEXT NOT NULL,
      started_at TEXT NOT NULL,
      succeeded INTEGER NOT NULL CHECK (succeeded IN (0, 1)),
      first_delta_ms INTEGER
    ) STRICT;
    CREATE INDEX provider_calls_started ON provider_calls(started_at);
  `)
}
