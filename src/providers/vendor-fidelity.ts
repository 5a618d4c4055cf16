import type { LanguageModelV4FunctionTool, SharedV4Warning } from '@ai-sdk/provider'
import type { PackedPart } from '../domain/context/context-types.ts'
import type { VendorReplay } from '../domain/parts.ts'
import type { TranslationWarning } from '../domain/turns/coerce-reasoning-effort.ts'

/**
 * What each vendor keeps of what Parley sends it (decisions 017 and 026), read from the vendor
 * packages' request conversion (@ai-sdk/* v3):
 *
 * - `strict` on a function tool: OpenAI, Mistral and xAI send it as is; Anthropic sends it when the
 *   model supports structured outputs and otherwise warns itself (passed through as a vendor
 *   warning); Google turns `strict: true` into VALIDATED calling for every function of the request,
 *   so a `strict: false` beside it is not kept. DeepSeek throws on `strict: true` unless its base URL
 *   is the beta one, so Parley never sends it `strict`.
 * - `is_error` on a tool result: only Anthropic has the flag (`is_error: true` from the AI SDK's
 *   `error-text` output), and not on a result with attachments (sent as content blocks, no flag). The
 *   others get the result text alone.
 * - Replay data, sent back only to the vendor that produced it, as its package's provider options:
 *   Anthropic, on reasoning (thinking `signature`, `redacted_thinking` data); Google, on reasoning,
 *   tool calls and messages (`thoughtSignature` on the thought, the `functionCall` and the text part);
 *   OpenAI, on reasoning that has its encrypted content (the reasoning item, id, `encrypted_content`
 *   and summary, before the items that followed it; requests go with `store: false`). Nothing else:
 *   OpenAI's message and function-call item ids are not sent (under `store: false` an id names an
 *   item the API did not keep), and Mistral, xAI and DeepSeek expose none.
 * - DeepSeek's thinking mode answers 400 when an assistant message with tool calls of the current
 *   tool loop lacks `reasoning_content`: such a message always carries a reasoning item (empty when
 *   Parley has none of DeepSeek's), and the package sends `reasoning_content` where it applies.
 */
type Fidelity = {
  /** How the vendor takes `strict`: as sent, never, or only `true` (for every tool at once). */
  strict: 'kept' | 'dropped' | 'true_for_all'
  /** Whether a tool result's error flag reaches the vendor (not with attachments). */
  isError: boolean
  /** The part kinds whose replay data, made by this vendor, is stored and sent back to it (reasoning's is always stored). */
  replays: readonly ReplayKind[]
  /** Whether every assistant message with tool calls must carry a reasoning item (DeepSeek's thinking mode). */
  reasoningWithToolCalls: boolean
}

/** The ledger parts that can carry a vendor's replay data. */
export type ReplayKind = 'reasoning' | 'tool_call' | 'message'

const FIDELITY: Record<string, Fidelity> = {
  anthropic: { strict: 'kept', isError: true, replays: ['reasoning'], reasoningWithToolCalls: false },
  openai: { strict: 'kept', isError: false, replays: ['reasoning'], reasoningWithToolCalls: false },
  google: { strict: 'true_for_all', isError: false, replays: ['reasoning', 'tool_call', 'message'], reasoningWithToolCalls: false },
  mistral: { strict: 'kept', isError: false, replays: [], reasoningWithToolCalls: false },
  xai: { strict: 'kept', isError: false, replays: [], reasoningWithToolCalls: false },
  deepseek: { strict: 'dropped', isError: false, replays: [], reasoningWithToolCalls: true },
  // The sandbox shows what it was sent (`/context`): everything is kept.
  sandbox: { strict: 'kept', isError: true, replays: [], reasoningWithToolCalls: false },
}

const fidelityOf = (provider: string): Fidelity => FIDELITY[provider] ?? { strict: 'dropped', isError: false, replays: [], reasoningWithToolCalls: false }

/**
 * Whether the data is what its own vendor takes back on this kind of part: OpenAI's reasoning only
 * with its encrypted content (an item id alone names an item a `store: false` request never kept;
 * turns made before decision 026 have only the id).
 */
