import type { Database } from 'better-sqlite3'

/**
 * Packing asks every turn which of a chat's runs failed (their output is left out of the context).
 * Through runs_chat that visits every run of the chat; failed runs are few, so a partial index
 * holds just them.
 */
export function up(db: Database): void {
  db.exec(`CREATE INDEX runs_chat_failed ON runs(chat_id) WHERE status = 'failed';`)
}
