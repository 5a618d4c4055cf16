import type { MediaRef } from '../domain/context/context-types.ts'
import { packContextOrOverflow, type PackedContext, type PackInput, type PackOverflow, type PackResult } from '../domain/context/pack-context.ts'
import { contextTooLargeError } from '../domain/context/context-overflow.ts'
import { PackingHistory, type HistoryEntry } from '../domain/context/packing-history.ts'
import { BlockIndex, blockKey } from '../domain/context/cut-blocks.ts'
import type { BlockToSummarise } from '../domain/context/block-to-summarise.ts'
import type { BlockSummary } from '../domain/context/render-summary.ts'
import { compactionSizes, summaryBound, unmadeSummaryEstimate } from '../domain/context/compaction-sizes.ts'
import { estimateBudget, vendorInputBudget } from '../domain/context/model-limits.ts'
import type { PartBody, PartKind } from '../domain/parts.ts'
import type { DecodedMedia } from '../domain/turns/submission.ts'
import type { MediaRow, PackingMetaRow } from '../store/parts.ts'
import type { Store } from '../store/index.ts'

type ChatHistory = {
  history: PackingHistory
  lastOrdinal: number
  failed: Set<string>
  /** Entries before this index may have had their bodies let go. */
  bodiesFrom: number
  bytes: number
  /** Bytes of the attachments the latest turn sent: most of them are sent again next turn. */
  media: Map<string, Buffer>
  blocks: BlockIndex
  /** The chat's stored summaries by blockKey (of blocks, and merged ones). */
  summaries: Map<string, BlockSummary>
  /** Where each stored block summary ends, by its first ordinal: blocks are cut along them. */
  summarisedUntil: Map<number, number>
  /** The latest merged summary: the chat's summaries begin with it. */
  merged: BlockSummary | null
  /** Tokens of the chat's latest block summaries: what an unmade one is estimated at. */
  recent: number[]
  /** Where the previous turn began its verbatim history, and under which window and budget. */
  previous: { start: number; firstSummary: number | null; window: number; budget: object } | null
}

/** A new part's decoded attachments as packing takes them, with their bytes (ids good for this turn only). */
export function newPartMedia(media: readonly DecodedMedia[], part: number): PackRequest['newParts'][number]['media'] {
  return media.map((m, j) => ({
    mediaId: `new:${part}:${j}`,
    mime: m.mime,
    byteLen: m.bytes.length,
    filename: m.filename,
    width: m.width,
    height: m.height,
    pageCount: m.page_count,
    bytes: m.bytes,
  }))
}

export type PackedTurn = Omit<PackedContext, 'needed'> & {
  warnings: Extract<PackResult, { kind: 'packed' }>['warnings']
  bytesOf: (mediaId: string) => Buffer
  needed: BlockToSummarise[]
}
export type PackRequest = Omit<PackInput, 'history' | 'newParts' | 'compaction'> & {
  newParts: { body: PartBody; media: (MediaRef & { bytes: Buffer })[] }[]
  /** Blocks whose compaction failed for this turn, and those made for it (by blockKey). */
  compaction?: { unavailable: ReadonlySet<string>; madeNow: ReadonlySet<string> }
}

const OUTPUT_KINDS = new Set<PartKind>(['message', 'reasoning', 'tool_call'])
const DEFAULT_MAX_BYTES = 64 * 1024 * 1024
/** What an entry costs beyond its body, roughly: kept so the bound counts long chats of short parts. */
const ENTRY_OVERHEAD_BYTES = 160
/** Bodies this many entries older than the oldest part a turn looked at are let go. */
const BODY_SLACK = 64

const summaryBytes = (summary: BlockSummary) => ENTRY_OVERHEAD_BYTES + summary.text.length * 2
/** How many of the chat's latest block summaries its estimate of an unmade one looks at. */
const RECENT_SUMMARIES = 8

