/** Token counts of one model call (docs/guide/billing-and-usage.md). Reasoning is a subset of output, never added to it. */
export type Usage = {
  input_tokens: number
  output_tokens: number
  reasoning_tokens: number
  cache_read_tokens: number
  cache_write_tokens: number
}

export const ZERO_USAGE: Usage = {
  input_tokens: 0,
  output_tokens: 0,
  reasoning_tokens: 0,
  cache_read_tokens: 0,
  cache_write_tokens: 0,
}

/** Context tokens, the metric tiers are measured on: everything the model read. */
export function contextTokens(usage: Usage): number {
  return usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
}
