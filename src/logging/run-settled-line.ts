import type { RunOutcome } from '../domain/runs/run-outcome.ts'

/** Whose run it is, as its settlement knows it (src/actors/run-lifecycle.ts Settlement is one). */
export type SettledRun = { runId: string; chatId: string; orgId: string; model: { name: string }; entryType?: 'usage' | 'compaction' }

/** The operator's one info line per settled run (issue 13): enough to find it, price it and time it. */
export type RunSettledLine = {
  run_id: string
  chat_id: string
  org_id: string
  model: string
  /** `usage` for a customer's run, `compaction` for a summary's (docs/guide/context.md). */
  charge: 'usage' | 'compaction'
  status: RunOutcome['status']
  stop_reason: RunOutcome['stopReason']
  error_code: string | null
  input_tokens: number
  output_tokens: number
  /** True when the vendor reported no usage and the counts are our estimate (docs/guide/billing-and-usage.md). */
  usage_estimated: boolean
  /** The customer's cost in USD, as charged to the balance. */
  cost: string
  latency_ms: number | null
}

export function runSettledLine(run: SettledRun, outcome: RunOutcome, cost: string): RunSettledLine {
  return {
    run_id: run.runId,
    chat_id: run.chatId,
    org_id: run.orgId,
    model: run.model.name,
    charge: run.entryType ?? 'usage',
    status: outcome.status,
    stop_reason: outcome.stopReason,
    error_code: outcome.error?.code ?? null,
    input_tokens: outcome.usage.input_tokens,
    output_tokens: outcome.usage.output_tokens,
    usage_estimated: outcome.usageLost === true,
    cost,
    latency_ms: outcome.latencyMs,
  }
}
