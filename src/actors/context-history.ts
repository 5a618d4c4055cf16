import type { CatalogueEntry } from '../domain/catalogue/catalogue-entry.ts'
import type { PartBody, PartKind } from '../domain/parts.ts'
import type { ContextPart } from '../providers/context-part.ts'
import { EMPTY_CONVERSION, extendConversion, type Conversion } from '../providers/convert-to-provider-prompt.ts'
import type { Store } from '../store/index.ts'

type CachedPart = ContextPart & { runId: string | null; kind: PartKind; tokens: number; bytes: number }
type CachedConversion = { media: CatalogueEntry['media']; failedKey: string; partCount: number; value: Conversion }
/** The parts packing may use (a failed run's output left out), for one set of failed runs. */
type CachedPackable = { failedKey: string; from: number; parts: CachedPart[]; leftOut: number[]; tokens: number }
type ChatHistory = {
  parts: CachedPart[]
  lastOrdinal: number
  bytes: number
  packable: CachedPackable | null
  conversion: CachedConversion | null
}

const OUTPUT_KINDS = new Set<PartKind>(['message', 'reasoning', 'tool_call'])
const DEFAULT_MAX_BYTES = 64 * 1024 * 1024

/** One read of a chat's history. Its lists are the kept ones: read them before the chat's next read. */
export type PackableHistory = {
  parts: readonly ContextPart[]
  tokens: number
  /** Ordinals of the chat's parts that are not packable: the output of failed runs. */
  leftOut: readonly number[]
  /** The failed runs whose output was left out, as one comparable string. */
  failedKey: string
}

/**
 * The ledger as packing reads it, kept per chat between turns. The ledger only grows, so each turn
 * reads the parts added since the last one instead of the whole chat; which runs failed is read
 * fresh every time, since a run's status changes after its output is written. The history's
 * conversion to a provider prompt is kept too, and extended by the new parts only. Bounded by bytes,
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
    /** The chat's packable parts oldest first (a failed run's output left out), their tokens, and what was left out. */
    read(chatId: string): PackableHistory {
      const history = chats.get(chatId) ?? { parts: [], lastOrdinal: 0, bytes: 0, packable: null, conversion: null }
      drop(chatId)
      const rows = store.parts.after(chatId, history.lastOrdinal)
      const media = store.parts.mediaOf(rows.flatMap((r) => (r.has_media ? [r.ordinal] : [])), true)
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
        history.lastOrdinal = row.ordinal
        // Tool results' attachments are held once more, base64-encoded, by the kept conversion.
        history.bytes += row.kind === 'tool_result' ? bytes + Math.ceil((bytes - row.body.length) * 4 / 3) : bytes
      }
      keep(chatId, history)

      const failedIds = store.runs.failedRunIds(chatId)
      const failedKey = failedIds.sort().join(',')
      // Kept while the failed runs stay the same: then only the new parts are sorted in or out.
      const kept = history.packable?.failedKey === failedKey ? history.packable : { failedKey, from: 0, parts: [], leftOut: [], tokens: 0 }
      const failed = new Set(failedIds)
      for (let i = kept.from; i < history.parts.length; i++) {
        const part = history.parts[i]!
        if (OUTPUT_KINDS.has(part.kind) && part.runId !== null && failed.has(part.runId)) kept.leftOut.push(part.ordinal)
        else {
          kept.parts.push(part)
          kept.tokens += part.tokens
        }
      }
      kept.from = history.parts.length
      history.packable = kept
      // Shared, not copied (a long chat's turns would each copy it): good until this chat's next read.
      return { parts: kept.parts, tokens: kept.tokens, leftOut: kept.leftOut, failedKey }
    },

    /**
     * `packable` (this chat's latest read) as provider messages for `model`: the kept conversion
     * extended by the parts added since, or converted afresh when the model's media policy or the
     * failed runs changed.
     */
    convert(chatId: string, packable: PackableHistory, model: Pick<CatalogueEntry, 'media'>): Conversion {
      const history = chats.get(chatId)
      const kept = history?.conversion
      const reusable = kept && kept.media === model.media && kept.failedKey === packable.failedKey && kept.partCount <= packable.parts.length
      const base = reusable ? kept : { partCount: 0, value: EMPTY_CONVERSION }
      const value = extendConversion(base.value, packable.parts.slice(base.partCount), model)
      if (history) history.conversion = { media: model.media, failedKey: packable.failedKey, partCount: packable.parts.length, value }
      return value
    },
    forget: drop,
  }

  function keep(chatId: string, history: ChatHistory) {
    if (history.bytes > maxBytes) return
    chats.set(chatId, history)
    totalBytes += history.bytes
    for (const [oldest] of chats) {
      if (totalBytes <= maxBytes) break
      drop(oldest)
    }
  }
}

export type ContextHistory = ReturnType<typeof createContextHistory>
