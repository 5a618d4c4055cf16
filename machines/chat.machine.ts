import { and, assertEvent, assign, emit, enqueueActions, fromPromise, not, raise, setup, spawnChild, stopChild } from 'xstate'
import { mustBeProvided } from './must-be-provided.ts'
import { NotFoundError, RunInProgressError, UnavailableError, ValidationError } from '../src/domain/errors.ts'
import { decideForkCut, forkCutIsSettled } from '../src/domain/chats/fork-cut.ts'
import { partsToErase } from '../src/domain/chats/erase-parts.ts'
import { leaseIsLive } from '../src/domain/runs/lease.ts'
import { MAX_REFITS, mayRefit } from '../src/domain/context/refit.ts'
import { endedAs, type RunOutcome, runOutcome, usageKnownSoFar } from '../src/domain/runs/run-outcome.ts'
import { closeCalls, NOTHING_TO_CLOSE, rejectionError, type AdmissionFacts, type ChatFacts } from '../src/domain/turns/decide-admission.ts'
import {
  rejectionOf,
  SUBMISSION_RULES,
  TURN_RULES,
  type SubmissionRuleName,
  type TurnFacts,
  type TurnRuleName,
} from '../src/domain/turns/admission-rules.ts'
import { SETTLE_RETRIES, settleBackoff, settleRetryDelayMs, type RunSettlementInput, type SettledRun } from './run-settlement.machine.ts'
import type {
  ChatAdmission,
  ChatContext,
  ChatEmitted,
  CompactHistoryInput,
  ChatEvent,
  ChatInput,
  DeleteChatInput,
  AppendPartsInput,
  ErasePartsInput,
  EagerCompaction,
  LedgerView,
  RunAdmission,
  ReadTurnInput,
  ReapRunInput,
  RefitTurnInput,
  WriteTurnInput,
  StreamRunInput,
} from './chat.types.ts'

/**
 * How a run ends when its provider stream never delivered a result: it answers the customer with an
 * SSE `error` frame (the run was admitted, so its stream is theirs) and is settled like any other,
 * so the chat is never left running with nobody streaming.
 */
const endedWithoutResult = (admission: RunAdmission | null, status: 'cancelled' | 'failed', error: RunOutcome['error'], inputTokens = 0): RunOutcome =>
  runOutcome({
    status,
    error,
    usage: usageKnownSoFar(inputTokens, '', true),
    latencyMs: admission ? Math.max(0, Date.now() - admission.startedAtMs) : 0,
    streamOpened: true,
    // What reached the vendor is unknown: no vendor requests, so no uptime sample (docs/decisions/015-vendor-calls-deadlines-retries-uptime.md excludes such runs).
  })

/**
 * decision 020: a run stopped because its chat was deleted ends `cancelled` (the customer stopped it;
 * it says nothing of the provider), with this error on its stream and in the ledger, and no retry hint.
 */
export const CHAT_DELETED = { code: 'chat_deleted', message: 'the chat was deleted while this run streamed' } as const

/** The result of a run its chat's deletion stopped: what it streamed is kept and billed, its ending is the deletion. */
const deletedRun = (result: RunOutcome): RunOutcome =>
  result.status === 'succeeded' ? result : endedAs(result, 'cancelled', { ...CHAT_DELETED })

/**
 * A run its node's shutdown stopped (docs/decisions/009-multi-node-litefs.md) ends `failed` with error
 * `interrupted` (the spec's word, decisions §4), as the sweep records a run nobody streams any more, so it can be retried
 * (`retry_of`); what it streamed is kept and billed. A run that had already succeeded stays so.
 */
const interruptedRun = (result: RunOutcome): RunOutcome =>
  result.status === 'succeeded' ? result : endedAs(result, 'failed', { code: 'interrupted', message: 'interrupted' })

/** The last frame of a run whose node gave up its chats (demoted): its settlement is the new primary's. */
export const relinquishedFrame = (runId: string, message: string) => ({
  code: 'unavailable',
  message,
  details: { run_id: runId },
  hint: 'GET /api/v1/runs/{run_id} shows how it was settled; send input: [] with retry_of set to this run to try again',
})

/** A streamRun that threw (it is written never to): failed, and billed for its packed input. */
const brokenRun = (admission: RunAdmission | null) =>
  endedWithoutResult(admission, 'failed', { code: 'internal', message: 'the run failed unexpectedly' }, admission?.estimatedInputTokens ?? 0)

/**
 * docs/guide/runs.md, one running run per chat, read from the ledger rather than from this actor's memory:
 * after a restart under another node id (a new container, a LiteFS failover) the ledger may hold a
 * running run that no actor here holds. While its lease is live someone may still stream it, and the
 * turn is refused; once the lease has expired nobody does, and it is settled before the turn runs.
 */
export type LedgerVerdict = 'free' | 'held' | 'orphaned'
export const ledgerVerdict = (ledger: LedgerView | undefined): LedgerVerdict =>
  !ledger?.runningRun ? 'free' : leaseIsLive(ledger.runningRun.leaseExpiresAt, ledger.at) ? 'held' : 'orphaned'
/**
 * The ledger the sender read decides; without one (a sender that read nothing), a run this actor
 * knows to be outstanding stands for it, with its lease as last known.
 */
const verdictOf = (context: ChatContext, event: ChatEvent): LedgerVerdict => {
  if (event.type !== 'SUBMIT') return 'free'
  if (event.ledger) return ledgerVerdict(event.ledger)
  return context.outstanding ? ledgerVerdict({ runningRun: context.outstanding, at: event.at }) : 'free'
}

/** The facts a submission is decided on: the chat's, as this actor holds them, and the ledger's the sender read. */
const factsOf = (context: ChatContext, ledger: LedgerView | undefined): AdmissionFacts => ({
  pendingCalls: context.pendingCalls,
  latestCustomerRun: context.latestCustomerRun,
  retried: ledger?.retried ?? null,
  keyUsedBy: ledger?.keyUsedBy ?? null,
})

/**
 * docs/guide/runs.md, in order, for a submission to a chat at rest: refused while the ledger holds a live
 * run; an orphan is reaped first (and the submission decided again on what the ledger then says);
 * then the submission rules (src/domain/turns/admission-rules.ts SUBMISSION_RULES: retry,
 * idempotency, tool ids), one guard each, in the table's order, each refusing with its own rejection.
 * What passes them all is read (readTurn), decided by the turn rules, and written (writeTurn).
 */
