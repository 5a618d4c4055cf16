/**
 * How long a vendor asked us to wait, in ms: `retry-after-ms` (OpenAI, Anthropic), then
 * `Retry-After` as seconds or an HTTP date. Null when it said nothing usable.
 */
export function parseRetryAfter(headers: Headers, nowMs: number): number | null {
  const ms = headers.get('retry-after-ms')
  if (ms !== null && /^\d+(\.\d+)?$/.test(ms.trim())) return Math.ceil(Number(ms))
  const value = headers.get('retry-after')?.trim()
  if (!value) return null
  if (/^\d+(\.\d+)?$/.test(value)) return Math.ceil(Number(value) * 1000)
  const at = Date.parse(value)
  return Number.isNaN(at) ? null : Math.max(0, at - nowMs)
}
