import { assign, fromPromise, setup, spawnChild, stopChild } from 'xstate'
import { RunInProgressError } from '../src/domain/errors.ts'
import { ZERO_USAGE } from '../src/domain/pricing/usage.ts'
import type { ChatFacts } from '../src/actors/admit-turn.ts'
import { leaseIsLive } from '../src/store/runs.ts'
import type { Admission, RunResult } from '../src/actors/turn-types.ts'
import type {
  AdmitTurnInput,
  ChatContext,
  CompactHistoryInput,
  ChatEvent,
  ChatInput,
  EagerCompaction,
  LedgerView,
  ReapRunInput,
  SettleRunInput,
  SettleRunOutput,
  StreamRunInput,
} from './chat.types.ts'

/**
 * How a run ends when its provider stream never delivered a result: it answers the customer with an
 * SSE `error` frame (the run was admitted, so its stream is theirs) and is settled like any other,
 * so the chat is never left running with nobody streaming.
 */
const endedWithoutResult = (admission: Admission | null, status: 'cancelled' | 'failed', error: RunResult['error'], inputTokens = 0): RunResult => ({
  status,
  stopReason: null,
  error,
  usage: { ...ZERO_USAGE, input_tokens: inputTokens },
  providerResponseId: null,
  modelServed: null,
  pendingToolCalls: [],
  latencyMs: admission ? Math.max(0, Date.now() - admission.startedAtMs) : 0,
  firstDeltaMs: null,
  streamOpened: true,
  // What reached the vendor is unknown: no uptime sample (spec §2.7 excludes such runs).
  vendorRequests: 0,
})

/** A streamRun that threw (it is written never to): failed, and billed for its packed input. */
const brokenRun = (admission: Admission | null) =>
  endedWithoutResult(admission, 'failed', { code: 'internal', message: 'the run failed unexpectedly' }, admission?.estimatedInputTokens ?? 0)

/**
 * decisions §4, one running run per chat, read from the ledger rather than from this actor's memory:
 * after a restart under another node id (a new container, a LiteFS failover) the ledger may hold a
 * running run that no actor here holds. While its lease is live someone may still stream it, and the
 * turn is refused; once the lease has expired nobody does, and it is settled before the turn runs.
 */
export type LedgerVerdict = 'free' | 'held' | 'orphaned'
export const ledgerVerdict = (ledger: LedgerView | undefined): LedgerVerdict =>
  !ledger?.runningRun ? 'free' : leaseIsLive(ledger.runningRun.leaseExpiresAt, ledger.at) ? 'held' : 'orphaned'
const verdictOf = (event: ChatEvent) => (event.type === 'SUBMIT' ? ledgerVerdict(event.ledger) : 'free')

/** A submission to a chat at rest: refused while the ledger holds a live run, else admitted (after reaping an orphan). */
const admitOrRefuse = [
  { guard: 'ledgerRunIsLive', actions: 'rejectLedgerRun' },
  { guard: 'ledgerRunIsOrphaned', target: '#chat.running.reaping', actions: ['queueSubmission', 'noteOrphan'] },
  { target: 'running', actions: 'queueSubmission' },
] as const

const mustBeProvided = (name: string) => async (): Promise<never> => {
  throw new Error(`chat machine: the actor "${name}" must be provided (src/actors/chat-actor-host.ts)`)
}

/**
 * One chat. The single authority for its ledger: one running run at a time, pending tool calls
 * closed by the next submission, retries only of the latest failed customer run. Provider work is
 * done by invoked actors, provided by the actor host (and by fakes in tests).
 */
