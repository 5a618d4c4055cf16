import type { ContextRefusal } from '../context/refit.ts'
import type { Usage } from '../pricing/usage.ts'
import { estimateTokens } from '../tokens/estimate-tokens.ts'

/** A tool call the run wrote, dated as its tool_call part is in the ledger (the 24 h rule reads it, docs/guide/tool-calls.md). */
export type PendingToolCall = { tool_name: string; tool_use_id: string; created_at: string }

export type StopReason = 'end_turn' | 'max_tokens' | 'tool_use' | 'stop_sequence' | 'refusal'

/**
 * How a run ended: one type from the provider stream (streamRun, for executeRun and summariseBlock) or the sweep to
 * the store (src/actors/run-lifecycle.ts settleInLedger writes it as the run's row, its balance
 * entry and its uptime sample). Made only by `runOutcome` below.
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
  /** The vendor refused the request for its context size before its stream opened (src/domain/context/refit.ts); else null. */
  contextRefusal: ContextRefusal | null
}

/** What a run's ending is made of: the facts each kind of run knows; `runOutcome` fills in the rest by rule. */
export type RunOutcomeFacts = {
  status: RunOutcome['status']
  /** Default: a success that did not say how it ended ended `end_turn`; any other ending, null. */
  stopReason?: StopReason | null
  /** Default: null (no error). */
  error?: RunOutcome['error']
  /** What is billed: the provider's usage, or the usage known so far (usageKnownSoFar) with `usageLost`. */
  usage: Usage
  /** Default: false, the provider reported its usage. */
  usageLost?: boolean
  /** Default: null. */
  providerResponseId?: string | null
  /** Default: the response id (decision 017: the vendor's request id header, else its response id). */
  providerRequestId?: string | null
  /** Default: null. */
  modelServed?: string | null
  /** Default: none. */
  pendingToolCalls?: PendingToolCall[]
  /** Null when nobody timed the run. */
  latencyMs: number | null
  /** Default: null (no delta came, or nobody timed one). */
  firstDeltaMs?: number | null
  streamOpened: boolean
  /** Default: 0, nobody knows that any request reached the vendor (no uptime sample). */
  vendorRequests?: number
  /** Default: null, no context refusal. */
  contextRefusal?: ContextRefusal | null
}

/**
 * The one builder of a RunOutcome: every run (customer, compaction, swept, or one that ended
 * without a result) states what it knows, and the rules above fill in the rest.
 */
export function runOutcome(facts: RunOutcomeFacts): RunOutcome {
  const providerResponseId = facts.providerResponseId ?? null
  return {
    status: facts.status,
    stopReason: facts.stopReason ?? (facts.status === 'succeeded' ? 'end_turn' : null),
    error: facts.error ?? null,
    usage: facts.usage,
    usageLost: facts.usageLost ?? false,
    providerResponseId,
    providerRequestId: facts.providerRequestId ?? providerResponseId,
    modelServed: facts.modelServed ?? null,
    pendingToolCalls: facts.pendingToolCalls ?? [],
    latencyMs: facts.latencyMs,
    firstDeltaMs: facts.firstDeltaMs ?? null,
    streamOpened: facts.streamOpened,
    vendorRequests: facts.vendorRequests ?? 0,
    contextRefusal: facts.contextRefusal ?? null,
  }
}

/**
 * A run that did not succeed, its ending told again (its chat deleted, its node shut down): what it
 * streamed and used stands, billed as before; it no longer says how an answer ended.
 */
export function endedAs(outcome: RunOutcome, status: 'failed' | 'cancelled', error: RunOutcome['error']): RunOutcome {
  return runOutcome({ ...outcome, status, stopReason: null, error })
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
