import type { Usage } from '../pricing/usage.ts'

export type PendingToolCall = { tool_name: string; tool_use_id: string }

export type StopReason = 'end_turn' | 'max_tokens' | 'tool_use' | 'stop_sequence' | 'refusal'

/**
 * How a run ended: one type from the provider stream (executeRun, summariseBlock) or the sweep to
 * the store (settleRun writes it as the run's row, its balance entry and its uptime sample).
 */
export type RunOutcome = {
  status: 'succeeded' | 'failed' | 'cancelled'
  stopReason: StopReason | null
  error: { code: string; message: string } | null
  /** What is billed: the provider's usage, or the usage known so far (src/actors/run-outcome.ts) when it was lost. */
  usage: Usage
  /** True when the provider reported no usage: `usage` is then an estimate, billed but reported as null (spec §2.8). */
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

/** The chat machine's name for a run's outcome. */
export type RunResult = RunOutcome
