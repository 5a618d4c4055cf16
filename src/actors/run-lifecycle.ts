/**
 * One lifecycle for every run, customer, compaction or swept (docs/guide/runs.md, decision 020):
 *
 * 1. `openRun` writes the run `running` under this node's lease (the host renews it while the run streams);
 * 2. the run streams through one step (`streamRun`, src/actors/stream-run.ts): executeRun's sink relays a
 *    customer's frames and writes its blocks to the ledger, summariseBlock's keeps a summary's text
 *    (a swept run streams no more);
 * 3. `settleInLedger` writes its RunOutcome, in the caller's transaction or one of its own, and
 *    `commitSettlement` does so group-committed with the turn path's other writes;
 * 4. `leaveToSweep` releases the lease of a run whose settlement could not be written, so the sweep
 *    settles it as `interrupted` (src/actors/sweep-abandoned-runs.ts, which settles through step 3).
 *
 * Steps 3 and 4 of a streamed run follow decision 020: written, tried again at 200 ms × 4^n, then left
 * to the sweep. For a customer run these are the chat machine's `running.settling` states; for a
 * compaction run `settleOrLeaveToSweep` runs machines/run-settlement.machine.ts. A swept
 * run is settled once per sweep; one that cannot be written stays `running` for the next sweep.
 */
import { createActor, fromPromise, toPromise } from 'xstate'
import { runSettlementMachine, type RunSettlementOutput, type SettledRun } from '../../machines/run-settlement.machine.ts'
import type { CatalogueEntry } from '../domain/catalogue/catalogue-entry.ts'
import { moneyToUnits } from '../domain/money.ts'
import { sampleRatio } from '../domain/context/token-correction.ts'
import { customerCost } from '../domain/pricing/customer-cost.ts'
import { contextTokens } from '../domain/pricing/usage.ts'
import type { ChargeType } from '../store/balance.ts'
import type { NewRun } from '../store/runs.ts'
import type { RunDeps } from './run-deps.ts'
import { isUptimeSample, type RunOutcome } from '../domain/runs/run-outcome.ts'

/**
 * Writes a run `running` under this node's lease, from its creation time (docs/decisions/018-running-run-leases.md):
 * inside the caller's write, which may hold other rows of the turn.
 */
export function openRun(deps: RunDeps, run: Omit<NewRun, 'lease_owner' | 'lease_expires_at'>): void {
  deps.store.runs.insert({
    ...run,
    lease_owner: deps.nodeId,
    lease_expires_at: new Date(Date.parse(run.created_at) + deps.leaseTtlMs).toISOString(),
  })
}

/** A run's outcome with whose run it is and who pays for it. */
export type Settlement = {
  runId: string
  orgId: string
  chatId: string
  apiKeyId: string | null
  namespace: string | null
  model: Pick<CatalogueEntry, 'id' | 'name' | 'rates' | 'tiers'>
  markupPercent: string
  /** The balance entry: `usage` for a customer's run, `compaction` for a summary's (docs/guide/context.md). */
  entryType?: ChargeType
  /** When the provider call started: the uptime sample's time; null when nobody timed one (the sweep). */
  startedAt: string | null
  /** Our estimate of the call's input: with the vendor's count, it teaches the model's token correction. */
  estimatedInputTokens?: number
  outcome: RunOutcome
}

/**
 * Ends a run in one transaction (the caller's, when it holds one): its status, usage and cost,
 * and the `usage` balance entry.
 * Only the first ending counts: a run already ended elsewhere is not charged again.
 * Returns the cost charged, or null when the run had already ended.
 */
