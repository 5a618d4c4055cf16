import type { Database } from 'better-sqlite3'

/**
 * Summaries of sealed ledger blocks (docs/guide/context.md), one per block, made by a compaction run and
 * reused by every later turn. Deleted with their chat; the compaction runs stay for billing.
 */
export function up(db: Database): void {
  db.exec(`
    CREATE TABLE summaries (
      chat_id TEXT NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
      first_ordinal INTEGER NOT NULL,
      last_ordinal INTEGER NOT NULL,
      text TEXT NOT NULL,
      tokens INTEGER NOT NULL,
      run_id TEXT NOT NULL,
      created_at TEXT NOT NULL,
      PRIMARY KEY (chat_id, first_ordinal, last_ordinal)
    ) STRICT, WITHOUT ROWID;
  `)
}
