import type { BlockSummary } from '../domain/context/render-summary.ts'
import type { Db } from './database.ts'

type SummaryRow = { first_ordinal: number; last_ordinal: number; text: string; tokens: number; run_id: string }

const toSummary = (row: SummaryRow): BlockSummary => ({
  firstOrdinal: row.first_ordinal,
  lastOrdinal: row.last_ordinal,
  text: row.text,
  tokens: row.tokens,
  runId: row.run_id,
})

/** Block summaries (migration 0007). */
export function createSummaryStore(db: Db) {
  const ofChat = db.prepare<[string], SummaryRow>(
    'SELECT first_ordinal, last_ordinal, text, tokens, run_id FROM summaries WHERE chat_id = ? ORDER BY first_ordinal',
  )
  // A block is summarised once: a second summary of the same block is ignored; so is the summary of
  // a chat deleted while its compaction ran.
  const insert = db.prepare(
    `INSERT OR IGNORE INTO summaries (chat_id, first_ordinal, last_ordinal, text, tokens, run_id, created_at)
     SELECT @chatId, @firstOrdinal, @lastOrdinal, @text, @tokens, @runId, @createdAt
     WHERE EXISTS (SELECT 1 FROM chats WHERE id = @chatId)`,
  )
  return {
    ofChat: (chatId: string) => ofChat.all(chatId).map(toSummary),
    insert: (chatId: string, summary: BlockSummary, createdAt: string) => insert.run({ chatId, ...summary, createdAt }).changes > 0,
  }
}