export function settleInLedger(deps: RunDeps, s: Settlement): string | null {
  const { store } = deps
  const now = deps.now().toISOString()
  const settle = () => {
    const o = s.outcome
    // Priced with the catalogue of the run's start (decision 041), not of its end.
    const priced = (s.startedAt !== null ? deps.pricesAt?.(s.model.id, new Date(s.startedAt)) : undefined) ?? s.model
    const cost = customerCost(o.usage, priced, s.markupPercent)
    const finished = store.runs.finish(
      s.runId,
      {
        status: o.status,
        completedAt: now,
        error: o.error?.message ?? null,
        stopReason: o.stopReason,
        latencyMs: o.latencyMs,
        // The vendor's request id header, else its response id (decision 017).
        providerRequestId: o.providerRequestId ?? o.providerResponseId,
        // Billed for the estimate, reported as null (docs/guide/runs.md).
        usage: o.usageLost ? null : o.usage,
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
      usage: o.usage,
      cost,
      occurredAt: now,
    })
    // The vendor's count against our estimate (src/domain/context/token-correction.ts), with the settlement.
    const ratio = o.usageLost || s.estimatedInputTokens === undefined ? null : sampleRatio(s.estimatedInputTokens, contextTokens(o.usage))
    if (ratio !== null) store.tokenCorrections.record(s.model.id, ratio)
    // A run the vendor refused for its context teaches its count too (docs/decisions/044-context-refusal-refit.md).
    const refused = o.contextRefusal?.vendorCount == null || s.estimatedInputTokens === undefined ? null : sampleRatio(s.estimatedInputTokens, o.contextRefusal.vendorCount)
    if (refused !== null) store.tokenCorrections.record(s.model.id, refused)
    // The provider call as a catalogue statistic, written with the settlement.
    if (s.startedAt !== null && isUptimeSample(o)) {
      store.providerCalls.record({ modelId: s.model.id, startedAt: s.startedAt, succeeded: o.status === 'succeeded', firstDeltaMs: o.firstDeltaMs })
    }
    return cost
  }
  // Inside the turn path's group commit already; the start-up sweep gives it a transaction of its own.
  const cost = store.db.inTransaction ? settle() : store.db.transaction(settle).immediate()
  if (cost !== null && deps.onRunSettled) reportOnceCommitted(deps, s, cost)
  return cost
}

/**
 * The operator's line for a settled run (customer, compaction or swept), once its transaction is
 * over: better-sqlite3's transactions are synchronous, so by the next microtask the enclosing one
 * committed or rolled back, and the row says which (a rolled-back run is still `running`).
 */
function reportOnceCommitted(deps: RunDeps, s: Settlement, cost: string): void {
  queueMicrotask(() => {
    if (deps.store.runs.statusOf(s.runId) === 'running') return
    try {
      deps.onRunSettled!(s, cost)
    } catch {
      // A log line must never break a settlement.
    }
  })
}

/**
 * A settlement group-committed with the turn path's other writes, and what must be written with it
 * (a compaction run's summary) in the same transaction. A throw leaves the run `running`: the
 * caller tries again or leaves it to the sweep.
 */
export function commitSettlement(deps: RunDeps, s: Settlement, alongside?: () => void): Promise<string | null> {
  return deps.store.writes.write(() => {
    const cost = settleInLedger(deps, s)
    alongside?.()
    return cost
  })
}

/**
 * decision 020: a run whose settlement could not be written is left to the sweep. Its lease ends
 * now and has no owner, so nobody renews it and the sweep settles it as `interrupted` for the usage
 * known. Throws when the release itself cannot be written (the caller reports it).
 */
export async function leaveToSweep(deps: RunDeps, runId: string): Promise<void> {
  await deps.store.writes.write(() => deps.store.runs.releaseLease(runId, deps.now().toISOString()))
}

/**
 * Steps 3 and 4 for a run no chat machine settles in `running.settling` (a compaction run): the same
 * settlement machine (machines/run-settlement.machine.ts), tried again after a backoff, then left to
 * the sweep. `alongside` is written in the settlement's transaction (a summary); `onRelease` hears
 * of a run left to the sweep before its lease is released, so nothing renews it even when the
 * release cannot be written.
 */
export function settleOrLeaveToSweep(
  deps: RunDeps,
  s: Settlement,
  options: { alongside?: () => void; onRelease?: (runId: string) => void } = {},
): Promise<RunSettlementOutput> {
  const machine = runSettlementMachine.provide({
    actors: {
      settle: fromPromise(async (): Promise<SettledRun> => ({ cost: await commitSettlement(deps, s, options.alongside), eager: null })),
      release: fromPromise(async () => {
        // The release is written whatever the listener meets (its chat's actor may be gone by now).
        try {
          options.onRelease?.(s.runId)
        } finally {
          await leaveToSweep(deps, s.runId)
        }
      }),
    },
  })
  return toPromise(createActor(machine, { input: { chatId: s.chatId, runId: s.runId, outcome: s.outcome } }).start())
}