/** Files a stored summary where packing looks for it. */
function fileSummary(chat: Pick<ChatHistory, 'summaries' | 'summarisedUntil' | 'merged' | 'recent'>, summary: BlockSummary) {
  chat.summaries.set(blockKey(summary), summary)
  if (summary.merged) {
    const latest = chat.merged
    if (!latest || summary.lastOrdinal > latest.lastOrdinal || (summary.lastOrdinal === latest.lastOrdinal && summary.firstOrdinal < latest.firstOrdinal)) chat.merged = summary
    return
  }
  if (!chat.summarisedUntil.has(summary.firstOrdinal)) chat.summarisedUntil.set(summary.firstOrdinal, summary.lastOrdinal)
  chat.recent.push(summary.tokens)
  if (chat.recent.length > RECENT_SUMMARIES) chat.recent.shift()
}

const toMediaRef = (m: MediaRow): MediaRef => ({
  mediaId: m.media_id,
  mime: m.mime,
  byteLen: m.byte_len,
  filename: m.filename,
  width: m.width,
  height: m.height,
  pageCount: m.page_count,
})

/**
 * What packing needs of each chat, kept between its turns by the chat's actor, so a turn costs its
 * window and what changed, never the ledger (decision 012). Each turn reads only the parts added
 * since the last one; the entries keep their estimates, running sums and renderings. Bodies far older than what
 * a turn sent are let go and read again only if a later turn reaches back to them, so a chat of any
 * length costs memory in proportion to its packed window. Bounded by bytes across chats, least
 * recently used first; the ledger stays the truth.
 */
