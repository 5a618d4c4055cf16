import type { LanguageModelV4StreamPart, SharedV4ProviderMetadata } from '@ai-sdk/provider'
import type { PartBody, VendorReplay } from '../../domain/parts.ts'
import type { Usage } from '../../domain/pricing/usage.ts'
import type { TranslationWarning } from '../../domain/turns/coerce-reasoning-effort.ts'
import { readFinish } from '../../providers/read-finish.ts'
import { storesReplay, vendorWarning, type ReplayKind } from '../../providers/vendor-fidelity.ts'
import { describeVendorError } from '../../providers/describe-vendor-error.ts'
import { mergeReportedUsage, readReportedUsage, type ReportedUsage } from '../../providers/reported-usage.ts'
import { mapStopReason } from '../map-stop-reason.ts'
import type { StopReason } from '../../domain/runs/run-outcome.ts'

/**
 * The pure half of a run's stream (issue 12): the provider's stream parts in, what to do about each
 * out. It lives beside streamRun (../stream-run.ts, every run's streaming step), not in src/domain,
 * because it reads the AI SDK's stream parts (@ai-sdk/provider) and the vendor packages' finish
 * quirks (src/providers/read-finish.ts); it does no I/O, so it is tested from recorded part
 * sequences without a ledger or a clock.
 *
 * The wire carries one block at a time, but a provider may overlap its blocks (DeepSeek starts its
 * text before it ends its reasoning; parallel tool calls). Blocks go out in the order they started:
 * each waits, gathering its deltas, until the blocks before it have stopped, and is announced with
 * its first text. A closed block is persisted before its `block_stop` (the effects say so in order:
 * the I/O loop awaits the write before it sends the frame that follows).
 */

export type BlockKind = 'text' | 'refusal' | 'reasoning' | 'tool_call'

export type Block = {
  readonly kind: BlockKind
  readonly id: string
  readonly text: string
  /** tool_call blocks: the tool called. */
  readonly toolName?: string
  /**
   * The vendor's replay data (a thinking signature, encrypted reasoning, Gemini's thought signature
   * on a call or a text), merged from the providerMetadata of the block's parts (decision 026).
   */
  readonly metadata?: Record<string, Record<string, unknown>>
  /** The provider ended it; it waits on the wire for the blocks before it. */
  readonly ended: boolean
}

export type RunStreamState = {
  /** The catalogue provider: replay data is stored with the vendor that made it (decisions 017 and 026). */
  readonly provider: string
  /** Blocks not yet stopped on the wire, in the order they started; the head is the one on the wire. */
  readonly wire: readonly Block[]
  /** Whether the head of the wire has had its `block_start`. */
  readonly headAnnounced: boolean
  /** Every delta's text so far: the output estimate when usage is lost. */
  readonly emitted: string
  readonly providerResponseId: string | null
  readonly modelServed: string | null
  /** The provider's usage, null until (unless) it reports some. */
  readonly usage: Usage | null
  /**
   * The counts the vendor reported before its final usage (Anthropic's message_start, from the raw
   * chunks): what a stream cut before its finish is billed for, where it has them (issue 22).
   */
  readonly reportedUsage: ReportedUsage | null
  readonly stopReason: StopReason | null
  /** Whether the provider said how the answer ended: a stream that just stops may have been cut off. */
  readonly finished: boolean
  /** Set by an `error` part: the run failed and the stream is to be read no further. */
  readonly failure: { code: 'upstream_error'; message: string } | null
}

export type Effect =
  | { type: 'frame'; event: string; data: unknown }
  /** A closed block for the ledger; awaited before any later effect. */
  | { type: 'persist'; body: PartBody }
  /** The vendor package's warnings, for the run's manifest (not awaited). */
  | { type: 'record_warnings'; warnings: TranslationWarning[] }

export type Step = { state: RunStreamState; effects: Effect[] }

export function initialRunStream(provider: string): RunStreamState {
  return {
    provider,
    wire: [],
    headAnnounced: false,
    emitted: '',
    providerResponseId: null,
    modelServed: null,
    usage: null,
    reportedUsage: null,
    stopReason: null,
    finished: false,
    failure: null,
  }
}

