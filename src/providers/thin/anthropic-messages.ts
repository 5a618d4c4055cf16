import type { LanguageModelV4CallOptions, LanguageModelV4StreamPart } from '@ai-sdk/provider'
import { secureJsonParse } from '@ai-sdk/provider-utils'
import type { ThinConverter, ThinStep } from './thin-converter.ts'
import { isNum, isObject, isStr, nullishNum, nullishStr, type Json } from './json-guards.ts'

/**
 * Anthropic's Messages stream (POST /v1/messages, `stream: true`) straight to the AI SDK's stream
 * parts, as @ai-sdk/anthropic 4.0.105's AnthropicLanguageModel.doStream makes them for the same
 * events, without its per-event zod validation and web streams (issue 34, decision 050).
 *
 * It maps the events of a plain turn: message_start (the response's metadata and the input usage),
 * text, thinking, redacted_thinking and tool_use blocks with their text, thinking, signature and
 * input_json deltas, ping, message_delta (the stop reason and the final usage) and message_stop
 * (the finish), the raw chunks too when asked for them. Each is checked, cheaply, for the fields it
 * reads, no more loosely than the package's schema checks them. Anything else (an `error` event, a
 * malformed or unknown event, citations, server tools, a second message, containers, context
 * management, iterations) is not taken: the call is handed to the package (./thin-model.ts).
 */

/** The provider options this path knows the request and its stream for; any other falls back to the package. */
const COVERED_OPTIONS = new Set(['thinking', 'effort', 'sendReasoning', 'disableParallelToolUse'])

/**
 * Whether this path streams the call, decided before it is made: a prompt, function tools, a token
 * limit and the thinking options, as Parley's turns ask. Structured output (the package's JSON tool),
 * provider tools and other provider options go to the package whole.
 */
export function coversAnthropicMessages(options: LanguageModelV4CallOptions): boolean {
  if (options.responseFormat && options.responseFormat.type !== 'text') return false
  if (options.tools?.some((t) => t.type !== 'function')) return false
  const anthropic = options.providerOptions?.anthropic
  if (anthropic) for (const key of Object.keys(anthropic)) if (!COVERED_OPTIONS.has(key)) return false
  return true
}


function stopOf(reason: string | null | undefined): 'stop' | 'content-filter' | 'tool-calls' | 'length' | 'other' {
  switch (reason) {
    case 'pause_turn':
    case 'end_turn':
    case 'stop_sequence':
      return 'stop'
    case 'refusal':
      return 'content-filter'
    case 'tool_use':
      return 'tool-calls'
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length'
    default:
      return 'other'
  }
}

type Block = { type: 'text' } | { type: 'reasoning' } | { type: 'tool-call'; toolCallId: string; toolName: string; input: string }

type FinishPart = Extract<LanguageModelV4StreamPart, { type: 'finish' }>

