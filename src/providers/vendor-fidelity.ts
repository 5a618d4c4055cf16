import type { LanguageModelV3FunctionTool, SharedV3Warning } from '@ai-sdk/provider'
import type { PackedPart } from '../domain/context/context-types.ts'
import type { TranslationWarning } from '../domain/turns/coerce-reasoning-effort.ts'

/**
 * What each vendor keeps of what Parley sends it (decision 017), read from the vendor packages'
 * request conversion (@ai-sdk/* v3):
 *
 * - `strict` on a function tool: OpenAI, Mistral and xAI send it as is; Anthropic sends it when the
 *   model supports structured outputs and otherwise warns itself (passed through as a vendor
 *   warning); Google turns `strict: true` into VALIDATED calling for every function of the request,
 *   so a `strict: false` beside it is not kept. DeepSeek throws on `strict: true` unless its base URL
 *   is the beta one, so Parley never sends it `strict`.
 * - `is_error` on a tool result: only Anthropic has the flag (`is_error: true` from the AI SDK's
 *   `error-text` output), and not on a result with attachments (sent as content blocks, no flag). The
 *   others get the result text alone.
 * - Reasoning replay data (thinking signatures): sent back to the vendor that produced it, for
 *   Anthropic (thinking `signature`, `redacted_thinking` data) and Google (thought signatures).
 *   OpenAI's reasoning item ids are stored but not replayed: its package then sends the item as a
 *   reference that needs the item ids of what followed it, which Parley does not keep.
 */
type Fidelity = {
  /** How the vendor takes `strict`: as sent, never, or only `true` (for every tool at once). */
  strict: 'kept' | 'dropped' | 'true_for_all'
  /** Whether a tool result's error flag reaches the vendor (not with attachments). */
  isError: boolean
  /** Whether stored reasoning replay data is sent back to this vendor. */
  replaysReasoning: boolean
}

const FIDELITY: Record<string, Fidelity> = {
  anthropic: { strict: 'kept', isError: true, replaysReasoning: true },
  openai: { strict: 'kept', isError: false, replaysReasoning: false },
  google: { strict: 'true_for_all', isError: false, replaysReasoning: true },
  mistral: { strict: 'kept', isError: false, replaysReasoning: false },
  xai: { strict: 'kept', isError: false, replaysReasoning: false },
  deepseek: { strict: 'dropped', isError: false, replaysReasoning: false },
  // The sandbox shows what it was sent (`/context`): everything is kept.
  sandbox: { strict: 'kept', isError: true, replaysReasoning: false },
}

const fidelityOf = (provider: string): Fidelity => FIDELITY[provider] ?? { strict: 'dropped', isError: false, replaysReasoning: false }

/** Whether reasoning replay data stored from `producer` is sent to `provider`: only to the same vendor, when it takes it. */
export function replaysReasoningTo(provider: string | undefined, producer: string): boolean {
  return provider !== undefined && provider === producer && fidelityOf(provider).replaysReasoning
}

const strippedTools = new Map<string, WeakMap<readonly LanguageModelV3FunctionTool[], LanguageModelV3FunctionTool[]>>()

/**
 * The tools as the vendor is sent them: without `strict` for a vendor that has no equivalent. The
 * same array when nothing changes; otherwise made once per tool list and vendor.
 */
export function toolsForVendor(provider: string, tools: readonly LanguageModelV3FunctionTool[]): LanguageModelV3FunctionTool[] {
  if (fidelityOf(provider).strict !== 'dropped' || !tools.some((t) => t.strict !== undefined)) return tools as LanguageModelV3FunctionTool[]
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
export function strictWarnings(provider: string, tools: readonly LanguageModelV3FunctionTool[]): TranslationWarning[] {
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
        : `${provider} has no equivalent of is_error on a tool result: ${ids.length} result(s) sent as plain results`,
      details: { provider, tool_use_ids: ids },
    },
  ]
}

/** Every lossy step of translating the packed turn for the vendor: `strict` and `is_error` dropped. */
export function vendorTranslationWarnings(
  provider: string,
  parts: readonly PackedPart[],
  tools: readonly LanguageModelV3FunctionTool[],
): TranslationWarning[] {
  return [...strictWarnings(provider, tools), ...isErrorWarnings(provider, parts)]
}

const MAX_VENDOR_MESSAGE = 500

/**
 * A warning the vendor's package gave about the request (its `stream-start` warnings) as a
 * translation warning: code `vendor_warning`, the package's words as the message (cut at 500
 * characters: some quote the part they skipped), and its kind and feature in `details`.
 */
export function vendorWarning(provider: string, w: SharedV3Warning): TranslationWarning {
  const text =
    w.type === 'other'
      ? w.message
      : (w.details ?? `${w.feature} is ${w.type === 'unsupported' ? 'not supported' : 'changed for compatibility'} by ${provider}`)
  const message = text.length > MAX_VENDOR_MESSAGE ? `${text.slice(0, MAX_VENDOR_MESSAGE)}…` : text
  return {
    code: 'vendor_warning',
    message,
    details: { provider, type: w.type, ...(w.type === 'other' ? {} : { feature: w.feature }) },
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
