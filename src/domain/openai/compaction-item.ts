/**
 * A Parley summary as OpenAI's `compaction` item (decision 055). Its `encrypted_content` is the
 * summary itself, base64 of a small JSON document: opaque to clients, as OpenAI's is, but not a
 * secret, since it holds only what the client's own conversation said. Sent back as input, it is
 * carried as history: the summary as an assistant's message.
 */
const MARK = 'parley.summary.v1'

export type CompactionItem = { type: 'compaction'; id: string; encrypted_content: string }

export function compactionItem(id: string, summary: string): CompactionItem {
  return { type: 'compaction', id, encrypted_content: Buffer.from(JSON.stringify({ format: MARK, summary }), 'utf8').toString('base64') }
}

/** The summary a compaction item carries; null when it is not one this server made. */
export function summaryOf(encryptedContent: string): string | null {
  try {
    const decoded = JSON.parse(Buffer.from(encryptedContent, 'base64').toString('utf8')) as { format?: unknown; summary?: unknown }
    return decoded.format === MARK && typeof decoded.summary === 'string' ? decoded.summary : null
  } catch {
    return null
  }
}

/** How a carried summary reads in the history the model is sent. */
export const carriedSummaryText = (summary: string) => `Summary of the conversation so far:\n${summary}`