const decideSubmission = [
  { guard: 'ledgerRunIsLive', actions: 'rejectLedgerRun' },
  { guard: 'ledgerRunIsOrphaned', target: '#chat.running.reaping', actions: ['queueSubmission', 'noteOrphan'] },
  ...SUBMISSION_RULES.map((rule) => ({ guard: rule.name, actions: { type: 'rejectBrokenRule', params: { rule: rule.name } } }) as const),
] as const

/**
 * The turn rules (TURN_RULES: the running-run cap, context too large, the 402), on the facts readTurn
 * read, one guard each in the table's order: a broken one refuses the turn and nothing is written.
 * A DELETE that came meanwhile finds the turn refused as the chat's (404), and the chat is deleted.
 * What passes them all is written.
 */
const decideTurn = [
  {
    guard: and(['deletionRequested', 'breaksATurnRule']),
    target: '#chat.deleting',
    actions: ['rejectSubmissionAsDeleted', 'forgetSubmission', 'forgetInterruption'],
  },
  ...TURN_RULES.map(
    (rule) =>
      ({
        guard: rule.name,
        target: '#chat.ready',
        actions: [{ type: 'rejectBrokenTurnRule', params: { rule: rule.name } }, 'forgetSubmission', 'forgetInterruption'],
      }) as const,
  ),
  { target: 'writing' },
] as const

/** At rest with nothing pending: a submission that passes the rules is admitted. */
const admitOrRefuse = [...decideSubmission, { target: 'running', actions: 'queueSubmission' }] as const

/** At rest with calls pending: one that passes the rules closes every pending call, by result or tombstone. */
const admitClosingCallsOrRefuse = [...decideSubmission, { target: 'running', actions: ['queueSubmission', 'closePendingCalls'] }] as const

/**
 * A submission while the ledger shows a run outstanding (decision 020): refused while its lease is
 * live; else the run is reaped (settled as interrupted, or found settled by the sweep meanwhile) and
 * the chat's facts read again before the turn is packed.
 */
const reapOrRefuse = [
  { guard: 'ledgerRunIsLive', actions: 'rejectLedgerRun' },
  { target: '#chat.running.reaping', actions: ['queueSubmission', 'noteOrphan'] },
] as const

/** A DELETE at rest: the chat's rows go at once. */
const deleteAtRest = { target: '#chat.deleting', actions: 'addDeleter' } as const

/** The sweep's find, at rest: the actor settles the run itself, so what it knows follows (decision 020). */
const sweepAtRest = { target: '#chat.sweeping', actions: 'noteSweptRun' } as const

/** Whether a SUBMIT breaks the named submission rule, on the chat's facts and the ledger's the sender read. */
const submissionRuleBreaks = (name: SubmissionRuleName, context: ChatContext, event: ChatEvent): boolean => {
  const rule = SUBMISSION_RULES.find((r) => r.name === name)!
  return event.type === 'SUBMIT' && rule.breaks(factsOf(context, event.ledger), event.submission, new Date(event.at))
}

/** Whether the queued turn breaks the named turn rule, on the facts readTurn read (none read: it breaks none). */
const turnRuleBreaks = (name: TurnRuleName, context: ChatContext): boolean => {
  const queued = context.queued
  const rule = TURN_RULES.find((r) => r.name === name)!
  return queued?.turn != null && rule.breaks(queued.turn, queued.submission, new Date(queued.at))
}

/** A turn that could not be read or written is refused; a chat being deleted answers it 404 and goes. */
const refuseQueuedTurn = [
  { guard: 'deletionRequested', target: '#chat.deleting', actions: ['rejectSubmissionAsDeleted', 'forgetSubmission', 'forgetInterruption'] },
  {
    target: '#chat.ready',
    actions: [{ type: 'rejectSubmission', params: ({ event }: { event: { error: unknown } }) => event.error }, 'forgetSubmission', 'forgetInterruption'],
  },
] as const

