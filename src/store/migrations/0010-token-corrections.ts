import type { Database } from 'better-sqlite3'

/**
 * The per-model correction of the token estimate (src/domain/context/token-correction.ts): the recent
 * ratios of a vendor's input count to our estimate, as a JSON array, and how many runs taught them.
 * Written with each settlement, so every node packs with the same correction.
 */
export function up(db: Database): void {
  db.exec(`
    CREATE TABLE IF NOT EXISTS token_corrections (
      model_id TEXT PRIMARY KEY,
      ratios TEXT NOT NULL,
      runs INTEGER NOT NULL,
      updated_at TEXT NOT NULL
    ) STRICT;
  `)
}