/** One stream part: the state after it and what to do, in order. */
export function step(state: RunStreamState, part: LanguageModelV4StreamPart): Step {
  switch (part.type) {
    case 'stream-start': {
      // The vendor package's own warnings about the request, before any content (decision 017).
      if (part.warnings.length === 0) return { state, effects: [] }
      const warnings = part.warnings.map((w) => vendorWarning(state.provider, w))
      return { state, effects: [{ type: 'frame', event: 'translation_warnings', data: { warnings } }, { type: 'record_warnings', warnings }] }
    }
    case 'response-metadata':
      return {
        state: { ...state, providerResponseId: part.id ?? state.providerResponseId, modelServed: part.modelId ?? state.modelServed },
        effects: [],
      }
    case 'text-start': {
      // The sandbox marks a refusal on its text-start: Parley's own marker, not replay data.
      const refusal = (part.providerMetadata?.sandbox as { refusal?: boolean } | undefined)?.refusal === true
      return start(state, { kind: refusal ? 'refusal' : 'text', id: part.id, text: '', ended: false, ...(refusal ? {} : metadataOf(part.providerMetadata)) })
    }
    case 'reasoning-start':
      return start(state, { kind: 'reasoning', id: part.id, text: '', ended: false, ...metadataOf(part.providerMetadata) })
    case 'tool-input-start':
      return start(state, { kind: 'tool_call', id: part.id, toolName: part.toolName, text: '', ended: false, ...metadataOf(part.providerMetadata) })
    case 'text-delta':
    case 'tool-input-delta':
    case 'reasoning-delta':
      // Signatures may come with a delta that has no text (Anthropic's thinking signature, Gemini's on a text).
      return delta(keepMetadata(state, part.id, part.providerMetadata), part.id, part.delta)
    case 'text-end':
    case 'reasoning-end': {
      const kept = keepMetadata(state, part.id, part.providerMetadata)
      return openBlock(kept, part.id) ? end(kept, part.id) : { state: kept, effects: [] }
    }
    case 'tool-call': {
      // The call's final arguments; some providers send only this, without input deltas. Its
      // providerMetadata holds the call's replay data (Gemini's thoughtSignature).
      const started = openBlock(state, part.toolCallId)
        ? { state: keepMetadata(state, part.toolCallId, part.providerMetadata), effects: [] }
        : start(state, { kind: 'tool_call', id: part.toolCallId, toolName: part.toolName, text: '', ended: false, ...metadataOf(part.providerMetadata) })
      const block = openBlock(started.state, part.toolCallId)!
      const filled =
        block.text === ''
          ? delta(started.state, part.toolCallId, part.input)
          : { state: update(started.state, part.toolCallId, (b) => ({ ...b, text: part.input })), effects: [] }
      const ended = end(filled.state, part.toolCallId)
      return { state: ended.state, effects: [...started.effects, ...filled.effects, ...ended.effects] }
    }
    case 'finish': {
      const finish = readFinish(part)
      return {
        state: {
          ...state,
          finished: finish.saysHowItEnded,
          stopReason: finish.saysHowItEnded ? mapStopReason(part.finishReason) : state.stopReason,
          usage: finish.usageReported ? usageFrom(part.usage) : state.usage,
        },
        effects: [],
      }
    }
    case 'raw': {
      // Only the providers whose usage is read from raw chunks are asked for them (streamRun).
      const reading = readReportedUsage(state.provider, part.rawValue)
      const next = reading.value === null ? state : { ...state, reportedUsage: mergeReportedUsage(state.reportedUsage, reading.value) }
      // Into the manifest only: a frame after content would break the stream's grammar.
      return { state: next, effects: reading.warnings.length > 0 ? [{ type: 'record_warnings', warnings: reading.warnings }] : [] }
    }
    case 'error':
      // docs/guide/errors.md has one code for a provider that failed: the SSE error carries it too.
      return { state: { ...state, failure: { code: 'upstream_error', message: `the provider failed mid-stream: ${describeVendorError(part.error)}` } }, effects: [] }
    default:
      return { state, effects: [] }
  }
}

/**
 * The stream ended (however it ended): whatever was open is kept, since the customer saw it
 * streamed or it was waiting its turn; a block with nothing in it was never announced and is dropped.
 */
export function endOfStream(state: RunStreamState): Step {
  const wire = state.wire.filter((b) => b.ended || b.text !== '').map((b) => (b.ended ? b : { ...b, ended: true }))
  // A dropped block was never announced: an announced head stays the head.
  return drain({ ...state, wire })
}

function openBlock(state: RunStreamState, id: string): Block | undefined {
  for (let i = state.wire.length - 1; i >= 0; i--) if (state.wire[i]!.id === id && !state.wire[i]!.ended) return state.wire[i]
  return undefined
}

function update(state: RunStreamState, id: string, change: (block: Block) => Block): RunStreamState {
  const target = openBlock(state, id)
  return { ...state, wire: state.wire.map((b) => (b === target ? change(b) : b)) }
}

function start(state: RunStreamState, block: Block): Step {
  return { state: { ...state, wire: [...state.wire, block] }, effects: [] }
}

function delta(state: RunStreamState, id: string, text: string): Step {
  const block = openBlock(state, id)
  if (!block || text === '') return { state, effects: [] }
  const grown = { ...block, text: block.text + text }
  const next = { ...state, emitted: state.emitted + text, wire: state.wire.map((b) => (b === block ? grown : b)) }
  if (block !== state.wire[0]) return { state: next, effects: [] }
  if (state.headAnnounced) return { state: next, effects: [{ type: 'frame', event: 'delta', data: { kind: deltaKind(block), text } }] }
  return { state: { ...next, headAnnounced: true }, effects: announce(grown) }
}