export function createContextHistory(store: Pick<Store, 'parts' | 'runs' | 'summaries'>, maxBytes = DEFAULT_MAX_BYTES) {
  const chats = new Map<string, ChatHistory>()
  let totalBytes = 0

  const drop = (chatId: string) => {
    const found = chats.get(chatId)
    if (!found) return
    totalBytes -= found.bytes
    chats.delete(chatId)
  }

  const bodyBytes = (entry: HistoryEntry) => (entry.bodyLength ?? 0) * 2
  const add = (chat: ChatHistory, entry: HistoryEntry) => {
    chat.history.append(entry)
    chat.bytes += ENTRY_OVERHEAD_BYTES + (entry.body === null ? 0 : bodyBytes(entry))
  }

  /** Brings the kept history up to the ledger: runs that failed since, and parts added since. */
  function refresh(chatId: string): ChatHistory {
    const found = chats.get(chatId)
    const chat = found ?? {
      history: new PackingHistory(),
      lastOrdinal: 0,
      failed: new Set<string>(),
      bodiesFrom: 0,
      bytes: 0,
      media: new Map<string, Buffer>(),
      blocks: new BlockIndex(),
      summaries: new Map(),
      summarisedUntil: new Map(),
      merged: null,
      recent: [],
      previous: null,
    }
    if (!found)
      for (const summary of store.summaries.ofChat(chatId)) {
        fileSummary(chat, summary)
        chat.bytes += summaryBytes(summary)
      }
    drop(chatId)
    // A failed run's output is never packed (docs/guide/runs.md); a run fails after its output was kept.
    const failedNow = store.runs.failedRunIds(chatId).filter((id) => !chat.failed.has(id))
    const isFailedOutput = (e: { kind: PartKind; runId: string | null }) => OUTPUT_KINDS.has(e.kind) && e.runId !== null && chat.failed.has(e.runId)
    for (const id of failedNow) chat.failed.add(id)
    const firstFailed = Math.min(...failedNow.map((id) => chat.history.firstIndexOfRun(id)).filter((i) => i !== -1))
    if (Number.isFinite(firstFailed)) {
      chat.blocks.truncate(firstFailed)
      chat.previous = null
      for (const entry of chat.history.truncate(firstFailed)) {
        const orphan = entry.kind === 'tool_result' && entry.toolUseId !== null && !chat.history.hasCall(entry.toolUseId)
        if (isFailedOutput(entry) || orphan) chat.bytes -= ENTRY_OVERHEAD_BYTES + (entry.body === null ? 0 : bodyBytes(entry))
        else chat.history.append(entry)
      }
    }

    // A chat seen for the first time is read without its bodies (a long chat's whole ledger would
    // hold the event loop for seconds); packing asks for the ones it sends.
    if (chat.history.length === 0 && chat.lastOrdinal === 0) {
      adopt(chat, store.parts.packingMeta(chatId, 0), isFailedOutput)
      chat.bodiesFrom = chat.history.length
      return chat
    }
    const rows = store.parts.after(chatId, chat.lastOrdinal).map((row) => {
      const body = JSON.parse(row.body) as PartBody
      const toolUseId = body.type === 'tool_call' || body.type === 'tool_result' ? body.tool_use_id : null
      return { ...row, body, body_length: row.body.length, tool_use_id: toolUseId }
    })
    adopt(chat, rows, isFailedOutput)
    return chat
  }

  /** Appends the packable of `rows` (ledger order) to the kept history: not a failed run's output, nor a result whose call is not packable. */
  function adopt(chat: ChatHistory, rows: (PackingMetaRow & { body?: PartBody })[], isFailedOutput: (e: { kind: PartKind; runId: string | null }) => boolean) {
    const media = store.parts.mediaOf(rows.flatMap((r) => (r.has_media ? [r.ordinal] : [])), false)
    for (const row of rows) {
      chat.lastOrdinal = row.ordinal
      if (isFailedOutput({ kind: row.kind, runId: row.run_id })) continue
      if (row.kind === 'tool_result' && row.tool_use_id !== null && !chat.history.hasCall(row.tool_use_id)) continue
      add(chat, {
        ordinal: row.ordinal,
        kind: row.kind,
        runId: row.run_id,
        toolUseId: row.tool_use_id,
        tokens: row.tokens,
        media: (media.get(row.ordinal) ?? []).map(toMediaRef),
        body: row.body ?? null,
        bodyLength: row.body_length,
        renders: null,
      })
    }
  }

  /** Reads again the bodies of entries before `before` that were let go (a turn reaching further back). */
  function restoreBodies(chatId: string, chat: ChatHistory, before: number) {
    const entries = chat.history.entries
    // Reaching back doubles what is read each time: a first turn reads its window in a few steps.
    const from = Math.max(0, before - Math.max(256, 2 * (entries.length - before)))
    const byOrdinal = new Map(store.parts.bodiesBetween(chatId, entries[from]!.ordinal, entries[before - 1]!.ordinal).map((r) => [r.ordinal, r.body]))
    for (let i = from; i < before; i++) {
      const entry = entries[i]!
      const body = byOrdinal.get(entry.ordinal)
      if (entry.body !== null || body === undefined) continue
      entry.body = JSON.parse(body) as PartBody
      entry.bodyLength = body.length
      chat.bytes += bodyBytes(entry)
    }
    chat.bodiesFrom = Math.min(chat.bodiesFrom, from)
  }

  /** Lets go of the bodies (and renderings) of entries well behind what this turn looked at; the anchors stay. */
  function releaseBodies(chat: ChatHistory, oldestVisited: number, anchors: number) {
    const entries = chat.history.entries
    const until = oldestVisited - BODY_SLACK
    for (let i = Math.max(chat.bodiesFrom, anchors + BODY_SLACK); i < until; i++) {
      const entry = entries[i]!
      if (entry.body === null) continue
      chat.bytes -= bodyBytes(entry)
      entry.body = null
      entry.renders = null
    }
    chat.bodiesFrom = Math.max(chat.bodiesFrom, until)
  }

  function keep(chatId: string, chat: ChatHistory) {
    if (chat.bytes > maxBytes) return
    chats.set(chatId, chat)
    totalBytes += chat.bytes
    for (const [oldest] of chats) {
      if (totalBytes <= maxBytes) break
      drop(oldest)
    }
  }

  return {
    /**
     * Packs a turn of `chatId` (src/domain/context/pack-context.ts) over its kept history, and hands
     * out the bytes of the attachments it sends. Throws ContextTooLargeError when the fixed parts do
     * not fit.
     */
    pack(chatId: string, request: PackRequest): PackedTurn {
      const result = packOrOverflow(chatId, request)
      if (result.kind === 'too-large') throw contextTooLargeError(result.overflow)
      return result.turn
    },
    /**
     * pack, answering a context too large (the fixed parts do not fit) as a value: the sizes the chat
     * machine's `contextIsTooLarge` guard decides the 422 on (src/actors/read-turn.ts).
     */
    packOrOverflow,
    /** A summary just made (and committed): later turns of the chat send it. */
    addSummary(chatId: string, summary: BlockSummary): void {
      const chat = chats.get(chatId)
      if (!chat || chat.summaries.has(blockKey(summary))) return
      fileSummary(chat, summary)
      chat.bytes += summaryBytes(summary)
      totalBytes += summaryBytes(summary)
    },
    forget: drop,
  }

  function packOrOverflow(chatId: string, request: PackRequest): { kind: 'packed'; turn: PackedTurn } | PackOverflow {
    const chat = refresh(chatId)
    try {
      // The budget packing measures against: a new correction moves the previous turn's start too.
      const window = estimateBudget(vendorInputBudget(request.model, request.budget), request.tokenCorrection ?? 1)
      const previous = chat.previous?.window === window && chat.previous.budget === request.budget ? chat.previous : null
      const sizes = compactionSizes(Math.min(window, request.budget.max_history_tokens ?? Number.POSITIVE_INFINITY))
      const input: PackInput = {
        ...request,
        history: chat.history,
        compaction: {
          blocks: chat.blocks,
          cut: { blockTokens: sizes.blockTokens, summarisedUntil: (ordinal) => chat.summarisedUntil.get(ordinal) },
          summaryOf: (block) => chat.summaries.get(blockKey(block)) ?? null,
          merged: chat.merged,
          mergedBound: summaryBound(sizes.mergedMaxTokens),
          mergeInputTokens: sizes.mergeInputTokens,
          unavailable: request.compaction?.unavailable ?? new Set(),
          madeNow: request.compaction?.madeNow ?? new Set(),
          // Eager planning looks ahead: it does not move the turns' boundary.
          previousStart: request.fillFraction === undefined ? previous?.start ?? null : null,
          previousFirstSummary: request.fillFraction === undefined ? previous?.firstSummary ?? null : null,
          estimate: unmadeSummaryEstimate(chat.recent, sizes.summaryMaxTokens),
        },
      }
      let result = packContextOrOverflow(input)
      while (result.kind === 'needs-bodies') {
        const missing = chat.history.entries[result.before - 1]
        restoreBodies(chatId, chat, result.before)
        // The ledger no longer has the part (the chat is being deleted): nothing to pack from.
        if (missing && missing.body === null) throw new Error(`part ${missing.ordinal} of chat ${chatId} is no longer in the ledger`)
        result = packContextOrOverflow(input)
      }
      if (result.kind === 'too-large') return result
      const packed = result.value
      // Eager planning looks at less history than a turn does: what a turn did not reach goes.
      if (request.fillFraction === undefined) {
        releaseBodies(chat, packed.oldestVisited, request.rules.anchor_parts ?? 0)
        chat.previous = { start: packed.verbatimStart, firstSummary: packed.firstSummary, window, budget: request.budget }
      }
      const entries = chat.history.entries
      const needed = packed.needed.map(({ of, ...block }): BlockToSummarise =>
        of
          ? { ...block, kind: 'merge', of, maxTokens: sizes.mergedMaxTokens }
          : { ...block, kind: 'block', ordinals: entries.slice(block.start, block.end).map((e) => e.ordinal), maxTokens: sizes.summaryMaxTokens },
      )

      const newBytes = new Map(request.newParts.flatMap((p) => p.media.map((m) => [m.mediaId, m.bytes] as const)))
      const sent: string[] = []
      for (const part of packed.parts) {
        const content = part.content
        if (content === null || (content.type !== 'prompt' && content.type !== 'tool_result') || content.attachments.length === 0) continue
        for (const a of content.attachments) if (a.kind === 'file' && !newBytes.has(a.media.mediaId)) sent.push(a.media.mediaId)
      }
      const missing = sent.filter((id) => !chat.media.has(id))
      const read = store.parts.mediaBytes(missing)
      const media = new Map<string, Buffer>()
      for (const id of sent) media.set(id, chat.media.get(id) ?? read.get(id)!)
      const held = (m: Map<string, Buffer>) => [...m.values()].reduce((n, b) => n + b.length, 0)
      chat.bytes += held(media) - held(chat.media)
      chat.media = media
      const bytesOf = (id: string) => newBytes.get(id) ?? media.get(id)!
      return { kind: 'packed', turn: { ...packed, needed, warnings: result.warnings, bytesOf } }
    } finally {
      keep(chatId, chat)
    }
  }
}

export type ContextHistory = ReturnType<typeof createContextHistory>
