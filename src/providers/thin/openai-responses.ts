import type { LanguageModelV4CallOptions, LanguageModelV4StreamPart } from '@ai-sdk/provider'
import { secureJsonParse } from '@ai-sdk/provider-utils'
import type { ThinConverter, ThinStep } from './thin-converter.ts'
import { isNum, isObject, isStr, nullishNum, nullishStr, type Json } from './json-guards.ts'

/**
 * OpenAI's Responses stream (POST /v1/responses, `stream: true`) straight to the AI SDK's stream
 * parts, as @ai-sdk/openai 4.0.118's OpenAIResponsesLanguageModel.doStream makes them for the same
 * events, without its per-event zod validation and web streams (issue 34, decision 050).
 *
 * It maps the events of a plain turn: the response's metadata, message, reasoning and function_call
 * items with their deltas, reasoning summaries, refusals, and the finish with its usage. Each is
 * checked, cheaply, for the fields it reads, no more loosely than the package's schema checks them.
 * Events the package does not model are skipped, as the package skips them. Anything else it does
 * not take: an `error` event, `response.failed`, an event failing a check, malformed JSON, an item
 * or event the package models that this path does not map (annotations, hosted tools' items, the
 * undeclared `parallel` wrapper). The call then hands the whole stream to the package
 * (./thin-model.ts), so every unusual stream ends exactly as the package ends it.
 */

/** The package's modelled event types (openaiResponsesModeledChunkTypes in @ai-sdk/openai); any other is skipped. */
const MODELLED_EVENTS = new Set([
  'error',
  'response.apply_patch_call_operation_diff.delta',
  'response.apply_patch_call_operation_diff.done',
  'response.code_interpreter_call_code.delta',
  'response.code_interpreter_call_code.done',
  'response.completed',
  'response.created',
  'response.custom_tool_call_input.delta',
  'response.failed',
  'response.function_call_arguments.delta',
  'response.function_call_arguments.done',
  'response.image_generation_call.partial_image',
  'response.in_progress',
  'response.incomplete',
  'response.output_item.added',
  'response.output_item.done',
  'response.output_text.annotation.added',
  'response.output_text.delta',
  'response.refusal.delta',
  'response.refusal.done',
  'response.reasoning_summary_part.added',
  'response.reasoning_summary_part.done',
  'response.reasoning_summary_text.delta',
])

/** The package's modelled output item types (openaiResponsesModeledOutputItemTypes); an item of any other type is skipped. */
const MODELLED_ITEMS = new Set([
  'apply_patch_call',
  'code_interpreter_call',
  'compaction',
  'computer_call',
  'custom_tool_call',
  'file_search_call',
  'function_call',
  'image_generation_call',
  'local_shell_call',
  'mcp_approval_request',
  'mcp_call',
  'mcp_list_tools',
  'message',
  'program',
  'program_output',
  'reasoning',
  'shell_call',
  'shell_call_output',
  'tool_search_call',
  'tool_search_output',
  'web_search_call',
])

/** The package's name for its internal parallel-call wrapper, expanded by the package only. */
const PARALLEL_WRAPPER = 'parallel'

/** The provider options this path knows the request and its stream for; any other falls back to the package. */
const COVERED_OPTIONS = new Set(['reasoningEffort', 'reasoningSummary', 'promptCacheKey', 'store', 'parallelToolCalls', 'user'])

/**
 * Whether this path streams the call, decided before it is made. It does what Parley's turns ask:
 * a prompt, function tools, a token limit and the reasoning options. Anything whose stream carries
 * events it does not map (hosted tools, structured output, logprobs, raw chunks, reasoning
 * summaries) goes to the package whole.
 */
