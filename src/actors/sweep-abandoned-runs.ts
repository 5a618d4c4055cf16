import { RunInProgressError } from '../domain/errors.ts'
import type { PartBody } from '../domain/parts.ts'
import { leaseIsLive } from '../domain/runs/lease.ts'
import type { RunRow } from '../store/runs.ts'
import type { RunDeps } from './run-deps.ts'
import { runOutcome, usageKnownSoFar } from '../domain/runs/run-outcome.ts'
import { settleInLedger } from './run-lifecycle.ts'

/**
 * docs/guide/runs.md: a `running` run whose lease expired (or that this node's previous life held) can
 * have nobody streaming it. It becomes `failed` with error `interrupted` and is settled for the
 * usage known: the packed input recorded in its manifest and the output it had written.
 * Returns the runs it settled here (not those handed over to their chat's actor).
 */
export function sweepAbandonedRuns(
  deps: RunDeps,
  previousSelf: string | null,
  onError?: (run: RunRow, error: unknown) => void,
  handOver?: (run: RunRow) => boolean,
): RunRow[] {
  return settleEach(deps, deps.store.runs.abandoned(deps.now().toISOString(), previousSelf ?? ''), onError, handOver)
}

/**
 * A LiteFS primary is the only writer (docs/decisions/009-multi-node-litefs.md): when it becomes the
 * primary, every run still `running` is one nobody can record the end of any more, whoever's lease
 * it holds, so each is settled at once as `interrupted`, not after its lease. Called while this
 * process streams nothing (it was a replica, or is just starting).
 */
export function takeOverRunningRuns(deps: RunDeps, onError?: (run: RunRow, error: unknown) => void, handOver?: (run: RunRow) => boolean): RunRow[] {
  return settleEach(deps, deps.store.runs.everyRunning(), onError, handOver)
}

/**
 * A run nobody streams, settled now whatever its lease says: the caller knows nobody can (a cancel
 * on the only writer, or of this node's own run no actor here holds). True when this call settled it.
 */
export function settleUnstreamedRun(deps: RunDeps, runId: string): boolean {
  const run = deps.store.runs.getById(runId)
  if (!run || run.status !== 'running') return false
  return settleAbandoned(deps, run)
}

function settleEach(deps: RunDeps, abandoned: RunRow[], onError?: (run: RunRow, error: unknown) => void, handOver?: (run: RunRow) => boolean): RunRow[] {
  // A run its chat's actor takes (`handOver`) is settled by that actor (decision 020). One run that
  // cannot be settled now does not keep the others from it; it stays `running` and the next sweep
  // tries it again.
  return abandoned.filter((run) => {
    if (handOver?.(run)) return false
    try {
      return settleAbandoned(deps, run)
    } catch (error) {
      if (!onError) throw error
      onError(run, error)
      return false
    }
  })
}

/**
 * Admission's reaping (docs/guide/runs.md, issue 11): the chat's running run is settled as `interrupted`
 * if its lease has expired by now. Read again here, since the ledger is the authority: a lease
 * renewed since the chat looked (someone does stream it) refuses the turn with run_in_progress;
 * a run settled since (by the sweep) needs nothing more. True when this call settled it.
 */
export function reapExpiredRun(deps: RunDeps, runId: string): boolean {
  const run = deps.store.runs.getById(runId)
  if (!run || run.status !== 'running') return false
  if (leaseIsLive(run.lease_expires_at, deps.now().toISOString())) throw new RunInProgressError(run.id)
  return settleAbandoned(deps, run)
}

function settleAbandoned(deps: RunDeps, run: RunRow): boolean {
  const manifest = JSON.parse(run.manifest) as { estimated_input_tokens?: number; markup_percent?: string }
  const model = deps.modelById(run.model_id)
  const output = deps.store.parts
    .ofRunInChat(run.id, run.chat_id)
    .map((row) => JSON.parse(row.body) as PartBody)
    .map((body) => (body.type === 'tool_call' ? body.arguments : body.type === 'message' || body.type === 'reasoning' ? body.text : ''))
    .join('')
  const cost = settleInLedger(deps, {
    runId: run.id,
    orgId: run.org_id,
    chatId: run.chat_id,
    apiKeyId: run.api_key_id,
    namespace: run.namespace,
    // A model no longer in the catalogue settles at zero rather than at a guessed price.
    model: model ?? { id: run.model_id, name: run.model_name, rates: { input: '0', output: '0', currency: 'USD' }, tiers: [] },
    markupPercent: manifest.markup_percent ?? '5',
    entryType: run.origin === 'compaction' ? 'compaction' : 'usage',
    // Nobody timed the call, and what reached the vendor is unknown: no uptime sample.
    startedAt: null,
    outcome: runOutcome({
      status: 'failed',
      error: { code: 'interrupted', message: 'interrupted' },
      usage: usageKnownSoFar(manifest.estimated_input_tokens ?? 0, output, true),
      // Its usage never arrived: billed for the estimate, reported as null (docs/guide/billing-and-usage.md).
      usageLost: true,
      // Nobody timed it, and what reached the vendor is unknown (no vendor requests: no uptime sample).
      latencyMs: null,
      streamOpened: true,
    }),
  })
  return cost !== null
}