export const chatMachine = setup({
  types: {
    context: {} as ChatContext,
    events: {} as ChatEvent,
    input: {} as ChatInput,
  },
  actors: {
    admitTurn: fromPromise<Admission, AdmitTurnInput>(mustBeProvided('admitTurn')),
    compactHistory: fromPromise<Admission, CompactHistoryInput>(mustBeProvided('compactHistory')),
    compactEagerly: fromPromise<void, EagerCompaction>(mustBeProvided('compactEagerly')),
    streamRun: fromPromise<RunResult, StreamRunInput>(mustBeProvided('streamRun')),
    settleRun: fromPromise<SettleRunOutput, SettleRunInput>(mustBeProvided('settleRun')),
    reapRun: fromPromise<ChatFacts, ReapRunInput>(mustBeProvided('reapRun')),
  },
  guards: {
    hasPendingCalls: ({ context }) => context.pendingCalls.length > 0,
    needsCompaction: (_, admission: Admission) => (admission.compaction?.blocks.length ?? 0) > 0,
    /** decisions §5.3 at_fill: the settled run left the history past its fill mark, and no eager work runs yet. */
    fillsEagerThreshold: ({ context }, output: SettleRunOutput) => (output.eager?.blocks.length ?? 0) > 0 && context.eagerCompaction === null,
    cancelsThisRun: ({ context, event }) => event.type === 'CANCEL' && context.admission?.runId === event.runId,
    /** The ledger holds a running run of this chat under a live lease, whoever owns it. */
    ledgerRunIsLive: ({ event }) => verdictOf(event) === 'held',
    /** The ledger holds a running run of this chat whose lease has expired: nobody streams it. */
    ledgerRunIsOrphaned: ({ event }) => verdictOf(event) === 'orphaned',
  },
  actions: {
    queueSubmission: assign({
      queued: ({ event }) => (event.type === 'SUBMIT' ? { submission: event.submission, respond: event.respond } : null),
    }),
    rejectRunInProgress: ({ context, event }) => {
      if (event.type === 'SUBMIT') event.respond({
          kind: 'rejected',
          error: new RunInProgressError(context.admission?.runId ?? context.queued?.submission.runId ?? null),
        })
    },
    /** 409 run_in_progress naming the run the ledger holds (decisions §3, §4). */
    rejectLedgerRun: ({ event }) => {
      if (event.type === 'SUBMIT') event.respond({ kind: 'rejected', error: new RunInProgressError(event.ledger?.runningRun?.id ?? null) })
    },
    noteOrphan: assign({ orphan: ({ event }) => (event.type === 'SUBMIT' ? (event.ledger?.runningRun ?? null) : null) }),
    /** The orphan is settled: the chat's latest run and its open calls as the ledger now has them. */
    refreshFacts: assign((_, facts: ChatFacts) => ({ pendingCalls: facts.pendingCalls, latestCustomerRun: facts.latestCustomerRun, orphan: null })),
    forgetOrphan: assign({ orphan: () => null }),
    startRun: assign({
      admission: (_, admission: Admission) => admission,
      abort: () => new AbortController(),
      // The admission closed every pending call, by result or tombstone.
      pendingCalls: () => [],
      result: () => null,
    }),
    announceRun: ({ context }, admission: Admission) => context.queued?.respond({ kind: 'admitted', admission }),
    rejectSubmission: ({ context }, error: unknown) => context.queued?.respond({ kind: 'rejected', error }),
    forgetSubmission: assign({ queued: () => null }),
    abortRun: ({ context }) => context.abort?.abort(),
    recordResult: assign({ result: (_, result: RunResult) => result }),
    /** The stream opens before the summaries are made: the customer learns what the turn waits for. */
    announceCompacting: ({ context }) => {
      const request = context.admission?.compaction
      if (!context.admission || !request) return
      context.admission.channel.open()
      context.admission.channel.push('compacting', {
        blocks: request.blocks.length - request.inProgressElsewhere,
        in_progress_elsewhere: request.inProgressElsewhere,
      })
    },
    recordEagerCompaction: assign({ eagerCompaction: (_, output: SettleRunOutput) => output.eager }),
    startEagerCompaction: spawnChild('compactEagerly', { id: 'eagerCompaction', input: ({ context }) => context.eagerCompaction! }),
    forgetEagerCompaction: assign({ eagerCompaction: () => null }),
    // A finished child stays among the children until stopped: its input (the blocks) goes with it.
    removeEagerCompaction: stopChild('eagerCompaction'),
    applyCompaction: assign({ admission: (_, admission: Admission) => admission }),
    recordCancelledBeforeStreaming: assign({ result: ({ context }) => endedWithoutResult(context.admission, 'cancelled', null) }),
    recordFailedCompaction: assign({
      result: ({ context }, error: unknown) =>
        endedWithoutResult(context.admission, 'failed', {
          code: 'compaction_failed',
          message: `the history could not be summarised: ${error instanceof Error ? error.message : String(error)}`,
        }),
    }),
    recordBrokenRun: assign({ result: ({ context }) => brokenRun(context.admission) }),
    closeRun: assign(({ context }) => {
      const { admission, result } = context
      if (!admission || !result) return {}
      const createdAt = admission.createdAt
      return {
        pendingCalls: result.pendingToolCalls.map((call) => ({ ...call, created_at: createdAt, run_status: result.status })),
        latestCustomerRun: { id: admission.runId, status: result.status },
        admission: null,
        abort: null,
        result: null,
      }
    }),
  },
}).createMachine({
  id: 'chat',
  context: ({ input }) => ({
    chatId: input.chatId,
    pendingCalls: input.pendingCalls,
    latestCustomerRun: input.latestCustomerRun,
    queued: null,
    admission: null,
    abort: null,
    result: null,
    eagerCompaction: null,
    orphan: null,
  }),
  // Eager compaction (decisions §5.3) runs beside the turns as a child actor: a turn that needs its
  // blocks meanwhile waits for them in `running.compacting` instead of making them again.
  on: {
    'xstate.done.actor.eagerCompaction': { actions: ['forgetEagerCompaction', 'removeEagerCompaction'] },
    'xstate.error.actor.eagerCompaction': { actions: ['forgetEagerCompaction', 'removeEagerCompaction'] },
  },
  initial: 'ready',
  states: {
    ready: {
      always: [{ guard: 'hasPendingCalls', target: 'awaitingToolResults' }, { target: 'idle' }],
    },
    idle: {
      on: { SUBMIT: admitOrRefuse },
    },
    awaitingToolResults: {
      on: { SUBMIT: admitOrRefuse },
    },
    running: {
      initial: 'packing',
      on: { SUBMIT: { actions: 'rejectRunInProgress' } },
      states: {
        // An orphaned run of this chat (its lease expired) is settled as interrupted first.
        reaping: {
          invoke: {
            src: 'reapRun',
            input: ({ context }) => ({ chatId: context.chatId, run: context.orphan! }),
            onDone: { target: 'packing', actions: [{ type: 'refreshFacts', params: ({ event }) => event.output }] },
            onError: {
              target: '#chat.ready',
              actions: [{ type: 'rejectSubmission', params: ({ event }: { event: { error: unknown } }) => event.error }, 'forgetSubmission', 'forgetOrphan'],
            },
          },
        },
        packing: {
          invoke: {
            src: 'admitTurn',
            input: ({ context }) => ({
              facts: { pendingCalls: context.pendingCalls, latestCustomerRun: context.latestCustomerRun },
              submission: context.queued!.submission,
            }),
            onDone: [
              {
                guard: { type: 'needsCompaction', params: ({ event }) => event.output },
                target: 'compacting',
                actions: [
                  { type: 'startRun', params: ({ event }) => event.output },
                  { type: 'announceRun', params: ({ event }) => event.output },
                  'forgetSubmission',
                ],
              },
              {
                target: 'streaming',
                actions: [
                  { type: 'startRun', params: ({ event }) => event.output },
                  { type: 'announceRun', params: ({ event }) => event.output },
                  'forgetSubmission',
                ],
              },
            ],
            onError: {
              target: '#chat.ready',
              actions: [{ type: 'rejectSubmission', params: ({ event }: { event: { error: unknown } }) => event.error }, 'forgetSubmission'],
            },
          },
        },
        // The run is admitted and its stream open; it waits while the oldest history is summarised.
        compacting: {
          entry: 'announceCompacting',
          invoke: {
            src: 'compactHistory',
            input: ({ context }) => ({ admission: context.admission!, signal: context.abort!.signal }),
            onDone: { target: 'streaming', actions: [{ type: 'applyCompaction', params: ({ event }) => event.output }] },
            onError: {
              target: 'settling',
              actions: [{ type: 'recordFailedCompaction', params: ({ event }: { event: { error: unknown } }) => event.error }],
            },
          },
          on: {
            CANCEL: { guard: 'cancelsThisRun', target: 'settling', actions: ['abortRun', 'recordCancelledBeforeStreaming'] },
          },
        },
        streaming: {
          invoke: {
            src: 'streamRun',
            input: ({ context }) => ({ admission: context.admission!, signal: context.abort!.signal }),
            onDone: { target: 'settling', actions: [{ type: 'recordResult', params: ({ event }) => event.output }] },
            onError: { target: 'settling', actions: 'recordBrokenRun' },
          },
          initial: 'live',
          states: {
            live: {
              on: { CANCEL: { guard: 'cancelsThisRun', target: 'cancelling', actions: 'abortRun' } },
            },
            // The provider call is being stopped; its partial output is still written and settled.
            cancelling: {},
          },
        },
        settling: {
          invoke: {
            src: 'settleRun',
            input: ({ context }) => ({ admission: context.admission!, result: context.result! }),
            onDone: [
              {
                guard: { type: 'fillsEagerThreshold', params: ({ event }) => event.output },
                target: '#chat.ready',
                actions: ['closeRun', { type: 'recordEagerCompaction', params: ({ event }) => event.output }, 'startEagerCompaction'],
              },
              { target: '#chat.ready', actions: 'closeRun' },
            ],
            onError: { target: '#chat.ready', actions: 'closeRun' },
          },
        },
      },
    },
  },
})

export type ChatMachine = typeof chatMachine
