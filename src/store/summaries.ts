import type { BlockSummary } from '../domain/context/render-summary.ts'
import type { Db } from './database.ts'

type SummaryRow = { first_ordinal: number; last_ordinal: number; text: string; tokens: number; run_id: string; merged: number }

const toSummary = (row: SummaryRow): BlockSummary => ({
  firstOrdinal: row.first_ordinal,
  lastOrdinal: row.last_ordinal,
  text: row.text,
  tokens: row.tokens,
  runId: row.run_id,
  ...(row.merged === 1 ? { merged: true } : {}),
})

/** What a summary was written from: a block's parts (ordinals), or the summaries a merge merged (ranges). */
export type SummarySources = { parts?: readonly number[]; merges?: readonly { firstOrdinal: number; lastOrdinal: number }[] }
const NO_SOURCES: SummarySources = {}

/** Block summaries (migration 0007) and merged ones (0011). */
export function createSummaryStore(db: Db) {
  const ofChat = db.prepare<[string], SummaryRow>(
    'SELECT first_ordinal, last_ordinal, text, tokens, run_id, merged FROM summaries WHERE chat_id = ? ORDER BY first_ordinal, last_ordinal',
  )
  const ofRange = db.prepare<[string, number, number], SummaryRow>(
    'SELECT first_ordinal, last_ordinal, text, tokens, run_id, merged FROM summaries WHERE chat_id = ? AND first_ordinal = ? AND last_ordinal = ?',
  )
  // A block is summarised once: a second summary of the same block is ignored; so is the summary of
  // a chat deleted while its compaction ran, and one whose sources were erased meanwhile
  // (docs/decisions/056-erasing-items.md): a part it read, or a summary it merged, is gone.
  const insert = db.prepare(
    `INSERT OR IGNORE INTO summaries (chat_id, first_ordinal, last_ordinal, text, tokens, run_id, created_at, merged)
     SELECT @chatId, @firstOrdinal, @lastOrdinal, @text, @tokens, @runId, @createdAt, @merged
     WHERE EXISTS (SELECT 1 FROM chats WHERE id = @chatId)
       AND (SELECT count(*) FROM parts WHERE chat_id = @chatId AND ordinal IN (SELECT value FROM json_each(@parts))) = json_array_length(@parts)
       AND (SELECT count(*) FROM summaries s JOIN json_each(@merges) j
            ON s.first_ordinal = json_extract(j.value, '$[0]') AND s.last_ordinal = json_extract(j.value, '$[1]')
            WHERE s.chat_id = @chatId) = json_array_length(@merges)`,
  )
  return {
    ofChat: (chatId: string) => ofChat.all(chatId).map(toSummary),
    /** The stored summary of exactly this range, if any. */
    ofRange: (chatId: string, firstOrdinal: number, lastOrdinal: number) => {
      const row = ofRange.get(chatId, firstOrdinal, lastOrdinal)
      return row ? toSummary(row) : null
    },
    /**
     * Stores a summary unless its range is stored already, its chat is gone, or what it was written
     * from (`sources`: the parts a block's run read, or the ranges a merge merged) was erased since.
     */
    insert: (chatId: string, summary: BlockSummary, createdAt: string, sources: SummarySources = NO_SOURCES) =>
      insert.run({
        chatId,
        firstOrdinal: summary.firstOrdinal,
        lastOrdinal: summary.lastOrdinal,
        text: summary.text,
        tokens: summary.tokens,
        runId: summary.runId,
        createdAt,
        merged: summary.merged ? 1 : 0,
        parts: JSON.stringify(sources.parts ?? []),
        merges: JSON.stringify((sources.merges ?? []).map((r) => [r.firstOrdinal, r.lastOrdinal])),
      }).changes > 0,
  }
}
