import type { Database } from 'better-sqlite3'

/** Runs with their leases, idempotency keys, and attachments stored content-addressed in the database. */
export function up(db: Database): void {
  db.exec(`
    CREATE TABLE runs (
      id TEXT PRIMARY KEY,
      org_id TEXT NOT NULL REFERENCES organisations(id) ON DELETE CASCADE,
      chat_id TEXT NOT NULL,
      origin TEXT NOT NULL CHECK (origin IN ('customer','compaction')),
      status TEXT NOT NULL CHECK (status IN ('running','succeeded','failed','cancelled')),
      model_id TEXT NOT NULL,
      model_name TEXT NOT NULL,
      namespace TEXT,
      api_key_id TEXT,
      retry_of TEXT,
      created_at TEXT NOT NULL,
      completed_at TEXT,
      settled_at TEXT,
      cost_units INTEGER,
      error TEXT,
      stop_reason TEXT,
      latency_ms INTEGER,
      provider_request_id TEXT,
      usage TEXT,
      manifest TEXT NOT NULL,
      lease_owner TEXT,
      lease_expires_at TEXT
    ) STRICT;
    -- Chats are deleted with their ledger; their runs stay for billing and inspection.
    CREATE INDEX runs_chat ON runs(chat_id, created_at);
    CREATE INDEX runs_running ON runs(status, lease_expires_at) WHERE status = 'running';

    CREATE TABLE idempotency_keys (
      org_id TEXT NOT NULL,
      key TEXT NOT NULL,
      run_id TEXT NOT NULL,
      created_at TEXT NOT NULL,
      PRIMARY KEY (org_id, key)
    ) STRICT, WITHOUT ROWID;

    -- Bytes are stored once per content hash; parts refer to them.
    CREATE TABLE media_blobs (
      sha256 TEXT PRIMARY KEY,
      bytes BLOB NOT NULL
    ) STRICT;

    CREATE TABLE part_media (
      media_id TEXT PRIMARY KEY,
      part_ordinal INTEGER NOT NULL REFERENCES parts(ordinal) ON DELETE CASCADE,
      position INTEGER NOT NULL,
      sha256 TEXT NOT NULL REFERENCES media_blobs(sha256),
      mime TEXT NOT NULL,
      byte_len INTEGER NOT NULL,
      filename TEXT,
      width INTEGER,
      height INTEGER,
      page_count INTEGER
    ) STRICT;
    CREATE INDEX part_media_part ON part_media(part_ordinal, position);
    CREATE INDEX part_media_blob ON part_media(sha256);
    -- Each part's token estimate, so packing can weigh history without reading it.
    ALTER TABLE parts ADD COLUMN tokens INTEGER NOT NULL DEFAULT 0;
    -- Pending tool calls are found through the run that made them.
    CREATE INDEX parts_run ON parts(run_id) WHERE run_id IS NOT NULL;
  `)
}
