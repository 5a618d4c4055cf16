import type { Database } from 'better-sqlite3'

/** Identity, chats, the ledger of parts, balance entries and platform updates. */
export function up(db: Database): void {
  db.exec(`
    CREATE TABLE organisations (
      id TEXT PRIMARY KEY,
      name TEXT NOT NULL,
      slug TEXT NOT NULL UNIQUE,
      markup_percent TEXT,
      created_at TEXT NOT NULL
    ) STRICT;

    CREATE TABLE api_keys (
      id TEXT PRIMARY KEY,
      org_id TEXT NOT NULL REFERENCES organisations(id) ON DELETE CASCADE,
      name TEXT,
      secret_hash BLOB NOT NULL UNIQUE,
      created_at TEXT NOT NULL,
      revoked_at TEXT
    ) STRICT;
    CREATE INDEX api_keys_org ON api_keys(org_id);

    CREATE TABLE console_sessions (
      token_hash BLOB PRIMARY KEY,
      org_id TEXT NOT NULL REFERENCES organisations(id) ON DELETE CASCADE,
      created_at TEXT NOT NULL,
      expires_at TEXT NOT NULL
    ) STRICT, WITHOUT ROWID;

    -- seq gives chats a total order for paging; ids are random uuids.
    CREATE TABLE chats (
      seq INTEGER PRIMARY KEY AUTOINCREMENT,
      id TEXT NOT NULL UNIQUE,
      org_id TEXT NOT NULL REFERENCES organisations(id) ON DELETE CASCADE,
      namespace TEXT,
      title TEXT,
      description TEXT,
      user_metadata TEXT NOT NULL,
      part_count INTEGER NOT NULL DEFAULT 0,
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL
    ) STRICT;
    CREATE INDEX chats_org_seq ON chats(org_id, seq);
    CREATE INDEX chats_org_namespace ON chats(org_id, namespace, seq);

    -- The ledger. ordinal is one sequence across the whole ledger: AUTOINCREMENT never
    -- reuses a value, so ordinals are never renumbered and deletes leave gaps.
    CREATE TABLE parts (
      ordinal INTEGER PRIMARY KEY AUTOINCREMENT,
      id TEXT NOT NULL UNIQUE,
      chat_id TEXT NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
      run_id TEXT,
      kind TEXT NOT NULL CHECK (kind IN ('prompt','tool_result','message','reasoning','tool_call')),
      body TEXT NOT NULL,
      user_metadata TEXT NOT NULL,
      created_at TEXT NOT NULL
    ) STRICT;
    CREATE INDEX parts_chat_ordinal ON parts(chat_id, ordinal);

    -- Amounts are integers of 10^-10 currency units (src/domain/money.ts).
    CREATE TABLE balance_entries (
      id TEXT PRIMARY KEY,
      org_id TEXT NOT NULL REFERENCES organisations(id) ON DELETE CASCADE,
      entry_type TEXT NOT NULL CHECK (entry_type IN ('usage','compaction','topup','refund','adjustment','promotional_credit')),
      amount_units INTEGER NOT NULL,
      currency TEXT NOT NULL,
      occurred_at TEXT NOT NULL
    ) STRICT;
    CREATE INDEX balance_entries_org_time ON balance_entries(org_id, occurred_at);

    CREATE TABLE platform_updates (
      id TEXT PRIMARY KEY,
      kind TEXT NOT NULL CHECK (kind IN ('release','notice','maintenance')),
      title TEXT NOT NULL,
      body TEXT NOT NULL,
      important INTEGER NOT NULL,
      version TEXT,
      published_at TEXT NOT NULL
    ) STRICT;
    CREATE INDEX platform_updates_published ON platform_updates(published_at);
  `)
}
