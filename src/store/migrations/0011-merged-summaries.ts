import type { Database } from 'better-sqlite3'

/**
 * Merged summaries (decisions §5.3): when a chat's summaries no longer fit, the oldest are merged by
 * a compaction run into one summary of their whole range. `merged` tells it from a block's summary:
 * blocks are cut along block summaries only (src/domain/context/cut-blocks.ts), and a chat's latest
 * merged summary is where its summaries begin.
 */
export function up(db: Database): void {
  db.exec(`ALTER TABLE summaries ADD COLUMN merged INTEGER NOT NULL DEFAULT 0 CHECK (merged IN (0, 1))`)
}