export function coversOpenAIResponses(options: LanguageModelV4CallOptions): boolean {
  if (options.includeRawChunks) return false
  if (options.responseFormat && options.responseFormat.type !== 'text') return false
  if (options.tools?.some((t) => t.type !== 'function' || t.name === PARALLEL_WRAPPER)) return false
  const openai = options.providerOptions?.openai
  if (openai) {
    for (const key of Object.keys(openai)) if (!COVERED_OPTIONS.has(key)) return false
    // A summary asked for streams reasoning_summary events; mapped, but kept to the package until a recorded stream tests it.
    if (openai.reasoningSummary != null) return false
  }
  return true
}

const nullishIndex = nullishNum

/** The usage object as the package's schema takes it (input and output counts, numeric details). */
function isUsage(u: unknown): u is Json {
  if (!isObject(u) || !isNum(u.input_tokens) || !isNum(u.output_tokens)) return false
  if (u.total_tokens !== undefined && !isNum(u.total_tokens)) return false
  const input = u.input_tokens_details
  if (input != null) {
    if (!isObject(input)) return false
    for (const k of ['cached_tokens', 'cache_write_tokens', 'orchestration_input_tokens', 'orchestration_input_cached_tokens']) if (!nullishNum(input[k])) return false
    const ttl = input.cache_write_tokens_details
    if (ttl != null && (!isObject(ttl) || !nullishNum(ttl.ttl_30m_tokens) || !nullishNum(ttl.ttl_12h_tokens))) return false
  }
  const output = u.output_tokens_details
  if (output != null && (!isObject(output) || !nullishNum(output.reasoning_tokens) || !nullishNum(output.orchestration_output_tokens))) return false
  return true
}

const isResponseHead = (r: unknown): r is Json => isObject(r) && isStr(r.id) && isNum(r.created_at) && isStr(r.model) && nullishStr(r.service_tier)

const PHASES = new Set(['commentary', 'final_answer'])
const STATUSES = new Set(['in_progress', 'completed', 'incomplete'])

/** A message, reasoning or function_call item as the package's schema takes it; null for an item this path does not map. */
function itemKind(item: Json, done: boolean): 'message' | 'reasoning' | 'function_call' | null {
  switch (item.type) {
    case 'message':
      return isStr(item.id) && (item.phase == null || PHASES.has(item.phase as string)) ? 'message' : null
    case 'reasoning':
      return isStr(item.id) && nullishStr(item.encrypted_content) ? 'reasoning' : null
    case 'function_call':
      return isStr(item.id) &&
        isStr(item.call_id) &&
        isStr(item.name) &&
        item.name !== PARALLEL_WRAPPER &&
        isStr(item.arguments) &&
        (item.async == null || typeof item.async === 'boolean') &&
        nullishStr(item.namespace) &&
        // A caller (programmatic tool calling) is the package's to map.
        item.caller == null &&
        (!done || STATUSES.has(item.status as string))
        ? 'function_call'
        : null
    default:
      return null
  }
}

type Finish = { unified: 'stop' | 'length' | 'content-filter' | 'tool-calls' | 'error' | 'other' | 'interrupted'; raw: string | undefined }

function finishOf(reason: string | null | undefined, hasFunctionCall: boolean, hasRefusal: boolean): Finish['unified'] {
  switch (reason) {
    case undefined:
    case null:
      if (hasFunctionCall) return 'tool-calls'
      return hasRefusal ? 'content-filter' : 'stop'
    case 'max_output_tokens':
      return 'length'
    case 'content_filter':
      return 'content-filter'
    default:
      return hasFunctionCall ? 'tool-calls' : 'other'
  }
}

