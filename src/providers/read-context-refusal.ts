import type { ContextRefusal as DomainContextRefusal } from '../domain/context/refit.ts'

/**
 * Recognises a vendor's refusal of a request for its context size, the way each of the six vendors
 * words it (docs/decisions/044-context-refusal-refit.md; recorded bodies with their sources in
 * test/providers/context-refusals/). Pure: it reads the HTTP status and the error text only.
 *
 * Why it matters: such a refusal arrives before the first byte, the vendor billed nothing, and it is
 * the one failure that packing again can cure. A 400 of any other kind must NOT be read as one (a
 * refit would only resend a bad request), so each wording is matched whole, not by a loose keyword.
 *
 * Where a message carries the vendor's own count of the input, it is returned: it is the exact truth
 * the token correction learns from (src/domain/context/token-correction.ts).
 */

/** The refusal as the refit rules take it (src/domain/context/refit.ts), with the wording that matched. */
export type ContextRefusal = DomainContextRefusal & { wording: Wording }

export type Wording =
  | 'anthropic-prompt-too-long'
  | 'anthropic-input-and-max-tokens'
  | 'openai-context-length-exceeded'
  | 'openai-input-limit'
  | 'openai-maximum-context-length'
  | 'google-input-token-count'
  | 'mistral-prompt-contains'
  | 'xai-maximum-prompt-length'
  | 'deepseek-maximum-context-length'
  | 'sandbox-context-window'

export type ReadResult = { value: ContextRefusal | null; warnings: string[] }

const int = (s: string | undefined): number | null => {
  if (s === undefined) return null
  const n = Number(s.replace(/[,_]/g, ''))
  return Number.isSafeInteger(n) && n >= 0 ? n : null
}

/** Digits, with the thousands separators some messages use. */
const N = '(\\d[\\d,]*)'

type Pattern = { wording: Wording; re: RegExp; read: (m: RegExpMatchArray) => Omit<ContextRefusal, 'wording'> }

/**
 * The wordings, most specific first. Anthropic, Google, xAI and Mistral give the input count; DeepSeek
 * and OpenAI's Chat Completions give "you requested N (X in the messages, Y in the completion)", where
 * X is the input; OpenAI's Responses API gives only the code.
 */
const PATTERNS: readonly Pattern[] = [
  {
    wording: 'anthropic-prompt-too-long',
    re: new RegExp(`prompt is too long: ${N} tokens > ${N} maximum`, 'i'),
    read: (m) => ({ vendorCount: int(m[1]), window: int(m[2]), maxTokens: null }),
  },
  {
    wording: 'anthropic-input-and-max-tokens',
    re: new RegExp(`input length and \`?max_tokens\`? exceed context limit: ${N} \\+ ${N} > ${N}`, 'i'),
    read: (m) => ({ vendorCount: int(m[1]), maxTokens: int(m[2]), window: int(m[3]) }),
  },
  {
    wording: 'openai-input-limit',
    re: new RegExp(`Input tokens exceed the configured limit of ${N} tokens\\.(?: Your messages resulted in ${N} tokens)?`, 'i'),
    read: (m) => ({ vendorCount: int(m[2]), window: int(m[1]), maxTokens: null }),
  },
  {
    // DeepSeek's, and OpenAI's Chat Completions' older wording: the same sentence shape.
    wording: 'deepseek-maximum-context-length',
    re: new RegExp(`maximum context length is ${N} tokens\\. However, you requested ${N} tokens \\(${N} in the messages, ${N} in the completion\\)`, 'i'),
    read: (m) => ({ vendorCount: int(m[3]), window: int(m[1]), maxTokens: int(m[4]) }),
  },
  {
    wording: 'openai-maximum-context-length',
    re: new RegExp(`maximum context length is ${N} tokens\\. However, your messages resulted in ${N} tokens`, 'i'),
    read: (m) => ({ vendorCount: int(m[2]), window: int(m[1]), maxTokens: null }),
  },
  {
    wording: 'google-input-token-count',
    re: new RegExp(`The input token count \\(${N}\\) exceeds the maximum number of tokens allowed \\(${N}\\)`, 'i'),
    read: (m) => ({ vendorCount: int(m[1]), window: int(m[2]), maxTokens: null }),
  },
  {
    wording: 'mistral-prompt-contains',
    re: new RegExp(`Prompt contains ${N} tokens(?: and ${N} draft tokens)?, too large for model with ${N} maximum context length`, 'i'),
    read: (m) => ({ vendorCount: int(m[1]), window: int(m[3]), maxTokens: null }),
  },
  {
    wording: 'xai-maximum-prompt-length',
    re: new RegExp(`maximum prompt length is ${N} but the request contains ${N} tokens`, 'i'),
    read: (m) => ({ vendorCount: int(m[2]), window: int(m[1]), maxTokens: null }),
  },
  {
    // The Responses API's streamed error event and 400: a code and a sentence, no figure.
    wording: 'openai-context-length-exceeded',
    re: /context_length_exceeded|Your input exceeds the context window of this model/i,
    read: () => ({ vendorCount: null, window: null, maxTokens: null }),
  },
  {
    // The sandbox model's own refusal of an over-window request (src/providers/sandbox): any message
    // that names the context window with two figures, "<input> … context window … <window>".
    wording: 'sandbox-context-window',
    re: new RegExp(`${N} (?:input )?tokens[^.]*?context window(?: of)? ${N}`, 'i'),
    read: (m) => ({ vendorCount: int(m[1]), window: int(m[2]), maxTokens: null }),
  },
]