function isReplayable(kind: ReplayKind, replay: VendorReplay): boolean {
  if (!fidelityOf(replay.provider).replays.includes(kind)) return false
  if (replay.provider !== 'openai') return true
  const openai = replay.metadata.openai
  return typeof openai?.itemId === 'string' && typeof openai.reasoningEncryptedContent === 'string' && openai.reasoningEncryptedContent !== ''
}

/** Whether a part's replay data goes to `provider`: only to the vendor that made it, when it takes it back. */
export function replaysTo(provider: string | undefined, kind: ReplayKind, replay: VendorReplay | undefined): replay is VendorReplay {
  return replay !== undefined && provider === replay.provider && isReplayable(kind, replay)
}

/** Whether a tool call's or message's replay data from `provider` is worth storing: it sends it back (reasoning's is always stored). */
export function storesReplay(provider: string, kind: ReplayKind): boolean {
  return kind === 'reasoning' || fidelityOf(provider).replays.includes(kind)
}

/** Whether every assistant message with tool calls goes with a reasoning item (DeepSeek's thinking mode). */
export function needsReasoningWithToolCalls(provider: string | undefined): boolean {
  return provider !== undefined && fidelityOf(provider).reasoningWithToolCalls
}

const strippedTools = new Map<string, WeakMap<readonly LanguageModelV4FunctionTool[], LanguageModelV4FunctionTool[]>>()

/**
 * The tools as the vendor is sent them: without `strict` for a vendor that has no equivalent. The
 * same array when nothing changes; otherwise made once per tool list and vendor.
 */
export function toolsForVendor(provider: string, tools: readonly LanguageModelV4FunctionTool[]): LanguageModelV4FunctionTool[] {
  if (fidelityOf(provider).strict !== 'dropped' || !tools.some((t) => t.strict !== undefined)) return tools as LanguageModelV4FunctionTool[]
  let cache = strippedTools.get(provider)
  if (!cache) strippedTools.set(provider, (cache = new WeakMap()))
  let stripped = cache.get(tools)
  if (!stripped) {
    stripped = tools.map((t) => {
      if (t.strict === undefined) return t
      const { strict: _dropped, ...rest } = t
      return rest
    })
    cache.set(tools, stripped)
  }
  return stripped
}

/** `strict` settings the vendor will not honour, as warnings (docs/guide/namespaces-and-configuration.md: dropped when the provider has no equivalent). */
export function strictWarnings(provider: string, tools: readonly LanguageModelV4FunctionTool[]): TranslationWarning[] {
  const { strict } = fidelityOf(provider)
  if (strict === 'kept') return []
  const dropped =
    strict === 'dropped'
      ? tools.filter((t) => t.strict !== undefined)
      : // Google: `strict: true` validates every call of the request, so a `false` beside it is not kept.
        tools.some((t) => t.strict === true)
        ? tools.filter((t) => t.strict === false)
        : []
  if (dropped.length === 0) return []
  const names = dropped.map((t) => t.name)
  return [
    {
      code: 'strict_dropped',
      message:
        strict === 'dropped'
          ? `${provider} has no equivalent of strict on a function tool: it was not sent for ${names.join(', ')}`
          : `${provider} validates every call once one tool is strict: strict: false was not kept for ${names.join(', ')}`,
      details: { provider, tools: names },
    },
  ]
}

/** Tool results whose error flag does not reach the vendor, as one warning (docs/guide/chats-and-ledger.md: is_error dropped without an equivalent). */
export function isErrorWarnings(provider: string, parts: readonly PackedPart[]): TranslationWarning[] {
  const { isError } = fidelityOf(provider)
  const ids: string[] = []
  for (const part of parts) {
    const c = part.content
    if (c === null || c.type !== 'tool_result' || !c.isError) continue
    // Anthropic flags a text result; a result with attachments goes as content blocks, unflagged.
    if (isError && !c.attachments.some((a) => a.kind === 'file')) continue
    ids.push(c.toolUseId)
  }
  if (ids.length === 0) return []
  return [
    {
      code: 'is_error_dropped',
      message: isError
        ? `${provider} takes no error flag on a tool result with attachments: ${ids.length} result(s) sent without is_error`
        : `${provider} has no equivalent of is_error on a tool result: ${ids.length} result(s) sent without the flag`,
      details: { provider, tool_use_ids: ids },
    },
  ]
}

