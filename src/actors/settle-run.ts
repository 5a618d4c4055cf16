import type { CatalogueEntry } from '../domain/catalogue/catalogue-entry.ts'
import { moneyToUnits } from '../domain/money.ts'
import { customerCost } from '../domain/pricing/customer-cost.ts'
import type { Usage } from '../domain/pricing/usage.ts'
import type { ChargeType } from '../store/balance.ts'
import type { RunStatus } from '../store/runs.ts'
import type { RunDeps } from './run-deps.ts'

export type Settlement = {
  runId: string
  orgId: string
  chatId: string
  apiKeyId: string | null
  namespace: string | null
  model: Pick<CatalogueEntry, 'id' | 'name' | 'rates' | 'tiers'>
  markupPercent: string
  status: Exclude<RunStatus, 'running'>
  stopReason: string | null
  error: string | null
  /** What is billed: the provider's usage, or the estimate when it was lost. */
  usage: Usage
  /** The provider reported no usage: the run's usage is null (spec §2.8) though the estimate is billed. */
  usageLost?: boolean
  latencyMs: number | null
  /** Stored as the run's provider_request_id: the vendor's request id header, else its response id (decision 017). */
  providerResponseId: string | null
  /** The balance entry: `usage` for a customer's run, `compaction` for a summary's (decisions §5.3). */
  entryType?: ChargeType
  /** The provider call as a catalogue statistic; absent when it says nothing of the provider (a cancel). */
  sample?: { startedAt: string; firstDeltaMs: number | null }
}

/**
 * Ends a run in one transaction (the caller's, when it holds one): its status, usage and cost,
 * and the `usage` balance entry.
 * Only the first ending counts: a run already ended elsewhere is not charged again.
 * Returns the cost charged, or null when the run had already ended.
 */
export function settleRun(deps: RunDeps, s: Settlement): string | null {
  const { store } = deps
  const now = deps.now().toISOString()
  const settle = () => {
    const cost = customerCost(s.usage, s.model, s.markupPercent)
    const finished = store.runs.finish(
      s.runId,
      {
        status: s.status,
        completedAt: now,
        error: s.error,
        stopReason: s.stopReason,
        latencyMs: s.latencyMs,
        providerRequestId: s.providerResponseId,
        usage: s.usageLost ? null : s.usage,
      },
      { costUnits: moneyToUnits(cost), settledAt: now },
    )
    if (!finished) return null
    store.balance.charge({
      orgId: s.orgId,
      type: s.entryType ?? 'usage',
      runId: s.runId,
      apiKeyId: s.apiKeyId,
      modelId: s.model.id,
      modelName: s.model.name,
      namespace: s.namespace,
      usage: s.usage,
      cost,
      occurredAt: now,
    })
    if (s.sample) {
      store.providerCalls.record({ modelId: s.model.id, startedAt: s.sample.startedAt, succeeded: s.status === 'succeeded', firstDeltaMs: s.sample.firstDeltaMs })
    }
    return cost
  }
  // Inside the turn path's group commit already; the start-up sweep gives it a transaction of its own.
  return store.db.inTransaction ? settle() : store.db.transaction(settle).immediate()
}
