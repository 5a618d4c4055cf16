import type { Usage } from '../domain/pricing/usage.ts'
import { estimateTokens } from '../domain/tokens/estimate-tokens.ts'
import type { RunOutcome } from '../domain/runs/run-outcome.ts'

/**
 * The usage known so far, for a run whose provider reported none (a failure, a cancel, a run the
 * sweep settles): the packed input when the call reached the provider, and the output it wrote.
 * Billed, and reported as lost (spec §2.8: missing counts are not zero).
 */
export function usageKnownSoFar(inputTokens: number, output: string, reachedProvider: boolean): Usage {
  return {
    input_tokens: reachedProvider ? inputTokens : 0,
    output_tokens: estimateTokens(output),
    reasoning_tokens: 0,
    cache_read_tokens: 0,
    cache_write_tokens: 0,
  }
}

/**
 * Whether an outcome is a sample of the provider's health (spec §2.7): cancels, calls that never
 * reached the vendor (refused locally, or unknown) and our own failures (`internal`: the ledger
 * write failed) say nothing of it.
 */
export function isUptimeSample(outcome: RunOutcome): boolean {
  return outcome.status !== 'cancelled' && outcome.vendorRequests > 0 && outcome.error?.code !== 'internal'
}
