import type { PartBody, PartKind } from '../domain/parts.ts'
import type { ContextPart } from '../providers/context-part.ts'
import type { Store } from '../store/index.ts'

type CachedPart = ContextPart & { runId: string | null; kind: PartKind; tokens: number; bytes: number }
type ChatHistory = { parts: CachedPart[]; ordinals: number[]; lastOrdinal: number; bytes: number }

const OUTPUT_KINDS = new Set<PartKind>(['message', 'reasoning', 'tool_call'])
const DEFAULT_MAX_BYTES = 64 * 1024 * 1024

export type PackableHistory = { parts: ContextPart[]; tokens: number; ordinals: number[] }

/**
 * The ledger as packing reads it, kept per chat between turns. The ledger only grows, so each turn
 * reads the parts added since the last one instead of the whole chat; which runs failed is read
 * fresh every time, since a run's status changes after its output is written. Bounded by bytes,
 * least recently used chats dropped first; the ledger stays the truth.
 */
export function createContextHistory(store: Pick<Store, 'parts' | 'runs'>, maxBytes = DEFAULT_MAX_BYTES) {
  const chats = new Map<string, ChatHistory>()
  let totalBytes = 0

  const drop = (chatId: string) => {
    const found = chats.get(chatId)
    if (!found) return
    totalBytes -= found.bytes
    chats.delete(chatId)
  }

  return {
    /** The chat's packable parts oldest first (a failed run's output left out), their tokens, and every ordinal. */
    read(chatId: string): PackableHistory {
      const history = chats.get(chatId) ?? { parts: [], ordinals: [], lastOrdinal: 0, bytes: 0 }
      chats.delete(chatId)
      const rows = store.parts.after(chatId, history.lastOrdinal)
      const media = store.parts.mediaOf(rows.map((r) => r.ordinal), true)
      for (const row of rows) {
        const attachments = (media.get(row.ordinal) ?? []).map((m) => ({ mime: m.mime, bytes: m.bytes!, filename: m.filename }))
        const bytes = row.body.length + attachments.reduce((sum, m) => sum + m.bytes.length, 0)
        history.parts.push({
          ordinal: row.ordinal,
          body: JSON.parse(row.body) as PartBody,
          media: attachments,
          runId: row.run_id,
          kind: row.kind,
          tokens: row.tokens,
          bytes,
        })
        history.ordinals.push(row.ordinal)
        history.lastOrdinal = row.ordinal
        history.bytes += bytes
        totalBytes += bytes
      }
      if (history.bytes <= maxBytes) {
        chats.set(chatId, history)
        for (const [oldest] of chats) {
          if (totalBytes <= maxBytes) break
          drop(oldest)
        }
      } else totalBytes -= history.bytes

      const failed = new Set(store.runs.failedRunIds(chatId))
      const parts = history.parts.filter((p) => !(OUTPUT_KINDS.has(p.kind) && p.runId !== null && failed.has(p.runId)))
      return { parts, tokens: parts.reduce((sum, p) => sum + p.tokens, 0), ordinals: history.ordinals }
    },
    forget: drop,
  }
}

export type ContextHistory = ReturnType<typeof createContextHistory>
