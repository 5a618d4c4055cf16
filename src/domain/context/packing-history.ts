import type { PartBody, PartKind } from '../parts.ts'
import type { MediaRef, PackedPart, RenderedPart } from './context-types.ts'
import type { ImageRule } from './image-tokens.ts'

/** A rendering of one part under one set of choices, kept for the next turn. */
export type Rendering = {
  content: RenderedPart | null
  tokens: number
  truncated: boolean
  /** Attachments sent as files, and those replaced because the model cannot take them. */
  files: number
  refused: number
  /** What the part weighs in a vendor request (src/domain/context/request-bytes.ts): bounded against the vendor's request limit. */
  bytes: number
  /** The packed part as history sends it, made once (its ordinal and treatment do not change). */
  packed?: PackedPart
}

/** What packing keeps on an entry for one retention document, one media policy and one image rule. */
export type EntryCache = {
  rules: object
  media: object
  /** The image token rule of the model's vendor: renderings count images by it. */
  images: ImageRule
  /** Each attachment's `retain` threshold, and why the model cannot take it (null: it can). */
  retain: number[]
  refusals: (string | null)[]
  /** Renderings by choice code (src/domain/context/pack-context.ts). */
  byCode: Map<number, Rendering>
}

/** A packable part as the chat keeps it between turns. */
export type HistoryEntry = {
  ordinal: number
  kind: PartKind
  runId: string | null
  /** The call a tool_call makes or a tool_result answers. */
  toolUseId: string | null
  /** Its estimate sent whole (docs/guide/context.md): what recency counts. */
  tokens: number
  media: readonly MediaRef[]
  /** Null once the part is far behind what packing sends; the keeper reads it again when asked. */
  body: PartBody | null
  /** The stored body's length in characters: what holding the body costs, for the keeper's bound. */
  bodyLength?: number
  /** Renderings and per-attachment choices, valid for the rules and media policy they were made under. */
  renders: EntryCache | null
}

/**
 * A chat's packable parts, oldest first, with what packing needs to decide a turn without reading
 * them all: running sums of their estimates (recency by binary search) and where a kept range may
 * begin (docs/guide/context.md: never between a tool call and its result, nor a reasoning part and the call
 * it led to). Appending costs the new part; nothing here grows with the turn count but the lists.
 */
export class PackingHistory {
  readonly entries: HistoryEntry[] = []
  /** prefix[i] = the estimates of entries before i. */
  readonly prefix: number[] = [0]
  /** canStart[i]: a kept range may begin at entry i. */
  readonly canStart: boolean[] = []
  private readonly callAt = new Map<string, number>()
  private readonly firstOfRun = new Map<string, number>()

  get length(): number {
    return this.entries.length
  }

  /** Whether a call with this id is in the history (a result without one is not packable). */
  hasCall(toolUseId: string): boolean {
    return this.callAt.has(toolUseId)
  }

  /** The first entry of a run, or -1. */
  firstIndexOfRun(runId: string): number {
    return this.firstOfRun.get(runId) ?? -1
  }

  append(entry: HistoryEntry): void {
    const i = this.entries.length
    this.entries.push(entry)
    this.prefix.push(this.prefix[i]! + entry.tokens)
    this.canStart.push(true)
    if (entry.runId !== null && !this.firstOfRun.has(entry.runId)) this.firstOfRun.set(entry.runId, i)
    if (entry.kind === 'tool_call' && entry.toolUseId !== null) {
      this.callAt.set(entry.toolUseId, i)
      // The reasoning that led to this call: the run's reasoning and messages just before it.
      let leadingReasoning = -1
      for (let j = i - 1; j >= 0; j--) {
        const before = this.entries[j]!
        if (before.runId !== entry.runId || (before.kind !== 'reasoning' && before.kind !== 'message' && before.kind !== 'tool_call')) break
        if (before.kind === 'reasoning') leadingReasoning = j
      }
      if (leadingReasoning !== -1) this.joinFrom(leadingReasoning, i)
    }
    if (entry.kind === 'tool_result' && entry.toolUseId !== null) {
      const call = this.callAt.get(entry.toolUseId)
      if (call !== undefined) this.joinFrom(call, i)
    }
  }

  /** Drops entries from `index` on (a run that failed after its output was kept); returns them. */
  truncate(index: number): HistoryEntry[] {
    const removed = this.entries.splice(index)
    this.prefix.length = index + 1
    this.canStart.length = index
    for (const entry of removed) {
      if (entry.kind === 'tool_call' && entry.toolUseId !== null) this.callAt.delete(entry.toolUseId)
      if (entry.runId !== null && this.firstOfRun.get(entry.runId)! >= index) this.firstOfRun.delete(entry.runId)
    }
    // A removed result may have joined entries before `index`: their boundaries are worked out again.
    let from = index
    while (from > 0 && !this.canStart[from - 1]) from--
    if (from > 0) from--
    const again = this.entries.splice(from)
    this.prefix.length = from + 1
    this.canStart.length = from
    for (const entry of again) if (entry.kind === 'tool_call' && entry.toolUseId !== null) this.callAt.delete(entry.toolUseId)
    for (const entry of again) this.append(entry)
    return removed
  }

  /** Entries a+1..b can no longer begin a kept range: a..b are packed together or not at all. */
  private joinFrom(a: number, b: number): void {
    for (let k = b; k > a; k--) this.canStart[k] = false
  }
}
