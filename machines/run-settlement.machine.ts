import { assign, fromPromise, setup } from 'xstate'
import { mustBeProvided } from './must-be-provided.ts'
import type { RunOutcome } from '../src/domain/runs/run-outcome.ts'
import type { EagerCompaction } from './chat.types.ts'

/**
 * decision 020: a settlement that throws is tried again, after 200 ms, 800 ms and 3.2 s; if the
 * fourth attempt fails too, the run is left to the sweep (its lease released, no longer renewed).
 */
export const SETTLE_RETRIES = 3
export const SETTLE_RETRY_BASE_MS = 200

/** Whose run is settled, and how it ended: the provided `settle` and `release` get it as their input. */
export type RunSettlementInput = { chatId: string; runId: string; outcome: RunOutcome }
/** What a settlement that was written answers: the cost charged (null when the run had ended elsewhere), and eager work it planned. */
export type SettledRun = { cost: string | null; eager: EagerCompaction | null }
export type RunSettlementOutput = ({ kind: 'settled' } & SettledRun) | { kind: 'leftToSweep' }

type RunSettlementContext = RunSettlementInput & { attempts: number; settled: SettledRun | null }

/** Before attempt n + 1 (n ≥ 1 failed so far): 200 ms × 4^(n−1). */
export const settleRetryDelayMs = (attempts: number) => SETTLE_RETRY_BASE_MS * 4 ** Math.max(0, attempts - 1)

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms)
    signal.addEventListener('abort', () => clearTimeout(timer), { once: true })
  })

/**
 * The pause before a settlement is tried again, as an invoked actor rather than a delayed transition:
 * a restored snapshot starts its invoked actors again, but XState does not persist delayed events as data.
 */
export const settleBackoff = fromPromise<void, { ms: number }>(({ input, signal }) => sleep(input.ms, signal))

/**
 * The end of a compaction run (src/actors/run-lifecycle.ts settleOrLeaveToSweep); a customer run's
 * settlement follows the same rule inside the chat machine (its `running.settling` states), without a
 * child machine per turn (src/actors/run-lifecycle.ts): its outcome is
 * written (`settle`, with whatever must go in the same transaction), tried again after a backoff
 * while the run is still this node's and its lease renewed, and when every attempt failed the run is
 * left to the sweep (`release`), which settles it as `interrupted` for the usage known. A settlement
 * is never lost and never written twice: settling is idempotent in the ledger (only the first ending counts).
 */
export const runSettlementMachine = setup({
  types: {
    context: {} as RunSettlementContext,
    input: {} as RunSettlementInput,
    output: {} as RunSettlementOutput,
  },
  actors: {
    settle: fromPromise<SettledRun, RunSettlementInput>(mustBeProvided('run settlement machine', 'settle')),
    release: fromPromise<void, RunSettlementInput>(mustBeProvided('run settlement machine', 'release')),
    backoff: settleBackoff,
  },
  guards: {
    /** The settlement that just failed may be tried again. */
    maySettleAgain: ({ context }) => context.attempts < SETTLE_RETRIES,
  },
  actions: {
    countAttempt: assign({ attempts: ({ context }) => context.attempts + 1 }),
    recordSettled: assign({ settled: (_, output: SettledRun) => output }),
  },
}).createMachine({
  id: 'runSettlement',
  context: ({ input }) => ({ ...input, attempts: 0, settled: null }),
  initial: 'settling',
  states: {
    settling: {
      invoke: {
        src: 'settle',
        input: ({ context }) => ({ chatId: context.chatId, runId: context.runId, outcome: context.outcome }),
        onDone: { target: 'settled', actions: [{ type: 'recordSettled', params: ({ event }) => event.output }] },
        onError: [{ guard: 'maySettleAgain', target: 'waiting', actions: 'countAttempt' }, { target: 'leavingToSweep' }],
      },
    },
    // Waiting out the backoff; the run is still this node's, its lease renewed.
    waiting: {
      invoke: { src: 'backoff', input: ({ context }) => ({ ms: settleRetryDelayMs(context.attempts) }), onDone: 'settling' },
    },
    // Every attempt failed: the lease is released (no longer renewed) so the sweep settles the run.
    // A release that cannot be written changes nothing: nobody renews the lease, so it lapses all the same.
    leavingToSweep: {
      invoke: {
        src: 'release',
        input: ({ context }) => ({ chatId: context.chatId, runId: context.runId, outcome: context.outcome }),
        onDone: 'leftToSweep',
        onError: 'leftToSweep',
      },
    },
    settled: { type: 'final' },
    leftToSweep: { type: 'final' },
  },
  output: ({ context }) => (context.settled ? { kind: 'settled', ...context.settled } : { kind: 'leftToSweep' }),
})

export type RunSettlementMachine = typeof runSettlementMachine