/** The written run is announced to its caller and becomes the chat's run. */
const startAdmittedRun = [
  { type: 'announceRun', params: ({ event }: { event: { output: ChatAdmission } }) => event.output },
  { type: 'startRun', params: ({ event }: { event: { output: ChatAdmission } }) => event.output },
] as const

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
    emitted: {} as ChatEmitted,
  },
  actors: {
    readTurn: fromPromise<TurnFacts, ReadTurnInput>(mustBeProvided('chat machine', 'readTurn')),
    writeTurn: fromPromise<ChatAdmission, WriteTurnInput>(mustBeProvided('chat machine', 'writeTurn')),
    compactHistory: fromPromise<ChatAdmission, CompactHistoryInput>(mustBeProvided('chat machine', 'compactHistory')),
    compactEagerly: fromPromise<void, EagerCompaction>(mustBeProvided('chat machine', 'compactEagerly')),
    streamRun: fromPromise<RunOutcome, StreamRunInput>(mustBeProvided('chat machine', 'streamRun')),
    refitTurn: fromPromise<ChatAdmission, RefitTurnInput>(mustBeProvided('chat machine', 'refitTurn')),
    // decision 020: a run's settlement is written (settleRun), tried again after a backoff, and
    // failing that the run is left to the sweep (releaseRun): the states of `running.settling`.
    settleRun: fromPromise<SettledRun, RunSettlementInput>(mustBeProvided('chat machine', 'settleRun')),
    settleBackoff,
    releaseRun: fromPromise<void, RunSettlementInput>(mustBeProvided('chat machine', 'releaseRun')),
    reapRun: fromPromise<ChatFacts, ReapRunInput>(mustBeProvided('chat machine', 'reapRun')),
    deleteChat: fromPromise<void, DeleteChatInput>(mustBeProvided('chat machine', 'deleteChat')),
    appendParts: fromPromise<number[], AppendPartsInput>(mustBeProvided('chat machine', 'appendParts')),
    eraseParts: fromPromise<ChatFacts, ErasePartsInput>(mustBeProvided('chat machine', 'eraseParts')),
  },
  guards: {
    /** docs/guide/tool-calls.md: the latest customer run left tool calls no submission has closed; the next one closes them. */
    awaitsToolResults: ({ context }) => context.pendingCalls.length > 0,
    // One guard per rule of the admission tables (src/domain/turns/admission-rules.ts), named as the
    // rule and checking it (test/machines/chat.machine.test.ts checks that each table rule has one).
    retriesMissingRun: ({ context, event }) => submissionRuleBreaks('retriesMissingRun', context, event),
    retriesOtherThanLatestFailedRun: ({ context, event }) => submissionRuleBreaks('retriesOtherThanLatestFailedRun', context, event),
    reusesIdempotencyKey: ({ context, event }) => submissionRuleBreaks('reusesIdempotencyKey', context, event),
    answersUnknownToolCall: ({ context, event }) => submissionRuleBreaks('answersUnknownToolCall', context, event),
    exceedsRunningRunCap: ({ context }) => turnRuleBreaks('exceedsRunningRunCap', context),
    choosesToolNotOffered: ({ context }) => turnRuleBreaks('choosesToolNotOffered', context),
    contextIsTooLarge: ({ context }) => turnRuleBreaks('contextIsTooLarge', context),
    cannotAffordTurn: ({ context }) => turnRuleBreaks('cannotAffordTurn', context),
    /** Some turn rule breaks: the turn is refused, whichever. */
    breaksATurnRule: ({ context }) => TURN_RULES.some((rule) => turnRuleBreaks(rule.name, context)),
    /** docs/guide/tool-calls.md: the run that just settled left tool calls; they are pending until the next submission. */
    leftToolCalls: ({ context }) => (context.result?.pendingToolCalls.length ?? 0) > 0,
    needsCompaction: (_, admission: ChatAdmission) => (admission.compaction?.blocks ?? 0) > 0,
    /**
     * docs/decisions/044-context-refusal-refit.md: the vendor refused the run's request for its context
     * before the first byte, and the turn was not packed again yet: it is, once (MAX_REFITS), with
     * the correction the refusal taught, before the client sees anything.
     */
    mayRefitAfterContextRefusal: ({ context }, outcome: RunOutcome) => mayRefit(context.admission?.refits ?? MAX_REFITS, outcome.contextRefusal),
    /** docs/guide/context.md at_fill: the settled run left the history past its fill mark, and no eager work runs yet. */
    fillsEagerThreshold: ({ context }, output: SettledRun) => (output.eager?.blocks.length ?? 0) > 0 && context.eagerCompaction === null,
    /** decision 020: the settlement that just failed may be tried again (SETTLE_RETRIES after the first attempt). */
    maySettleAgain: ({ context }) => context.settleAttempts < SETTLE_RETRIES,
    cancelsThisRun: ({ context, event }) => event.type === 'CANCEL' && context.admission?.runId === event.runId,
    /** The ledger holds a running run of this chat under a live lease, whoever owns it. */
    ledgerRunIsLive: ({ context, event }) => verdictOf(context, event) === 'held',
    /** The ledger holds a running run of this chat whose lease has expired: nobody streams it. */
    ledgerRunIsOrphaned: ({ context, event }) => verdictOf(context, event) === 'orphaned',
    /** Hydrated with, or left with, a run the ledger shows running and this actor does not stream. */
    hasOutstandingRun: ({ context }) => context.outstanding !== null,
    /** A DELETE came while the chat was busy: it is carried out once the run is settled. */
    deletionRequested: ({ context }) => context.deleters.length > 0,
    /** This node is shutting down: the run is stopped and settled as interrupted (INTERRUPT). */
    interruptionRequested: ({ context }) => context.interruption !== null,
    /** docs/decisions/037-fork.md: the fork's cut lies within the ledger's settled parts (absent: all of them). */
    forkCutIsSettled: ({ event }) => event.type === 'FORK' && forkCutIsSettled(event.upToOrdinal, event.ledger),
  },
  actions: {
    queueSubmission: assign({
      queued: ({ event }) =>
        event.type === 'SUBMIT'
          ? { requestId: event.requestId, submission: event.submission, at: event.at, ledger: event.ledger, closing: NOTHING_TO_CLOSE, turn: null }
          : null,
    }),
    /** The submission broke the submission rule its guard names: that rule's rejection; the HTTP layer maps the error to its status. */
    rejectBrokenRule: emit(({ context, event }, params: { rule: SubmissionRuleName }) => {
      assertEvent(event, 'SUBMIT')
      const rejection = rejectionOf(SUBMISSION_RULES, params.rule, factsOf(context, event.ledger), event.submission, new Date(event.at))
      return { type: 'rejected' as const, requestId: event.requestId, error: rejectionError(rejection) }
    }),
    /** The turn readTurn read broke the turn rule its guard names: that rule's rejection (429, 422 context_too_large, 402). */
    rejectBrokenTurnRule: emit(({ context }, params: { rule: TurnRuleName }) => {
      const queued = context.queued!
      const rejection = rejectionOf(TURN_RULES, params.rule, queued.turn!, queued.submission, new Date(queued.at))
      return { type: 'rejected' as const, requestId: queued.requestId, error: rejectionError(rejection) }
    }),
    /** What readTurn read, as data: the turn rules decide on it, and writeTurn writes the turn it passed. */
    noteTurnFacts: assign({ queued: ({ context }, turn: TurnFacts) => context.queued && { ...context.queued, turn } }),
    /**
     * docs/guide/tool-calls.md: the submission closes every pending call, by its tool_result or by a tombstone
     * (\`expired\` past 24 h, \`cancelled\` for a cancelled or failed run's call, \`abandoned\`
     * otherwise), which admission writes before its input. The calls stay pending here until the run
     * is admitted (startRun): a refused submission closes nothing.
     */
    closePendingCalls: assign({
      queued: ({ context }) => context.queued && { ...context.queued, closing: closeCalls(context, context.queued.submission, new Date(context.queued.at)) },
    }),
    /** The orphan is reaped: the submission is decided again, on the chat's facts as the ledger now has them. */
    resubmitAfterReaping: raise(({ context }) => ({
      type: 'SUBMIT' as const,
      requestId: context.queued!.requestId,
      submission: context.queued!.submission,
      at: context.queued!.at,
      ledger: context.queued!.ledger && { ...context.queued!.ledger, runningRun: null },
    })),
    rejectRunInProgress: emit(({ context, event }) => {
      assertEvent(event, 'SUBMIT')
      const error = new RunInProgressError(context.admission?.runId ?? context.queued?.submission.runId ?? null)
      return { type: 'rejected' as const, requestId: event.requestId, error }
    }),
    /** 409 run_in_progress naming the run the ledger holds (docs/guide/errors.md, §4). */
    rejectLedgerRun: emit(({ context, event }) => {
      assertEvent(event, 'SUBMIT')
      const error = new RunInProgressError(event.ledger?.runningRun?.id ?? context.outstanding?.id ?? null)
      return { type: 'rejected' as const, requestId: event.requestId, error }
    }),
    /** A turn for a chat being deleted: it is not found (decision 020). */
    rejectDeletedChat: emit(({ context, event }) => {
      assertEvent(event, 'SUBMIT')
      return { type: 'rejected' as const, requestId: event.requestId, error: new NotFoundError(`chat ${context.chatId} not found`) }
    }),
    noteOrphan: assign({
      orphan: ({ context, event }) => (event.type === 'SUBMIT' ? (event.ledger?.runningRun ?? context.outstanding) : null),
    }),
    /** The orphan is settled: the chat's latest run and its open calls as the ledger now has them. */
    refreshFacts: assign((_, facts: ChatFacts) => ({
      pendingCalls: facts.pendingCalls,
      latestCustomerRun: facts.latestCustomerRun,
      orphan: null,
      outstanding: null,
    })),
    forgetOrphan: assign({ orphan: () => null }),
    noteSweptRun: assign({ orphan: ({ event }) => (event.type === 'SWEEP' ? event.run : null) }),
    /** The sweep's run could not be settled: it is still running in the ledger, for the next sweep. */
    keepSweptRunOutstanding: assign(({ context }) => ({ outstanding: context.orphan ?? context.outstanding, orphan: null })),
    /** A turn while the sweep's run is being settled: it is still running. */
    rejectSweptRun: emit(({ context, event }) => {
      assertEvent(event, 'SUBMIT')
      return { type: 'rejected' as const, requestId: event.requestId, error: new RunInProgressError(context.orphan?.id ?? null) }
    }),
    /**
     * The submission is admitted and written: it is this run now, and the calls it closed are closed
     * (docs/guide/tool-calls.md: closePendingCalls decided how; admission wrote the tombstones with its input).
     */
    startRun: assign({
      admission: (_, admission: ChatAdmission) => admission,
      result: () => null,
      queued: () => null,
      pendingCalls: () => [],
    }),
    announceRun: emit(({ context }, admission: ChatAdmission) => ({ type: 'admitted' as const, requestId: context.queued!.requestId, runId: admission.runId })),
    rejectSubmission: emit(({ context }, error: unknown) => ({ type: 'rejected' as const, requestId: context.queued!.requestId, error })),
    rejectSubmissionAsDeleted: emit(({ context }) => ({
      type: 'rejected' as const,
      requestId: context.queued!.requestId,
      error: new NotFoundError(`chat ${context.chatId} not found`),
    })),
    /** decision 055: the items wait in the context, plain data, while appendParts writes them. */
    queueAppend: assign({
      appending: ({ event }) => {
        assertEvent(event, 'APPEND')
        return { requestId: event.requestId, parts: event.parts }
      },
    }),
    respondAppended: enqueueActions(({ context, enqueue }, ordinals: number[]) => {
      if (context.appending) enqueue.emit({ type: 'appendAnswered', requestId: context.appending.requestId, outcome: { kind: 'appended', ordinals } })
      enqueue.assign({ appending: null })
    }),
    respondAppendFailed: enqueueActions(({ context, enqueue }, error: unknown) => {
      if (context.appending) enqueue.emit({ type: 'appendAnswered', requestId: context.appending.requestId, outcome: { kind: 'refused', error } })
      enqueue.assign({ appending: null })
    }),
    /** A run is in progress (or left running): items wait until it has ended, as a turn does (409). */
    refuseAppendWhileRunning: emit(({ context, event }) => {
      assertEvent(event, 'APPEND')
      const error = new RunInProgressError(context.admission?.runId ?? context.outstanding?.id ?? context.orphan?.id ?? null)
      return { type: 'appendAnswered' as const, requestId: event.requestId, outcome: { kind: 'refused' as const, error } }
    }),
    /** docs/guide/tool-calls.md: a pending call's result must follow it; items would come between them. */
    refuseAppendWhileCallsPending: emit(({ context, event }) => {
      assertEvent(event, 'APPEND')
      const ids = context.pendingCalls.map((c) => c.tool_use_id).join(', ')
      const error = new ValidationError([{ in: 'body', pointer: '/items', message: `the latest response's function calls (${ids}) are pending: answer them in a response first` }])
      return { type: 'appendAnswered' as const, requestId: event.requestId, outcome: { kind: 'refused' as const, error } }
    }),
    /**
     * decision 056: the part, and the rest of its tool call's exchange (partsToErase), wait in the
     * context, plain data, while eraseParts erases them.
     */
    queueErasure: assign({
      erasing: ({ event }) => {
        assertEvent(event, 'ERASE')
        return { requestId: event.requestId, ordinals: partsToErase(event.target, event.exchange) }
      },
    }),
    respondErased: enqueueActions(({ context, enqueue }) => {
      if (context.erasing) enqueue.emit({ type: 'eraseAnswered', requestId: context.erasing.requestId, outcome: { kind: 'erased', ordinals: context.erasing.ordinals } })
      enqueue.assign({ erasing: null })
    }),
    respondEraseFailed: enqueueActions(({ context, enqueue }, error: unknown) => {
      if (context.erasing) enqueue.emit({ type: 'eraseAnswered', requestId: context.erasing.requestId, outcome: { kind: 'refused', error } })
      enqueue.assign({ erasing: null })
    }),
    /** A run is in progress (or left running): its parts are not settled, and packing reads the chat: the erasure waits (409). */
    refuseErasureWhileRunning: emit(({ context, event }) => {
      assertEvent(event, 'ERASE')
      const error = new RunInProgressError(context.admission?.runId ?? context.outstanding?.id ?? context.orphan?.id ?? null)
      return { type: 'eraseAnswered' as const, requestId: event.requestId, outcome: { kind: 'refused' as const, error } }
    }),
    /** Items are being added or erased: one change of the ledger at rest at a time. */
    refuseErasureWhileEditing: emit(({ event }) => {
      assertEvent(event, 'ERASE')
      return { type: 'eraseAnswered' as const, requestId: event.requestId, outcome: { kind: 'refused' as const, error: new UnavailableError('items of this chat are being changed; try again', undefined, 'retry shortly') } }
    }),
    refuseErasureOfDeletedChat: emit(({ event }) => {
      assertEvent(event, 'ERASE')
      return { type: 'eraseAnswered' as const, requestId: event.requestId, outcome: { kind: 'refused' as const, error: new NotFoundError('chat not found') } }
    }),
    refuseAppendWhileErasing: emit(({ event }) => {
      assertEvent(event, 'APPEND')
      return { type: 'appendAnswered' as const, requestId: event.requestId, outcome: { kind: 'refused' as const, error: new UnavailableError('items of this chat are being changed; try again', undefined, 'retry shortly') } }
    }),
    rejectWhileErasing: emit(({ event }) => {
      assertEvent(event, 'SUBMIT')
      return { type: 'rejected' as const, requestId: event.requestId, error: new UnavailableError('items of this chat are being changed; try again', undefined, 'retry shortly') }
    }),
    refuseAppendWhileAppending: emit(({ event }) => {
      assertEvent(event, 'APPEND')
      return { type: 'appendAnswered' as const, requestId: event.requestId, outcome: { kind: 'refused' as const, error: new UnavailableError('items are being added to this chat; try again', undefined, 'retry shortly') } }
    }),
    refuseAppendToDeletedChat: emit(({ event }) => {
      assertEvent(event, 'APPEND')
      return { type: 'appendAnswered' as const, requestId: event.requestId, outcome: { kind: 'refused' as const, error: new NotFoundError('chat not found') } }
    }),
    rejectWhileAppending: emit(({ event }) => {
      assertEvent(event, 'SUBMIT')
      return { type: 'rejected' as const, requestId: event.requestId, error: new UnavailableError('items are being added to this chat; try again', undefined, 'retry shortly') }
    }),
    addDeleter: assign({
      deleters: ({ context, event }) => (event.type === 'DELETE' ? [...context.deleters, event.requestId] : context.deleters),
    }),
    /** The first DELETE deleted the chat; those that came meanwhile find it gone (a repeat answers 404). */
    respondDeleted: enqueueActions(({ context, enqueue }) => {
      context.deleters.forEach((requestId, i) => enqueue.emit({ type: 'deleteAnswered', requestId, outcome: i === 0 ? { kind: 'deleted' } : { kind: 'gone' } }))
      enqueue.assign({ deleters: [] })
    }),
    respondDeleteFailed: enqueueActions(({ context, enqueue }, error: unknown) => {
      for (const requestId of context.deleters) enqueue.emit({ type: 'deleteAnswered', requestId, outcome: { kind: 'failed', error } })
      enqueue.assign({ deleters: [] })
    }),
    /** The run's result once its chat's deletion stopped it. */
    markDeleted: assign({ result: ({ context }) => (context.result ? deletedRun(context.result) : null) }),
    recordDeletedBeforeStreaming: assign({ result: ({ context }) => endedWithoutResult(context.admission, 'cancelled', { ...CHAT_DELETED }) }),
    /**
     * Settlement kept failing: the run is left `running` in the ledger, its lease released, for the
     * sweep (decision 020). The chat knows it is outstanding and admits no turn past it.
     */
    leaveRunToSweep: assign(({ context }) => {
      const { admission } = context
      if (!admission) return {}
      return {
        // Released: its lease is over (any past instant says so; its creation is one).
        outstanding: { id: admission.runId, leaseOwner: null, leaseExpiresAt: admission.createdAt },
        latestCustomerRun: { id: admission.runId, status: 'running' as const },
        pendingCalls: [],
        admission: null,
        result: null,
        interruption: null,
      }
    }),
    /** docs/decisions/037-fork.md: the cut is answered; the host copies the rows up to it in one transaction. */
    answerForkCut: emit(({ event }) => {
      assertEvent(event, 'FORK')
      const cut = decideForkCut(event.upToOrdinal, event.ledger)
      const upTo = cut.kind === 'cut' ? cut.upTo : null
      return { type: 'forkAnswered' as const, requestId: event.requestId, outcome: { kind: 'cut' as const, upTo } }
    }),
    /** 422 at /up_to_ordinal: beyond the ledger, below 1, or inside the running run's unsettled parts. */
    refuseForkCut: emit(({ event }) => {
      assertEvent(event, 'FORK')
      const cut = decideForkCut(event.upToOrdinal, event.ledger)
      const message = cut.kind === 'refused' ? cut.message : 'is not a settled ordinal of the ledger'
      const error = new ValidationError([{ in: 'body', pointer: '/up_to_ordinal', message }])
      return { type: 'forkAnswered' as const, requestId: event.requestId, outcome: { kind: 'refused' as const, error } }
    }),
    /** A fork of a chat being deleted: it is not found (decision 020). */
    refuseForkOfDeletedChat: emit(({ context, event }) => {
      assertEvent(event, 'FORK')
      const error = new NotFoundError(`chat ${context.chatId} not found`)
      return { type: 'forkAnswered' as const, requestId: event.requestId, outcome: { kind: 'refused' as const, error } }
    }),
    forgetSubmission: assign({ queued: () => null }),
    forgetInterruption: assign({ interruption: () => null }),
    noteInterruption: assign({ interruption: ({ event }) => (event.type === 'INTERRUPT' ? event.message : null) }),
    /** The run's result once its node's shutdown stopped it. */
    markInterrupted: assign({ result: ({ context }) => (context.result ? interruptedRun(context.result) : null) }),
    recordInterruptedBeforeStreaming: assign({
      result: ({ context }) => interruptedRun(endedWithoutResult(context.admission, 'failed', null, context.admission?.estimatedInputTokens ?? 0)),
    }),
    /** RELINQUISH: the running run's stream ends here with `unavailable`; nothing more is written for it by this node. */
    endStreamAsUnavailable: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, 'RELINQUISH')
      if (context.admission) enqueue.emit({ type: 'relinquished', runId: context.admission.runId, message: event.message })
    }),
    /** RELINQUISH: a submission being admitted and DELETEs waiting are refused with 503; they may be sent again. */
    refuseWaitersAsUnavailable: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, 'RELINQUISH')
      const error = () => new UnavailableError(event.message, undefined, 'try again shortly')
      if (context.queued) enqueue.emit({ type: 'rejected', requestId: context.queued.requestId, error: error() })
      for (const requestId of context.deleters) enqueue.emit({ type: 'deleteAnswered', requestId, outcome: { kind: 'failed', error: error() } })
    }),
    /** Stops the run's provider call; the host aborts it (its output so far is kept and settled). */
    abortRun: enqueueActions(({ context, enqueue }) => {
      if (context.admission) enqueue.emit({ type: 'abortRequested', runId: context.admission.runId })
    }),
    recordResult: assign({ result: (_, result: RunOutcome) => result }),
    /** The stream opens before the summaries are made: the customer learns what the turn waits for. */
    announceCompacting: enqueueActions(({ context, enqueue }) => {
      const request = context.admission?.compaction
      if (!context.admission || !request) return
      enqueue.emit({ type: 'compacting', runId: context.admission.runId, blocks: request.blocks - request.inProgressElsewhere, inProgressElsewhere: request.inProgressElsewhere })
    }),
    recordEagerCompaction: assign({ eagerCompaction: (_, output: SettledRun) => output.eager }),
    countSettleAttempt: assign({ settleAttempts: ({ context }) => context.settleAttempts + 1 }),
    forgetSettleAttempts: assign({ settleAttempts: () => 0 }),
    startEagerCompaction: spawnChild('compactEagerly', { id: 'eagerCompaction', input: ({ context }) => context.eagerCompaction! }),
    forgetEagerCompaction: assign({ eagerCompaction: () => null }),
    // A finished child stays among the children until stopped: its input (the blocks) goes with it.
    removeEagerCompaction: stopChild('eagerCompaction'),
    applyCompaction: assign({ admission: (_, admission: ChatAdmission) => admission }),
    /** The turn packed again after a context refusal: the refused request's result is set aside, unsent to anyone. */
    applyRefit: assign({ admission: (_, admission: ChatAdmission) => admission, result: () => null }),
    recordCancelledBeforeStreaming: assign({ result: ({ context }) => endedWithoutResult(context.admission, 'cancelled', null) }),
    recordFailedCompaction: assign({
      result: ({ context }, error: unknown) =>
        endedWithoutResult(context.admission, 'failed', {
          code: 'compaction_failed',
          message: `the history could not be summarised: ${error instanceof Error ? error.message : String(error)}`,
        }),
    }),
    recordBrokenRun: assign({ result: ({ context }) => brokenRun(context.admission) }),
    /**
     * docs/guide/tool-calls.md: the calls of the run that just ended are pending until the next submission closes
     * them, with the run's status (a cancelled or failed run's are tombstoned `cancelled`). When they
     * were made is the ledger's to say (their tool_call parts), read at admission as at hydration.
     */
    holdCallsOfEndedRun: assign({
      pendingCalls: ({ context }) =>
        context.result ? context.result.pendingToolCalls.map((call) => ({ ...call, run_status: context.result!.status })) : context.pendingCalls,
    }),
    closeRun: assign(({ context }) => {
      const { admission, result } = context
      if (!admission || !result) return {}
      return {
        latestCustomerRun: { id: admission.runId, status: result.status },
        admission: null,
        result: null,
        interruption: null,
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
    result: null,
    eagerCompaction: null,
    orphan: null,
    outstanding: input.outstanding ?? null,
    deleters: [],
    appending: null,
    erasing: null,
    interruption: null,
    settleAttempts: 0,
  }),
  // Eager compaction (docs/guide/context.md) runs beside the turns as a child actor: a turn that needs its
  // blocks meanwhile waits for them in `running.compacting` instead of making them again.
  on: {
    'xstate.done.actor.eagerCompaction': { actions: ['forgetEagerCompaction', 'removeEagerCompaction'] },
    'xstate.error.actor.eagerCompaction': { actions: ['forgetEagerCompaction', 'removeEagerCompaction'] },
    // Demoted (docs/decisions/009-multi-node-litefs.md): whatever it was doing, the chat is no longer this node's.
    RELINQUISH: { target: '.relinquished', actions: ['abortRun', 'endStreamAsUnavailable', 'refuseWaitersAsUnavailable'] },
    // docs/decisions/037-fork.md: in any state, a running run included; only settled parts are copied.
    FORK: [{ guard: 'forkCutIsSettled', actions: 'answerForkCut' }, { actions: 'refuseForkCut' }],
  },
  initial: 'ready',
  states: {
    ready: {
      always: [
        { guard: 'hasOutstandingRun', target: 'outstanding' },
        { guard: 'awaitsToolResults', target: 'awaitingToolResults' },
        { target: 'idle' },
      ],
    },
    // At rest with no tool call pending.
    idle: {
      on: {
        SUBMIT: admitOrRefuse,
        DELETE: deleteAtRest,
        SWEEP: sweepAtRest,
        APPEND: { target: 'appending', actions: 'queueAppend' },
        ERASE: { target: 'erasing', actions: 'queueErasure' },
      },
    },
    // decision 055: items written to the ledger outside a turn, in one transaction, then at rest again.
    appending: {
      on: {
        SUBMIT: { actions: 'rejectWhileAppending' },
        APPEND: { actions: 'refuseAppendWhileAppending' },
        ERASE: { actions: 'refuseErasureWhileEditing' },
        DELETE: { actions: 'addDeleter' },
      },
      invoke: {
        src: 'appendParts',
        input: ({ context }) => ({ chatId: context.chatId, parts: context.appending!.parts }),
        onDone: [
          { guard: 'deletionRequested', target: 'deleting', actions: [{ type: 'respondAppended', params: ({ event }) => event.output }] },
          { target: 'ready', actions: [{ type: 'respondAppended', params: ({ event }) => event.output }] },
        ],
        onError: [
          { guard: 'deletionRequested', target: 'deleting', actions: [{ type: 'respondAppendFailed', params: ({ event }: { event: { error: unknown } }) => event.error }] },
          { target: 'ready', actions: [{ type: 'respondAppendFailed', params: ({ event }: { event: { error: unknown } }) => event.error }] },
        ],
      },
    },
    // decision 056: parts erased from the ledger at rest, in one transaction, with the summaries written
    // from them; the chat's facts are read again (an erased call is no longer pending), then at rest.
    erasing: {
      on: {
        SUBMIT: { actions: 'rejectWhileErasing' },
        APPEND: { actions: 'refuseAppendWhileErasing' },
        ERASE: { actions: 'refuseErasureWhileEditing' },
        DELETE: { actions: 'addDeleter' },
      },
      invoke: {
        src: 'eraseParts',
        input: ({ context }) => ({ chatId: context.chatId, ordinals: context.erasing!.ordinals }),
        onDone: [
          { guard: 'deletionRequested', target: 'deleting', actions: [{ type: 'refreshFacts', params: ({ event }) => event.output }, 'respondErased'] },
          { target: 'ready', actions: [{ type: 'refreshFacts', params: ({ event }) => event.output }, 'respondErased'] },
        ],
        onError: [
          { guard: 'deletionRequested', target: 'deleting', actions: [{ type: 'respondEraseFailed', params: ({ event }: { event: { error: unknown } }) => event.error }] },
          { target: 'ready', actions: [{ type: 'respondEraseFailed', params: ({ event }: { event: { error: unknown } }) => event.error }] },
        ],
      },
    },
    // At rest with the latest customer run's tool calls pending (docs/guide/tool-calls.md): the next admitted
    // submission closes every one of them (closePendingCalls), by its tool_result or a tombstone.
    // A tool_result for any other id is refused 422 unknown_tool_use_id.
    awaitingToolResults: {
      on: {
        SUBMIT: admitClosingCallsOrRefuse,
        DELETE: deleteAtRest,
        SWEEP: sweepAtRest,
        APPEND: { actions: 'refuseAppendWhileCallsPending' },
        ERASE: { target: 'erasing', actions: 'queueErasure' },
      },
    },
    // The ledger shows a run of this chat `running` that no actor here streams (decision 020).
    outstanding: {
      on: {
        SUBMIT: reapOrRefuse,
        DELETE: deleteAtRest,
        SWEEP: sweepAtRest,
        APPEND: { actions: 'refuseAppendWhileRunning' },
        ERASE: { actions: 'refuseErasureWhileRunning' },
      },
    },
    // The sweep's run is settled as interrupted by the actor (reapRun, as a turn's reaping does), and
    // the chat's facts read again: its tool calls close as a failed run's. A failure waits for the
    // next sweep. While running, the actor settles its own run itself, and ignores the sweep.
    sweeping: {
      on: {
        SUBMIT: { actions: 'rejectSweptRun' },
        DELETE: { actions: 'addDeleter' },
        APPEND: { actions: 'refuseAppendWhileRunning' },
        ERASE: { actions: 'refuseErasureWhileRunning' },
      },
      invoke: {
        src: 'reapRun',
        input: ({ context }) => ({ chatId: context.chatId, run: context.orphan! }),
        onDone: [
          { guard: 'deletionRequested', target: 'deleting', actions: [{ type: 'refreshFacts', params: ({ event }) => event.output }] },
          { target: 'ready', actions: [{ type: 'refreshFacts', params: ({ event }) => event.output }] },
        ],
        onError: [
          { guard: 'deletionRequested', target: 'deleting', actions: 'keepSweptRunOutstanding' },
          { target: 'ready', actions: 'keepSweptRunOutstanding' },
        ],
      },
    },
    // decision 020: the chat's rows go in one transaction; eager compaction is stopped (its runs
    // settle as cancelled on their own), then the actor ends and the host drops what it kept.
    deleting: {
      entry: ['removeEagerCompaction', 'forgetEagerCompaction'],
      invoke: {
        src: 'deleteChat',
        input: ({ context }) => ({ chatId: context.chatId, outstanding: context.outstanding }),
        onDone: { target: 'deleted', actions: 'respondDeleted' },
        onError: {
          target: 'ready',
          actions: [{ type: 'respondDeleteFailed', params: ({ event }: { event: { error: unknown } }) => event.error }],
        },
      },
      on: {
        SUBMIT: { actions: 'rejectDeletedChat' },
        DELETE: { actions: 'addDeleter' },
        FORK: { actions: 'refuseForkOfDeletedChat' },
        APPEND: { actions: 'refuseAppendToDeletedChat' },
        ERASE: { actions: 'refuseErasureOfDeletedChat' },
      },
    },
    deleted: { type: 'final' },
    // The node gave the chat up; the next actor for it is hydrated from the ledger, wherever it lives.
    relinquished: { type: 'final' },
    running: {
      initial: 'packing',
      on: { SUBMIT: { actions: 'rejectRunInProgress' }, APPEND: { actions: 'refuseAppendWhileRunning' }, ERASE: { actions: 'refuseErasureWhileRunning' } },
      states: {
        // An orphaned run of this chat (its lease expired) is settled as interrupted first.
        reaping: {
          on: { DELETE: { actions: 'addDeleter' } },
          invoke: {
            src: 'reapRun',
            input: ({ context }) => ({ chatId: context.chatId, run: context.orphan! }),
            onDone: [
              {
                guard: 'deletionRequested',
                target: '#chat.deleting',
                actions: [{ type: 'refreshFacts', params: ({ event }) => event.output }, 'rejectSubmissionAsDeleted', 'forgetSubmission'],
              },
              // The chat is at rest again for a moment: the submission is decided on the new facts.
              {
                target: '#chat.ready',
                actions: [{ type: 'refreshFacts', params: ({ event }) => event.output }, 'resubmitAfterReaping', 'forgetSubmission'],
              },
            ],
            onError: [
              {
                guard: 'deletionRequested',
                target: '#chat.deleting',
                actions: ['rejectSubmissionAsDeleted', 'forgetSubmission', 'forgetOrphan'],
              },
              {
                target: '#chat.ready',
                actions: [{ type: 'rejectSubmission', params: ({ event }: { event: { error: unknown } }) => event.error }, 'forgetSubmission', 'forgetOrphan'],
              },
            ],
          },
        },
        // Admission: the turn is read and packed (readTurn), decided by the turn rules, then written
        // (writeTurn). A DELETE (or a shutdown) waits for it, then stops the run it wrote.
        packing: {
          on: { DELETE: { actions: 'addDeleter' }, INTERRUPT: { actions: 'noteInterruption' } },
          initial: 'reading',
          states: {
            // Reads configuration, budget, balance and the running runs, and packs the history; writes nothing.
            reading: {
              invoke: {
                src: 'readTurn',
                input: ({ context }) => ({ requestId: context.queued!.requestId, submission: context.queued!.submission, closing: context.queued!.closing }),
                onDone: { target: 'deciding', actions: [{ type: 'noteTurnFacts', params: ({ event }) => event.output }] },
                onError: refuseQueuedTurn,
              },
            },
            // The turn rules (TURN_RULES), over what was read: the 402 and context_too_large among them.
            deciding: { always: decideTurn },
            // The one transaction: tombstones, input, the run, the idempotency key (the cap and the key asked again).
            writing: {
              invoke: {
                src: 'writeTurn',
                input: ({ context }) => ({
                  requestId: context.queued!.requestId,
                  submission: context.queued!.submission,
                  closing: context.queued!.closing,
                  turn: context.queued!.turn!,
                }),
                onDone: [
                  {
                    guard: 'deletionRequested',
                    target: '#chat.running.settling',
                    actions: [
                      ...startAdmittedRun,
                      'abortRun',
                      'recordDeletedBeforeStreaming',
                    ],
                  },
                  {
                    guard: 'interruptionRequested',
                    target: '#chat.running.settling',
                    actions: [
                      ...startAdmittedRun,
                      'abortRun',
                      'recordInterruptedBeforeStreaming',
                    ],
                  },
                  {
                    guard: { type: 'needsCompaction', params: ({ event }: { event: { output: ChatAdmission } }) => event.output },
                    target: '#chat.running.compacting',
                    actions: [...startAdmittedRun],
                  },
                  {
                    target: '#chat.running.streaming',
                    actions: [...startAdmittedRun],
                  },
                ],
                onError: refuseQueuedTurn,
              },
            },
          },
        },
        // The run is admitted and its stream open; it waits while the oldest history is summarised.
        compacting: {
          entry: 'announceCompacting',
          invoke: {
            src: 'compactHistory',
            input: ({ context }) => ({ chatId: context.chatId, admission: context.admission! }),
            onDone: { target: 'streaming', actions: [{ type: 'applyCompaction', params: ({ event }) => event.output }] },
            onError: {
              target: 'settling',
              actions: [{ type: 'recordFailedCompaction', params: ({ event }: { event: { error: unknown } }) => event.error }],
            },
          },
          on: {
            CANCEL: { guard: 'cancelsThisRun', target: 'settling', actions: ['abortRun', 'recordCancelledBeforeStreaming'] },
            DELETE: { target: 'settling', actions: ['addDeleter', 'abortRun', 'recordDeletedBeforeStreaming'] },
            INTERRUPT: { target: 'settling', actions: ['noteInterruption', 'abortRun', 'recordInterruptedBeforeStreaming'] },
          },
        },
        streaming: {
          invoke: {
            src: 'streamRun',
            input: ({ context }) => ({ chatId: context.chatId, admission: context.admission! }),
            onDone: [
              {
                guard: 'deletionRequested',
                target: 'settling',
                actions: [{ type: 'recordResult', params: ({ event }) => event.output }, 'markDeleted'],
              },
              {
                guard: 'interruptionRequested',
                target: 'settling',
                actions: [{ type: 'recordResult', params: ({ event }) => event.output }, 'markInterrupted'],
              },
              {
                guard: { type: 'mayRefitAfterContextRefusal', params: ({ event }) => event.output },
                target: 'refitting',
                actions: [{ type: 'recordResult', params: ({ event }) => event.output }],
              },
              { target: 'settling', actions: [{ type: 'recordResult', params: ({ event }) => event.output }] },
            ],
            onError: [
              { guard: 'deletionRequested', target: 'settling', actions: ['recordBrokenRun', 'markDeleted'] },
              { target: 'settling', actions: 'recordBrokenRun' },
            ],
          },
          initial: 'live',
          on: {
            DELETE: { target: '.cancelling', actions: ['addDeleter', 'abortRun'] },
            INTERRUPT: { target: '.cancelling', actions: ['noteInterruption', 'abortRun'] },
          },
          states: {
            live: {
              on: { CANCEL: { guard: 'cancelsThisRun', target: 'cancelling', actions: 'abortRun' } },
            },
            // The provider call is being stopped; its partial output is still written and settled.
            cancelling: {},
          },
        },
        // docs/decisions/044-context-refusal-refit.md: the vendor refused the request for its context
        // before the first byte; the turn is packed again with what the refusal taught and sent once
        // more. A failure to pack it again settles the refused run (its result is kept until then).
        refitting: {
          invoke: {
            src: 'refitTurn',
            input: ({ context }) => ({ chatId: context.chatId, admission: context.admission!, refusal: context.result!.contextRefusal! }),
            onDone: [
              {
                guard: { type: 'needsCompaction', params: ({ event }) => event.output },
                target: 'compacting',
                actions: [{ type: 'applyRefit', params: ({ event }) => event.output }],
              },
              { target: 'streaming', actions: [{ type: 'applyRefit', params: ({ event }) => event.output }] },
            ],
            onError: { target: 'settling' },
          },
          on: {
            CANCEL: { guard: 'cancelsThisRun', target: 'settling', actions: ['abortRun', 'recordCancelledBeforeStreaming'] },
            DELETE: { target: 'settling', actions: ['addDeleter', 'abortRun', 'recordDeletedBeforeStreaming'] },
            INTERRUPT: { target: 'settling', actions: ['noteInterruption', 'abortRun', 'recordInterruptedBeforeStreaming'] },
          },
        },
        // decision 020: a settlement is never lost. It is written, tried again after a backoff
        // (SETTLE_RETRIES times, settleRetryDelayMs apart), and failing that the run is left to the sweep.
        settling: {
          entry: 'forgetSettleAttempts',
          on: { DELETE: { actions: 'addDeleter' } },
          initial: 'recording',
          states: {
            recording: {
              invoke: {
                src: 'settleRun',
                input: ({ context }) => ({ chatId: context.chatId, runId: context.admission!.runId, outcome: context.result! }),
                onDone: [
                  // No eager work for a chat about to go.
                  { guard: 'deletionRequested', target: '#chat.deleting', actions: ['holdCallsOfEndedRun', 'closeRun'] },
                  {
                    guard: { type: 'fillsEagerThreshold', params: ({ event }) => event.output },
                    target: '#chat.ready',
                    actions: ['holdCallsOfEndedRun', 'closeRun', { type: 'recordEagerCompaction', params: ({ event }) => event.output }, 'startEagerCompaction'],
                  },
                  // Straight to rest (not through \`ready\`): nothing else can be outstanding once the run settled.
                  { guard: 'leftToolCalls', target: '#chat.awaitingToolResults', actions: ['holdCallsOfEndedRun', 'closeRun'] },
                  { target: '#chat.idle', actions: 'closeRun' },
                ],
                onError: [{ guard: 'maySettleAgain', target: 'backingOff', actions: 'countSettleAttempt' }, { target: 'leavingToSweep' }],
              },
            },
            // Waiting out the backoff; the run is still this node's, its lease renewed.
            backingOff: {
              invoke: { src: 'settleBackoff', input: ({ context }) => ({ ms: settleRetryDelayMs(context.settleAttempts) }), onDone: 'recording' },
            },
            // Every attempt failed: the lease is released (no longer renewed) so the sweep settles the run.
            // A release that cannot be written changes nothing: nobody renews the lease, so it lapses all the same.
            leavingToSweep: {
              invoke: {
                src: 'releaseRun',
                input: ({ context }) => ({ chatId: context.chatId, runId: context.admission!.runId, outcome: context.result! }),
                onDone: { target: '#chat.running.leftToSweep', actions: 'leaveRunToSweep' },
                onError: { target: '#chat.running.leftToSweep', actions: 'leaveRunToSweep' },
              },
            },
          },
        },
        // The run is outstanding in the ledger, its lease released: the chat goes on (or goes) without it.
        leftToSweep: {
          always: [{ guard: 'deletionRequested', target: '#chat.deleting' }, { target: '#chat.ready' }],
        },
      },
    },
  },
})

export type ChatMachine = typeof chatMachine
