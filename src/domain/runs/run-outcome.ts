import type { Usage } from '../pricing/usage.ts'
import { estimateTokens } from '../tokens/estimate-tokens.ts'

/** A tool call the run wrote, dated as its tool_call part is in the ledger (the 24 h rule reads it, docs/guide/tool-calls.md). */
export type PendingToolCall = { tool_name: string; tool_use_id: string; created_at: string }

export type StopReason = 'end_turn' | 'max_tokens' | 'tool_use' | 'stop_sequence' | 'refusal'

/**
 * How a run ended: one type from the provider stream (executeRun, summariseBlock) or the sweep to
 * the store (settleRun writes it as the run's row, its balance entry and its uptime sample).
 */
export type RunOutcome = {
  status: 'succeeded' | 'failed' | 'cancelled'
  stopReason: StopReason | null
  error: { code: string; message: string } | null
  /** What is billed: the provider's usage, or the usage known so far (usageKnownSoFar) when it was lost. */
  usage: Usage
  /** True when the provider reported no usage: `usage` is then an estimate, billed but reported as null (docs/guide/billing-and-usage.md). */
  usageLost?: boolean
  providerResponseId: string | null
  /** The vendor's request id header, else the response id (decision 017). */
  providerRequestId?: string | null
  modelServed: string | null
  pendingToolCalls: PendingToolCall[]
  /** Null when nobody timed the run (the sweep settles runs whose streamer is gone). */
  latencyMs: number | null
  firstDeltaMs: number | null
  /** False when the provider failed before its stream opened (nothing reached the customer). */
  streamOpened: boolean
  /** HTTP requests sent to the vendor, retries included; 0 when the vendor library refused the call locally or nobody knows. */
  vendorRequests: number
}

/**
 * The usage known so far, for a run whose provider reported none (a failure, a cancel, a run the
 * sweep settles): the packed input when the call reached the provider, and the output it wrote.
 * Billed, and reported as lost (docs/guide/runs.md: missing counts are not zero).
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
 * Whether an outcome is a sample of the provider's health (docs/decisions/015-vendor-calls-deadlines-retries-uptime.md): cancels, calls that never
 * reached the vendor (refused locally, or unknown) and our own failures (`internal`: the ledger
 * write failed) say nothing of it.
 */
export function isUptimeSample(outcome: RunOutcome): boolean {
  return outcome.status !== 'cancelled' && outcome.vendorRequests > 0 && outcome.error?.code !== 'internal'
}