/**
 * Another vendor's replay data in the context, which `provider` is not sent (decision 026), as one
 * warning naming the parts and the vendors that made them. Data its own vendor would not take back
 * either (an OpenAI reasoning id without its encrypted content) loses nothing and is not counted.
 */
export function replayWarnings(provider: string, parts: readonly PackedPart[]): TranslationWarning[] {
  const ordinals: number[] = []
  const from = new Set<string>()
  for (const part of parts) {
    const c = part.content
    if (c === null || !('replay' in c) || c.replay === undefined) continue
    const kind: ReplayKind = c.type === 'tool_call' ? 'tool_call' : c.type === 'message' ? 'message' : 'reasoning'
    if (c.replay.provider === provider || !isReplayable(kind, c.replay)) continue
    ordinals.push(part.ordinal)
    from.add(c.replay.provider)
  }
  if (ordinals.length === 0) return []
  const vendors = [...from].sort()
  return [
    {
      code: 'replay_dropped',
      message: `${provider} cannot take replay data (signatures, encrypted reasoning) made by ${vendors.join(', ')}: ${ordinals.length} part(s) sent without it, hidden reasoning not at all`,
      details: { provider, from: vendors, ordinals },
    },
  ]
}

/** Every lossy step of translating the packed turn for the vendor: `strict`, `is_error` and other vendors' replay data dropped. */
export function vendorTranslationWarnings(
  provider: string,
  parts: readonly PackedPart[],
  tools: readonly LanguageModelV4FunctionTool[],
): TranslationWarning[] {
  return [...strictWarnings(provider, tools), ...isErrorWarnings(provider, parts), ...replayWarnings(provider, parts)]
}

const MAX_VENDOR_MESSAGE = 500

/**
 * A warning the vendor's package gave about the request (its `stream-start` warnings) as a
 * translation warning: code `vendor_warning`, the package's words as the message (cut at 500
 * characters: some quote the part they skipped), and its kind and feature in `details`.
 */
export function vendorWarning(provider: string, w: SharedV4Warning): TranslationWarning {
  const text =
    w.type === 'other' || w.type === 'deprecated'
      ? w.message
      : (w.details ?? `${w.feature} is ${w.type === 'unsupported' ? 'not supported' : 'changed for compatibility'} by ${provider}`)
  const message = text.length > MAX_VENDOR_MESSAGE ? `${text.slice(0, MAX_VENDOR_MESSAGE)}…` : text
  return {
    code: 'vendor_warning',
    message,
    details: { provider, type: w.type, ...(w.type === 'other' ? {} : w.type === 'deprecated' ? { setting: w.setting } : { feature: w.feature }) },
  }
}

/**
 * The header each vendor names its request with, the id its support asks for (decision 017):
 * Anthropic `request-id`, OpenAI and xAI `x-request-id`, Mistral `mistral-correlation-id`, DeepSeek
 * `x-ds-trace-id`. Google sends none; neither does the sandbox.
 */
const REQUEST_ID_HEADERS: Record<string, readonly string[]> = {
  anthropic: ['request-id'],
  openai: ['x-request-id'],
  xai: ['x-request-id'],
  mistral: ['mistral-correlation-id', 'x-request-id'],
  deepseek: ['x-ds-trace-id', 'x-request-id'],
}
const COMMON_REQUEST_ID_HEADERS = ['x-request-id', 'request-id']

/** The vendor's request id from its response headers, or null when it sent none. */
export function requestIdFrom(provider: string, headers: Record<string, string | undefined> | undefined): string | null {
  if (!headers) return null
  const lower = new Map(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]))
  for (const name of [...(REQUEST_ID_HEADERS[provider] ?? []), ...COMMON_REQUEST_ID_HEADERS]) {
    const value = lower.get(name)
    if (typeof value === 'string' && value !== '') return value
  }
  return null
}