/**
 * The refusal in a status and an error text (a message or a raw body), or null when it is none.
 * Only a 400 or 413 (or no status, for an error streamed as an event before the first byte) qualifies:
 * a 429 that names tokens is a rate limit, not a context refusal.
 */
export function readContextRefusal(status: number | null, text: string): ReadResult {
  const warnings: string[] = []
  if (status !== null && status !== 400 && status !== 413) return { value: null, warnings }
  for (const p of PATTERNS) {
    const m = text.match(p.re)
    if (!m) continue
    const value: ContextRefusal = { wording: p.wording, ...p.read(m) }
    // A message that names no max_tokens may fit on its own figures: the vendor counted the request's
    // max_tokens too (Mistral, Google). Its count of the input is the vendor's all the same.
    if (value.vendorCount !== null && value.window !== null && value.maxTokens !== null && value.vendorCount + value.maxTokens <= value.window) {
      // A refusal whose own figures, max_tokens included, fit is a vendor's accounting we do not
      // understand: still a refusal (the vendor said so), but its count teaches nothing.
      warnings.push(`context refusal (${p.wording}) with figures that fit: ${value.vendorCount} + ${value.maxTokens} <= ${value.window}`)
      return { value: { ...value, vendorCount: null }, warnings }
    }
    return { value, warnings }
  }
  return { value: null, warnings }
}

/**
 * The refusal in a thrown vendor error (the AI SDK's APICallError carries `statusCode`, `responseBody`
 * and `message`; a streamed error event carries the vendor's object), or null.
 */
export function readContextRefusalFrom(error: unknown): ReadResult {
  const e = error as { statusCode?: unknown; responseBody?: unknown; message?: unknown; cause?: unknown; error?: unknown } | null
  if (e === null || typeof e !== 'object') return typeof error === 'string' ? readContextRefusal(null, error) : { value: null, warnings: [] }
  const status = typeof e.statusCode === 'number' ? e.statusCode : null
  const texts = [e.responseBody, e.message, e.error === undefined ? undefined : JSON.stringify(e.error)].filter((t): t is string => typeof t === 'string')
  for (const text of texts) {
    const read = readContextRefusal(status, text)
    if (read.value !== null) return read
  }
  return e.cause !== undefined && e.cause !== error ? readContextRefusalFrom(e.cause) : { value: null, warnings: [] }
}