function usageOf(usage: Json | undefined) {
  if (usage == null)
    return {
      inputTokens: { total: undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
      outputTokens: { total: undefined, text: undefined, reasoning: undefined },
      raw: undefined,
    }
  const input = usage.input_tokens as number
  const output = usage.output_tokens as number
  const details = usage.input_tokens_details as Json | null | undefined
  const cached = (details?.cached_tokens as number | null | undefined) ?? 0
  const cacheWrite = (details?.cache_write_tokens as number | null | undefined) ?? undefined
  const reasoning = ((usage.output_tokens_details as Json | null | undefined)?.reasoning_tokens as number | null | undefined) ?? 0
  return {
    inputTokens: { total: input, noCache: input - cached - (cacheWrite ?? 0), cacheRead: cached, cacheWrite },
    outputTokens: { total: output, text: output - reasoning, reasoning },
    raw: usage,
  }
}

/** The per-call facts the package's mapping reads: whether the response is stored (reasoning summaries end differently). */
export type OpenAIResponsesCall = { store: boolean }

export function openaiResponsesCall(options: LanguageModelV4CallOptions): OpenAIResponsesCall {
  return { store: (options.providerOptions?.openai as { store?: boolean } | undefined)?.store ?? true }
}

const TAKEN: ThinStep = { parts: [], taken: true, output: false, accepted: false }
const NOT_TAKEN: ThinStep = { parts: [], taken: false, output: false, accepted: false }

/** A converter for one call's stream: events in, stream parts out. */
export function createOpenAIResponsesConverter(call: OpenAIResponsesCall): ThinConverter {
  let finish: Finish = { unified: 'interrupted', raw: undefined }
  let usage: Json | undefined
  let responseId: string | null = null
  let serviceTier: string | undefined
  let reasoningContext: string | undefined
  let hasFunctionCall = false
  let hasRefusal = false
  let activePhase: string | undefined
  const activeItems: Record<number, string | undefined> = {}
  const toolCalls: Record<number, { toolCallId: string; async: boolean | null | undefined } | undefined> = {}
  const reasoning: Record<string, { encryptedContent: string | null | undefined; summaryParts: Record<number, 'active' | 'can-conclude' | 'concluded'> }> = {}
  const itemIdOf = (itemId: string, outputIndex: unknown) => (outputIndex == null ? itemId : (activeItems[outputIndex as number] ?? itemId))
  const out = (parts: LanguageModelV4StreamPart[], output = true): ThinStep => ({ parts, taken: true, output, accepted: false })

  const push = (data: string): ThinStep => {
    let e: unknown
    try {
      e = secureJsonParse(data)
    } catch {
      return NOT_TAKEN
    }
    if (!isObject(e) || !isStr(e.type)) return NOT_TAKEN
    const type = e.type
    if (!MODELLED_EVENTS.has(type)) return TAKEN // the package's unknown_chunk: skipped, and not output
    switch (type) {
      case 'response.created': {
        const r = e.response
        if (!isResponseHead(r)) return NOT_TAKEN
        responseId = r.id as string
        return out([{ type: 'response-metadata', id: r.id as string, timestamp: new Date((r.created_at as number) * 1000), modelId: r.model as string }], false)
      }
      case 'response.in_progress':
        return isResponseHead(e.response) ? { parts: [], taken: true, output: false, accepted: true } : NOT_TAKEN
      case 'response.output_item.added':
      case 'response.output_item.done': {
        if (!isNum(e.output_index)) return NOT_TAKEN
        const item = e.item
        if (!isObject(item)) return NOT_TAKEN
        // An item type the package does not model is its unknown_chunk: skipped, and not output.
        if (isStr(item.type) && !MODELLED_ITEMS.has(item.type)) return TAKEN
        const kind = itemKind(item, type === 'response.output_item.done')
        if (kind === null) return NOT_TAKEN
        const index = e.output_index
        const id = item.id as string
        if (type === 'response.output_item.added') {
          switch (kind) {
            case 'function_call':
              toolCalls[index] = { toolCallId: item.call_id as string, async: item.async as boolean | null | undefined }
              return out([{ type: 'tool-input-start', id: item.call_id as string, toolName: item.name as string }])
            case 'message':
              activeItems[index] = id
              activePhase = (item.phase as string | null | undefined) ?? undefined
              return out([{ type: 'text-start', id, providerMetadata: { openai: { itemId: id, ...(item.phase != null && { phase: item.phase as string }) } } }])
            case 'reasoning':
              activeItems[index] = id
              reasoning[id] = { encryptedContent: item.encrypted_content as string | null | undefined, summaryParts: { 0: 'active' } }
              return out([{ type: 'reasoning-start', id: `${id}:0`, providerMetadata: { openai: { itemId: id, reasoningEncryptedContent: (item.encrypted_content as string | null | undefined) ?? null } } }])
          }
        }
        switch (kind) {
          case 'message': {
            const itemId = itemIdOf(id, index)
            const phase = (item.phase as string | null | undefined) ?? activePhase
            activePhase = undefined
            activeItems[index] = undefined
            return out([{ type: 'text-end', id: itemId, providerMetadata: { openai: { itemId, ...(phase != null && { phase }) } } }])
          }
          case 'function_call': {
            const ongoing = toolCalls[index]
            toolCalls[index] = undefined
            hasFunctionCall = true
            const namespace = item.namespace as string | null | undefined
            const async = item.async != null ? { async: item.async as boolean } : ongoing?.async != null ? { async: ongoing.async } : {}
            return out([
              { type: 'tool-input-end', id: item.call_id as string, ...(namespace != null && { providerMetadata: { openai: { namespace } } }) },
              {
                type: 'tool-call',
                toolCallId: item.call_id as string,
                toolName: item.name as string,
                input: item.arguments as string,
                providerMetadata: { openai: { itemId: id, ...async, ...(namespace != null && { namespace }) } },
              },
            ])
          }
          case 'reasoning': {
            const itemId = itemIdOf(id, index)
            const active = reasoning[itemId]
            const parts: LanguageModelV4StreamPart[] = []
            if (active) {
              for (const [summaryIndex, status] of Object.entries(active.summaryParts))
                if (status === 'active' || status === 'can-conclude')
                  parts.push({
                    type: 'reasoning-end',
                    id: `${itemId}:${summaryIndex}`,
                    providerMetadata: { openai: { itemId, reasoningEncryptedContent: (item.encrypted_content as string | null | undefined) ?? null } },
                  })
              delete reasoning[itemId]
            }
            activeItems[index] = undefined
            return out(parts)
          }
        }
        return NOT_TAKEN
      }
      case 'response.output_text.delta':
        // Log probabilities are the package's to map (they are never asked for on this path).
        if (!isStr(e.item_id) || !nullishIndex(e.output_index) || !isStr(e.delta) || !(e.logprobs == null || (Array.isArray(e.logprobs) && e.logprobs.length === 0))) return NOT_TAKEN
        return out([{ type: 'text-delta', id: itemIdOf(e.item_id, e.output_index), delta: e.delta }])
      case 'response.refusal.delta':
        if (!isStr(e.item_id) || !nullishIndex(e.output_index) || !nullishNum(e.content_index) || !isStr(e.delta)) return NOT_TAKEN
        hasRefusal = true
        return out([{ type: 'text-delta', id: itemIdOf(e.item_id, e.output_index), delta: e.delta }])
      case 'response.refusal.done':
        if (!isStr(e.item_id) || !nullishIndex(e.output_index) || !nullishNum(e.content_index) || !isStr(e.refusal)) return NOT_TAKEN
        hasRefusal = true
        return out([])
      case 'response.function_call_arguments.delta': {
        if (!isStr(e.item_id) || !isNum(e.output_index) || !isStr(e.delta)) return NOT_TAKEN
        const ongoing = toolCalls[e.output_index]
        return out(ongoing ? [{ type: 'tool-input-delta', id: ongoing.toolCallId, delta: e.delta }] : [])
      }
      case 'response.function_call_arguments.done':
        return isStr(e.item_id) && isNum(e.output_index) && isStr(e.arguments) ? out([]) : NOT_TAKEN
      case 'response.reasoning_summary_part.added': {
        if (!isStr(e.item_id) || !nullishIndex(e.output_index) || !isNum(e.summary_index)) return NOT_TAKEN
        const itemId = itemIdOf(e.item_id, e.output_index)
        const active = reasoning[itemId]
        if (e.summary_index <= 0 || !active) return out([])
        const parts: LanguageModelV4StreamPart[] = []
        active.summaryParts[e.summary_index] = 'active'
        for (const summaryIndex of Object.keys(active.summaryParts))
          if (active.summaryParts[Number(summaryIndex)] === 'can-conclude') {
            parts.push({ type: 'reasoning-end', id: `${itemId}:${summaryIndex}`, providerMetadata: { openai: { itemId } } })
            active.summaryParts[Number(summaryIndex)] = 'concluded'
          }
        parts.push({ type: 'reasoning-start', id: `${itemId}:${e.summary_index}`, providerMetadata: { openai: { itemId, reasoningEncryptedContent: active.encryptedContent ?? null } } })
        return out(parts)
      }
      case 'response.reasoning_summary_text.delta': {
        if (!isStr(e.item_id) || !nullishIndex(e.output_index) || !isNum(e.summary_index) || !isStr(e.delta)) return NOT_TAKEN
        const itemId = itemIdOf(e.item_id, e.output_index)
        return out([{ type: 'reasoning-delta', id: `${itemId}:${e.summary_index}`, delta: e.delta, providerMetadata: { openai: { itemId } } }])
      }
      case 'response.reasoning_summary_part.done': {
        if (!isStr(e.item_id) || !nullishIndex(e.output_index) || !isNum(e.summary_index)) return NOT_TAKEN
        const itemId = itemIdOf(e.item_id, e.output_index)
        const active = reasoning[itemId]
        if (!active) return out([])
        if (call.store) {
          active.summaryParts[e.summary_index] = 'concluded'
          return out([{ type: 'reasoning-end', id: `${itemId}:${e.summary_index}`, providerMetadata: { openai: { itemId } } }])
        }
        active.summaryParts[e.summary_index] = 'can-conclude'
        return out([])
      }
      case 'response.completed':
      case 'response.incomplete': {
        const r = e.response
        if (!isObject(r)) return NOT_TAKEN
        // Prompt-cache diagnostics are the package's to map.
        if (r.prompt_cache_diagnostics != null) return NOT_TAKEN
        const incomplete = r.incomplete_details
        if (incomplete != null && (!isObject(incomplete) || !isStr(incomplete.reason))) return NOT_TAKEN
        if (r.usage != null && !isUsage(r.usage)) return NOT_TAKEN
        const context = r.reasoning
        if (context != null && (!isObject(context) || !nullishStr(context.context))) return NOT_TAKEN
        if (!nullishStr(r.service_tier)) return NOT_TAKEN
        const reason = (incomplete as Json | null | undefined)?.reason as string | undefined
        finish = { unified: finishOf(reason, hasFunctionCall, hasRefusal), raw: reason ?? undefined }
        usage = (r.usage as Json | null | undefined) ?? undefined
        if (isStr(r.service_tier)) serviceTier = r.service_tier
        if ((context as Json | null | undefined)?.context != null) reasoningContext = (context as Json).context as string
        return out([])
      }
      default:
        // error, response.failed, annotations, hosted tools' deltas: the package's.
        return NOT_TAKEN
    }
  }

  const end = (): LanguageModelV4StreamPart[] => [
    {
      type: 'finish',
      finishReason: finish,
      usage: usageOf(usage) as Extract<LanguageModelV4StreamPart, { type: 'finish' }>['usage'],
      providerMetadata: {
        openai: { responseId, ...(serviceTier !== undefined ? { serviceTier } : {}), ...(reasoningContext !== undefined ? { reasoningContext } : {}) },
      },
    },
  ]

  return { push, end }
}
