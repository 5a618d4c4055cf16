import type { Usage } from '../domain/pricing/usage.ts'
import type { TranslationWarning } from '../domain/turns/coerce-reasoning-effort.ts'

/**
 * The counts a vendor reported before its stream ended (issue 22, item 6): what a cut stream is
 * billed for wherever it has them, the estimate standing in only for the rest.
 *
 * Anthropic reports its input in `message_start` (input_tokens and both cache counts, before the
 * first block) and the output only in `message_delta`, just before `message_stop`. The AI SDK keeps
 * message_start's usage to itself until its `finish` part, which a cut stream never sends; so the
 * run asks that vendor's package for its raw chunks (`includeRawChunks`) and reads them here.
 */
export type ReportedUsage = Partial<Pick<Usage, 'input_tokens' | 'cache_read_tokens' | 'cache_write_tokens' | 'output_tokens'>>

type Reading = { value: ReportedUsage | null; warnings: TranslationWarning[] }

const NOTHING: Reading = { value: null, warnings: [] }

/** The providers whose raw chunks carry usage their package does not pass on before its finish. */
const READERS: Record<string, (raw: unknown) => Reading> = {
  anthropic: readAnthropicUsage,
}

/** Whether a run on this provider asks its package for raw chunks (only for the usage read from them). */
export const readsRawChunks = (provider: string): boolean => provider in READERS

/** The usage a raw chunk of this provider reports, if any; chunks of other kinds report none. */
export function readReportedUsage(provider: string, raw: unknown): Reading {
  const reader = READERS[provider]
  return reader ? reader(raw) : NOTHING
}

/**
 * One Anthropic stream event, as parsed JSON: message_start gives the input (fresh, read from the
 * cache, written to it); message_delta gives the cumulative output, and on today's API the whole
 * usage again. message_start's output_tokens is a placeholder (1) and is not taken. A count that is
 * not a non-negative integer is left out with a warning, never billed.
 */
export function readAnthropicUsage(raw: unknown): Reading {
  if (!isObject(raw)) return NOTHING
  if (raw.type === 'message_start') {
    const message = raw.message
    const usage = isObject(message) ? message.usage : undefined
    if (!isObject(usage)) return { value: null, warnings: [unreadable('message_start carried no usage')] }
    return counts(usage, 'message_start', { input_tokens: 'input_tokens', cache_read_input_tokens: 'cache_read_tokens', cache_creation_input_tokens: 'cache_write_tokens' })
  }
  if (raw.type === 'message_delta') {
    if (!isObject(raw.usage)) return { value: null, warnings: [unreadable('message_delta carried no usage')] }
    return counts(raw.usage, 'message_delta', {
      input_tokens: 'input_tokens',
      cache_read_input_tokens: 'cache_read_tokens',
      cache_creation_input_tokens: 'cache_write_tokens',
      output_tokens: 'output_tokens',
    })
  }
  return NOTHING
}

/** A later report over an earlier one, count by count (Anthropic's counts are cumulative). */
export function mergeReportedUsage(into: ReportedUsage | null, later: ReportedUsage | null): ReportedUsage | null {
  if (later === null) return into
  return { ...into, ...later }
}

/**
 * The usage of a stream that ended without its vendor's final usage: the vendor's counts wherever
 * it reported them, `estimate` (src/domain/runs/run-outcome.ts usageKnownSoFar) for the rest. The
 * estimate's input is the whole packed input, cached or not: when the vendor reported only cache
 * counts, the fresh input is what of the estimate they leave.
 */
export function usageOfCutStream(estimate: Usage, reported: ReportedUsage | null): Usage {
  if (reported === null) return estimate
  const cacheReported = reported.cache_read_tokens !== undefined || reported.cache_write_tokens !== undefined
  const inputReported = reported.input_tokens !== undefined || cacheReported
  const cacheRead = inputReported ? reported.cache_read_tokens ?? 0 : estimate.cache_read_tokens
  const cacheWrite = inputReported ? reported.cache_write_tokens ?? 0 : estimate.cache_write_tokens
  const input = reported.input_tokens ?? (cacheReported ? Math.max(0, estimate.input_tokens - cacheRead - cacheWrite) : estimate.input_tokens)
  return {
    input_tokens: input,
    output_tokens: reported.output_tokens ?? estimate.output_tokens,
    reasoning_tokens: reported.output_tokens === undefined ? estimate.reasoning_tokens : Math.min(estimate.reasoning_tokens, reported.output_tokens),
    cache_read_tokens: cacheRead,
    cache_write_tokens: cacheWrite,
  }
}

function counts(usage: Record<string, unknown>, event: string, fields: Record<string, keyof ReportedUsage>): Reading {
  const value: ReportedUsage = {}
  const warnings: TranslationWarning[] = []
  for (const [field, into] of Object.entries(fields)) {
    const count = usage[field]
    if (count === undefined || count === null) continue
    if (typeof count === 'number' && Number.isSafeInteger(count) && count >= 0) value[into] = count
    else warnings.push(unreadable(`${event}'s usage.${field} is not a count`, { field, value: count }))
  }
  return { value: Object.keys(value).length > 0 ? value : null, warnings }
}

/** A vendor warning (decision 017's shape), for the run's manifest. */
const unreadable = (message: string, details: Record<string, unknown> = {}): TranslationWarning => ({
  code: 'vendor_warning',
  message: `${message}; a cut stream's usage estimates it instead`,
  details: { provider: 'anthropic', type: 'other', ...details },
})

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value)