function end(state: RunStreamState, id: string): Step {
  return drain(update(state, id, (b) => ({ ...b, ended: true })))
}

/** Stops the ended blocks at the head of the wire, in order, then announces the next one if it has text. */
function drain(state: RunStreamState): Step {
  const effects: Effect[] = []
  const wire = [...state.wire]
  let headAnnounced = state.headAnnounced
  while (wire[0]?.ended) {
    const block = wire.shift()!
    if (!headAnnounced) effects.push(...announce(block))
    effects.push({ type: 'persist', body: bodyOf(block, state.provider) }, { type: 'frame', event: 'block_stop', data: {} })
    headAnnounced = false
  }
  if (wire[0] && !headAnnounced && wire[0].text !== '') {
    effects.push(...announce(wire[0]))
    headAnnounced = true
  }
  return { state: { ...state, wire, headAnnounced }, effects }
}

function announce(block: Block): Effect[] {
  const start: Effect = {
    type: 'frame',
    event: 'block_start',
    data: block.kind === 'tool_call' ? { kind: 'tool_call', tool_name: block.toolName, tool_use_id: block.id } : { kind: block.kind },
  }
  return block.text === '' ? [start] : [start, { type: 'frame', event: 'delta', data: { kind: deltaKind(block), text: block.text } }]
}

const deltaKind = (block: Block) => (block.kind === 'tool_call' ? 'tool_input' : block.kind)

function bodyOf(block: Block, provider: string): PartBody {
  switch (block.kind) {
    case 'text':
      return { type: 'message', text: block.text, ...replayOf(block, provider, 'message') }
    case 'refusal':
      return { type: 'message', text: '', refusal: block.text }
    case 'reasoning':
      // Replay data is stored with the part, with the vendor that made it (decision 017): on
      // reasoning for every vendor that emits any, on calls and texts for the vendors it goes back to.
      return { type: 'reasoning', text: block.text, ...replayOf(block, provider, 'reasoning') }
    case 'tool_call':
      return { type: 'tool_call', arguments: block.text, tool_name: block.toolName!, tool_use_id: block.id, ...replayOf(block, provider, 'tool_call') }
    default: {
      const unknown: never = block.kind
      throw new Error(`unknown block ${String(unknown)}`)
    }
  }
}

/** A stored part's `replay` field: the block's metadata when it has some this vendor's parts keep (decision 026). */
function replayOf(block: Block, provider: string, kind: ReplayKind): { replay?: VendorReplay } {
  if (!block.metadata || Object.keys(block.metadata).length === 0 || !storesReplay(provider, kind)) return {}
  return { replay: { provider, metadata: block.metadata } }
}

/** A starting block's metadata field, from its first part's providerMetadata. */
const metadataOf = (metadata: SharedV4ProviderMetadata | undefined): Pick<Block, 'metadata'> => (metadata ? { metadata: mergeMetadata(undefined, metadata) } : {})

function keepMetadata(state: RunStreamState, id: string, metadata: SharedV4ProviderMetadata | undefined): RunStreamState {
  const block = openBlock(state, id)
  // A refusal keeps no replay data: its block was marked by the sandbox, not signed by a vendor.
  if (!metadata || !block || block.kind === 'refusal') return state
  return update(state, id, (b) => ({ ...b, metadata: mergeMetadata(b.metadata, metadata) }))
}

export function usageFrom(u: { inputTokens: { total?: number; noCache?: number; cacheRead?: number; cacheWrite?: number }; outputTokens: { total?: number; reasoning?: number } }): Usage {
  const cacheRead = u.inputTokens.cacheRead ?? 0
  const cacheWrite = u.inputTokens.cacheWrite ?? 0
  return {
    input_tokens: u.inputTokens.noCache ?? Math.max(0, (u.inputTokens.total ?? 0) - cacheRead - cacheWrite),
    output_tokens: u.outputTokens.total ?? 0,
    reasoning_tokens: u.outputTokens.reasoning ?? 0,
    cache_read_tokens: cacheRead,
    cache_write_tokens: cacheWrite,
  }
}

/** A block's provider metadata so far, with a later part's merged in, vendor by vendor. */
export function mergeMetadata(
  into: Record<string, Record<string, unknown>> | undefined,
  metadata: SharedV4ProviderMetadata,
): Record<string, Record<string, unknown>> {
  const merged: Record<string, Record<string, unknown>> = { ...into }
  for (const [vendor, values] of Object.entries(metadata)) {
    if (values === null || typeof values !== 'object') continue
    merged[vendor] = { ...merged[vendor], ...values }
  }
  return merged
}