/** A converter for one call's stream: events in, stream parts out. */
export function createAnthropicMessagesConverter(options: Pick<LanguageModelV4CallOptions, 'includeRawChunks'>): ThinConverter {
  const raw = options.includeRawChunks === true
  let finishReason: FinishPart['finishReason'] = { unified: 'other', raw: undefined }
  const usage = { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 }
  let rawUsage: Json | undefined
  let stopSequence: string | null = null
  let serviceTier: string | null = null
  let messageOpen = false
  let blockType: string | undefined
  const blocks: Record<number, Block | undefined> = {}
  // The package's second transform: a stream that ends after output without its finish gets an interrupted one.
  let hasOutput = false
  let lastFinish: FinishPart | undefined

  const parts: LanguageModelV4StreamPart[] = []
  const emit = (part: LanguageModelV4StreamPart) => {
    switch (part.type) {
      case 'response-metadata':
        hasOutput = false
        break
      case 'finish':
        hasOutput = false
        lastFinish = part
        break
      case 'text-delta':
      case 'reasoning-delta':
      case 'tool-input-delta':
        hasOutput ||= part.delta.length > 0
        break
      case 'tool-call':
        hasOutput = true
        break
    }
    parts.push(part)
  }
  const NOT_TAKEN: ThinStep = { parts: [], taken: false, output: false, accepted: false }
  const taken = (): ThinStep => {
    const out = parts.splice(0, parts.length)
    // The package's first look past stream-start skips raw chunks and pings: any other part is output.
    return { parts: out, taken: true, output: out.some((p) => p.type !== 'raw'), accepted: false }
  }

  const push = (data: string): ThinStep => {
    let e: unknown
    try {
      e = secureJsonParse(data)
    } catch {
      return NOT_TAKEN
    }
    if (!isObject(e)) return NOT_TAKEN
    const step = convert(e)
    if (!step) {
      parts.length = 0
      return NOT_TAKEN
    }
    return taken()
  }

  /** True once the event's parts are emitted; false for an event this path does not take (nothing emitted). */
  const convert = (e: Json): boolean => {
    const rawPart = raw ? ({ type: 'raw', rawValue: e } as const) : null
    switch (e.type) {
      case 'ping':
        if (rawPart) emit(rawPart)
        return true
      case 'message_start': {
        const m = e.message
        if (!isObject(m) || messageOpen) return false
        if (!nullishStr(m.id) || !nullishStr(m.model) || !nullishStr(m.role) || !nullishStr(m.service_tier) || !nullishStr(m.stop_reason)) return false
        const u = m.usage
        if (!isObject(u) || !isNum(u.input_tokens) || !nullishStr(u.service_tier) || !nullishNum(u.cache_creation_input_tokens) || !nullishNum(u.cache_read_input_tokens)) return false
        // Content on message_start, input transformations, containers: the package's to map.
        if (!(m.content == null || (Array.isArray(m.content) && m.content.length === 0)) || m.input_transformations != null || m.container != null) return false
        if (rawPart) emit(rawPart)
        serviceTier = (u.service_tier as string | null | undefined) ?? (m.service_tier as string | null | undefined) ?? null
        messageOpen = true
        usage.input_tokens = u.input_tokens
        usage.cache_read_input_tokens = (u.cache_read_input_tokens as number | null | undefined) ?? 0
        usage.cache_creation_input_tokens = (u.cache_creation_input_tokens as number | null | undefined) ?? 0
        rawUsage = { ...u }
        if (m.stop_reason != null) finishReason = { unified: stopOf(m.stop_reason as string), raw: m.stop_reason as string }
        emit({ type: 'response-metadata', id: (m.id as string | null | undefined) ?? undefined, modelId: (m.model as string | null | undefined) ?? undefined })
        emit({ type: 'custom', kind: 'anthropic.message_start', providerMetadata: { anthropic: { id: (m.id as string | null | undefined) ?? null, model: (m.model as string | null | undefined) ?? null, usage: rawUsage as never } } })
        return true
      }
      case 'content_block_start': {
        const b = e.content_block
        if (!isNum(e.index) || !isObject(b)) return false
        const index = String(e.index)
        switch (b.type) {
          case 'text':
            if (!isStr(b.text)) return false
            if (rawPart) emit(rawPart)
            blockType = 'text'
            blocks[e.index] = { type: 'text' }
            emit({ type: 'text-start', id: index })
            return true
          case 'thinking':
            if (!isStr(b.thinking)) return false
            if (rawPart) emit(rawPart)
            blockType = 'thinking'
            blocks[e.index] = { type: 'reasoning' }
            emit({ type: 'reasoning-start', id: index })
            return true
          case 'redacted_thinking':
            if (!isStr(b.data)) return false
            if (rawPart) emit(rawPart)
            blockType = 'redacted_thinking'
            blocks[e.index] = { type: 'reasoning' }
            emit({ type: 'reasoning-start', id: index, providerMetadata: { anthropic: { redactedData: b.data } } })
            return true
          case 'tool_use': {
            // A caller or a toolset is the package's to map.
            if (!isStr(b.id) || !isStr(b.name) || !(b.input === undefined || isObject(b.input)) || b.caller !== undefined || b.toolset_name != null) return false
            if (rawPart) emit(rawPart)
            blockType = 'tool_use'
            const input = b.input && Object.keys(b.input).length > 0 ? JSON.stringify(b.input) : ''
            blocks[e.index] = { type: 'tool-call', toolCallId: b.id, toolName: b.name, input }
            emit({ type: 'tool-input-start', id: b.id, toolName: b.name })
            return true
          }
          default:
            return false
        }
      }
      case 'content_block_delta': {
        const d = e.delta
        if (!isNum(e.index) || !isObject(d)) return false
        const index = String(e.index)
        switch (d.type) {
          case 'text_delta':
            if (!isStr(d.text)) return false
            if (rawPart) emit(rawPart)
            emit({ type: 'text-delta', id: index, delta: d.text })
            return true
          case 'thinking_delta':
            if (!isStr(d.thinking)) return false
            if (rawPart) emit(rawPart)
            emit({ type: 'reasoning-delta', id: index, delta: d.thinking })
            return true
          case 'signature_delta':
            if (!isStr(d.signature)) return false
            if (rawPart) emit(rawPart)
            if (blockType === 'thinking') emit({ type: 'reasoning-delta', id: index, delta: '', providerMetadata: { anthropic: { signature: d.signature } } })
            return true
          case 'input_json_delta': {
            if (!isStr(d.partial_json)) return false
            if (rawPart) emit(rawPart)
            const block = blocks[e.index]
            if (d.partial_json.length === 0 || block?.type !== 'tool-call') return true
            emit({ type: 'tool-input-delta', id: block.toolCallId, delta: d.partial_json })
            block.input += d.partial_json
            return true
          }
          default:
            return false
        }
      }
      case 'content_block_stop': {
        if (!isNum(e.index)) return false
        if (rawPart) emit(rawPart)
        const block = blocks[e.index]
        if (block) {
          switch (block.type) {
            case 'text':
              emit({ type: 'text-end', id: String(e.index) })
              break
            case 'reasoning':
              emit({ type: 'reasoning-end', id: String(e.index) })
              break
            case 'tool-call':
              emit({ type: 'tool-input-end', id: block.toolCallId })
              emit({ type: 'tool-call', toolCallId: block.toolCallId, toolName: block.toolName, input: block.input === '' ? '{}' : block.input, providerExecuted: undefined })
              break
          }
          delete blocks[e.index]
        }
        blockType = undefined
        return true
      }
      case 'message_delta': {
        const d = e.delta
        const u = e.usage
        if (!isObject(d) || !isObject(u)) return false
        if (!nullishStr(d.stop_reason) || !nullishStr(d.stop_sequence)) return false
        // Stop details, safeguard results, containers, iterations, context management: the package's to map.
        if (d.stop_details != null || d.safeguard_results != null || d.container != null) return false
        if (e.input_transformations != null || e.context_management != null) return false
        if (!isNum(u.output_tokens) || !nullishNum(u.input_tokens) || !nullishStr(u.service_tier) || !nullishNum(u.cache_creation_input_tokens) || !nullishNum(u.cache_read_input_tokens)) return false
        if (u.output_tokens_details != null || u.iterations != null) return false
        if (rawPart) emit(rawPart)
        if (u.input_tokens != null && usage.input_tokens !== u.input_tokens) usage.input_tokens = u.input_tokens
        usage.output_tokens = u.output_tokens
        if (u.cache_read_input_tokens != null) usage.cache_read_input_tokens = u.cache_read_input_tokens
        if (u.cache_creation_input_tokens != null) usage.cache_creation_input_tokens = u.cache_creation_input_tokens
        finishReason = { unified: stopOf(d.stop_reason as string | null | undefined), raw: (d.stop_reason as string | null | undefined) ?? undefined }
        stopSequence = (d.stop_sequence as string | null | undefined) ?? null
        serviceTier = (u.service_tier as string | null | undefined) ?? serviceTier
        rawUsage = { ...rawUsage, ...u }
        return true
      }
      case 'message_stop': {
        if (rawPart) emit(rawPart)
        messageOpen = false
        const metadata = {
          usage: (rawUsage ?? null) as never,
          stopSequence,
          ...(serviceTier != null ? { serviceTier } : {}),
          iterations: null,
          container: null,
          contextManagement: null,
        }
        const cacheCreation = usage.cache_creation_input_tokens ?? 0
        const cacheRead = usage.cache_read_input_tokens ?? 0
        emit({
          type: 'finish',
          finishReason,
          usage: {
            inputTokens: { total: usage.input_tokens + cacheCreation + cacheRead, noCache: usage.input_tokens, cacheRead, cacheWrite: cacheCreation },
            outputTokens: { total: usage.output_tokens, text: undefined, reasoning: undefined },
            raw: (rawUsage ?? usage) as never,
          },
          providerMetadata: { anthropic: metadata },
        })
        return true
      }
      default:
        // error, and any event type the package's schema does not take: the package's.
        return false
    }
  }

  const end = (): LanguageModelV4StreamPart[] =>
    hasOutput
      ? [
          {
            type: 'finish',
            finishReason: { unified: 'interrupted', raw: undefined },
            usage: lastFinish?.usage ?? {
              inputTokens: { total: undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
              outputTokens: { total: undefined, text: undefined, reasoning: undefined },
            },
            ...(lastFinish?.providerMetadata != null ? { providerMetadata: lastFinish.providerMetadata } : {}),
          },
        ]
      : []

  return { push, end }
}
