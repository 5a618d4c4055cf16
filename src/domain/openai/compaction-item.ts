import { tombstoneText } from '../context/render-part.ts'
import type { PartBody } from '../parts.ts'

/**
 * A Parley summary as OpenAI's `compaction` item (decisions 055 and 058). Its `encrypted_content` is
 * base64 of a small JSON document: opaque to clients, as OpenAI's is, but not a secret, since it
 * holds only what the client's own conversation said. It holds a summary and, for a response whose
 * turn summarised history, the rest of what that turn's model was sent (`window`): sent back as
 * input, it stands for everything before it, the summary as an assistant's message, then the window.
 */
const MARK = 'parley.summary.v1'

export type CompactionItem = { type: 'compaction'; id: string; encrypted_content: string }
/** A message of a compaction item's window, as it is carried back. */
export type CarriedMessage = { role: 'user' | 'assistant'; text: string }
export type CompactionContent = { summary: string; window: CarriedMessage[] }

export function compactionItem(id: string, summary: string, window: readonly CarriedMessage[] = []): CompactionItem {
  const document = { format: MARK, summary, ...(window.length > 0 ? { window } : {}) }
  return { type: 'compaction', id, encrypted_content: Buffer.from(JSON.stringify(document), 'utf8').toString('base64') }
}

const isCarried = (m: unknown): m is CarriedMessage =>
  typeof m === 'object' && m !== null && ((m as CarriedMessage).role === 'user' || (m as CarriedMessage).role === 'assistant') && typeof (m as CarriedMessage).text === 'string'

/** What a compaction item carries; null when it is not one this server made. */
export function contentOf(encryptedContent: string): CompactionContent | null {
  try {
    const decoded = JSON.parse(Buffer.from(encryptedContent, 'base64').toString('utf8')) as { format?: unknown; summary?: unknown; window?: unknown }
    if (decoded.format !== MARK || typeof decoded.summary !== 'string') return null
    const window = decoded.window ?? []
    if (!Array.isArray(window) || !window.every(isCarried)) return null
    return { summary: decoded.summary, window }
  } catch {
    return null
  }
}

/** How a carried summary reads in the history the model is sent. */
export const carriedSummaryText = (summary: string) => `Summary of the conversation so far:\n${summary}`

/**
 * Ledger parts as the messages a compaction item carries: prompts as the user's, answers as the
 * assistant's, a tool call and its result told in words (a carried history holds messages only),
 * reasoning left out (it is the model's own, and replayed only to the model that made it).
 */
export function carriedMessagesOf(parts: readonly PartBody[]): CarriedMessage[] {
  return parts.flatMap((body): CarriedMessage[] => {
    switch (body.type) {
      case 'prompt':
        return body.text === '' ? [] : [{ role: 'user', text: body.text }]
      case 'message':
        return [{ role: 'assistant', text: body.refusal ? `(refused) ${body.refusal}` : body.text }]
      case 'tool_call':
        return [{ role: 'assistant', text: `Called ${body.tool_name} with ${body.arguments}` }]
      case 'tool_result':
        return [{ role: 'user', text: `${body.tool_name} returned${body.is_error ? ' an error' : ''}: ${body.tombstone_reason ? tombstoneText(body.tombstone_reason) : body.text}` }]
      case 'reasoning':
        return []
      default: {
        const unknown: never = body
        throw new Error(`unknown part ${JSON.stringify(unknown)}`)
      }
    }
  })
}
