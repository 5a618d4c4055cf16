import { afterEach, describe, expect, it, vi } from 'vitest'
import { createActor, fromPromise, waitFor, type Actor } from 'xstate'
import { CHAT_DELETED, chatMachine } from '../../machines/chat.machine.ts'
import { SETTLE_RETRIES, settleRetryDelayMs, type RunSettlementInput, type SettledRun } from '../../machines/run-settlement.machine.ts'
import type {
  ReadTurnInput,
  WriteTurnInput,
  ChatInput,
  CompactHistoryInput,
  DeleteChatInput,
  EagerCompaction,
  ReapRunInput,
  RefitTurnInput,
  StreamRunInput,
  DeleteOutcome,
  ForkOutcome,
  LedgerView,
  RunAdmission,
} from '../../machines/chat.types.ts'
import { ChatRuntime, dataOf, followMachine } from '../../src/actors/chat-runtime.ts'
import { ValidationError } from '../../src/domain/errors.ts'
import type { BlockToSummarise } from '../../src/domain/context/block-to-summarise.ts'
import { framesOf as loggedFrames, RunChannel, type RunFrame } from '../../src/actors/run-channel.ts'
import type { CompactionJob } from '../../src/domain/context/compaction-job.ts'
import type { Admission, Submission } from '../../src/actors/turn-types.ts'
import type { RunOutcome } from '../../src/domain/runs/run-outcome.ts'
import { blockKey } from '../../src/domain/context/cut-blocks.ts'
import {
  ContextTooLargeError,
  IdempotencyKeyReusedError,
  InsufficientBalanceError,
  RunningRunsLimitError,
  NotFoundError,
  RetryNotAllowedError,
  RunInProgressError,
  UnknownToolUseIdError,
} from '../../src/domain/errors.ts'
import { ZERO_USAGE } from '../../src/domain/pricing/usage.ts'
import type { PendingCall } from '../../src/domain/turns/close-pending-calls.ts'
import type { ChatFacts } from '../../src/domain/turns/decide-admission.ts'
import { SUBMISSION_RULES, TURN_RULES, type TurnFacts } from '../../src/domain/turns/admission-rules.ts'
import { echo } from '../helpers/turns.ts'

/** A promise the test settles by hand, so each invoked actor stays in flight as long as needed. */
function deferred<T>() {
  let resolve!: (value: T) => void
  let reject!: (error: unknown) => void
  const promise = new Promise<T>((res, rej) => {
    resolve = res
    reject = rej
  })
  return { promise, resolve, reject }
}

const CHAT_ID = '3f8e1c2a-0000-4000-8000-000000000001'
const NOW_ISO = '2030-01-02T03:04:05.000Z'

const submission = (text = 'hello'): Submission =>
  ({
    orgId: 'org',
    apiKeyId: null,
    chatId: CHAT_ID,
    namespace: null,
    request: { model: 'sandbox/echo', input: [{ type: 'prompt', text }] },
    model: { id: 'model', name: 'sandbox/echo' },
    input: [{ body: { type: 'prompt', text }, media: [], tokens: 1 }],
  }) as unknown as Submission

/** How a submission's caller learns its fate: the host turns the submission's event log into this. */
type SubmitOutcome = { kind: 'admitted'; admission: Admission } | { kind: 'rejected'; error: unknown }

/** What readTurn read of a turn that passes every turn rule: under the cap, its fixed parts fit, and the balance pays. */
const PASSING_TURN: TurnFacts = {
  runningRuns: { count: 0, cap: 10 },
  overflow: null,
  budget: { balance: '100', model: echo(), markupPercent: '0', inputTokens: 5, correctedInputTokens: 5, requestedMaxTokens: null },
  unmetToolChoice: null,
}

/** An admitted run: a real RunChannel, so the frames the machine has the host push can be read back. */
const admission = (runId: string): Admission =>
  ({
    runId,
    chatId: CHAT_ID,
    channel: new RunChannel(),
    prompt: [{ role: 'user', content: [{ type: 'text', text: 'hello' }] }],
    startedAtMs: Date.parse('2030-01-02T03:04:05.000Z'),
    createdAt: '2030-01-02T03:04:05.000Z',
    compaction: null,
    compactionReport: null,
    refits: 0,
  }) as unknown as Admission

/** The frames a run's channel carried so far (the channel replays them to a new subscriber). */
/** The frames' events and data (their positions are decision 038's, tested with the channel). */
/** After the opening three (`run`, `config_warnings`, `translation_warnings`), which the host's runtime puts first at admission. */
const framesOf = (a: Admission): Array<Pick<RunFrame, 'event' | 'data'>> =>
  loggedFrames(a.channel)
    .slice(3)
    .map((f) => ({ event: f.event, data: f.data }))

/** The i-th sealed block of a chat's ledger, ten ordinals long. */
const block = (i: number): BlockToSummarise => ({
  kind: 'block',
  maxTokens: 400,
  start: i * 10,
  end: i * 10 + 10,
  firstOrdinal: i * 10 + 1,
  lastOrdinal: i * 10 + 10,
  parts: 10,
  tokens: 400,
  ordinals: Array.from({ length: 10 }, (_, k) => i * 10 + 1 + k),
})

const job = (forRunId: string | null = null): CompactionJob =>
  ({
    chatId: CHAT_ID,
    orgId: 'org',
    apiKeyId: null,
    namespace: null,
    model: { id: 'model', name: 'sandbox/echo' },
    markupPercent: '5',
    forRunId,
  }) as unknown as CompactionJob

/** Eager work after a run settled: these blocks, summarised in the background. */
const eager = (...blocks: number[]): EagerCompaction => ({ job: job(), blocks: blocks.map(block) })

/**
 * A run that must wait for `blocks` summaries before it streams; the last `elsewhere` of them are
 * being made by other work (eager compaction).
 */
const needing = (runId: string, blocks: number, elsewhere = 0): Admission => {
  const wanted = Array.from({ length: blocks }, (_, i) => block(i))
  return {
    ...admission(runId),
    compaction: { blocks: wanted, inProgressElsewhere: elsewhere, elsewhere: wanted.slice(blocks - elsewhere).map(blockKey) },
  }
}

const result = (status: RunOutcome['status'], pendingToolCalls: RunOutcome['pendingToolCalls'] = []): RunOutcome => ({
  status,
  stopReason: status === 'succeeded' ? (pendingToolCalls.length > 0 ? 'tool_use' : 'end_turn') : null,
  error: status === 'failed' ? { code: 'upstream_error', message: 'boom' } : null,
  usage: ZERO_USAGE,
  providerResponseId: null,
  modelServed: null,
  pendingToolCalls,
  latencyMs: 1,
  firstDeltaMs: null,
  streamOpened: true,
  vendorRequests: 1,
  contextRefusal: null,
})

/**
 * The chat machine with fake providers: each invocation of an actor gets its own deferred,
 * recorded with its input, so the test decides when and how each step ends.
 */
/**
 * What the fakes record of an invocation that concerns a run: the run's full admission and abort
 * signal, as the host's runtime (src/actors/chat-runtime.ts) hands them to the real actors; the
 * machine itself passes only the data (`RunAdmission`).
 */
type WithRun<I> = Omit<I, 'admission'> & { admission: Admission; signal: AbortSignal }
type SettlementCall = { chatId: string; admission: Admission; signal: AbortSignal; result: RunOutcome }

function harness(options: Partial<ChatInput> & { now?: () => Date; turn?: TurnFacts } = {}, overrides: Parameters<typeof chatMachine.provide>[0] = {}) {
  const { now = () => new Date(), turn = PASSING_TURN, ...input } = options
  // The host's part: the runtime that keeps what is not data, following what the machine emits.
  const runtime = new ChatRuntime(CHAT_ID)
  const withRun = <I extends { admission: RunAdmission }>(i: I): WithRun<I> => {
    const { admission: full, abort } = runtime.run(i.admission.runId)
    return { ...i, admission: full, signal: abort.signal }
  }
  /** A settlement's input as the host's actors see it: the run's full admission and its outcome. */
  const settlementCall = (i: RunSettlementInput): SettlementCall => ({ chatId: i.chatId, ...withRun({ admission: { runId: i.runId } as RunAdmission }), result: i.outcome })
  /** readTurn answers at once with the facts the test names (by default, a turn every turn rule passes). */
  const reads: ReadTurnInput[] = []
  const admits: { input: WriteTurnInput; d: ReturnType<typeof deferred<Admission>> }[] = []
  const streams: { input: WithRun<StreamRunInput>; d: ReturnType<typeof deferred<RunOutcome>> }[] = []
  /** `settle` ends settlement with no eager work unless the test names some. */
  const settles: {
    input: SettlementCall
    d: ReturnType<typeof deferred<SettledRun>>
    settle: (output?: Partial<SettledRun>) => void
  }[] = []
  const compacts: { input: WithRun<CompactHistoryInput>; d: ReturnType<typeof deferred<Admission>> }[] = []
  const refits: { input: WithRun<RefitTurnInput>; d: ReturnType<typeof deferred<Admission>> }[] = []
  const eagers: { input: EagerCompaction; d: ReturnType<typeof deferred<void>>; signal: AbortSignal }[] = []
  const releases: { input: SettlementCall; d: ReturnType<typeof deferred<void>> }[] = []
  const deletes: { input: DeleteChatInput; d: ReturnType<typeof deferred<void>> }[] = []
  const reaps: { input: ReapRunInput; d: ReturnType<typeof deferred<ChatFacts>> }[] = []
  const machine = chatMachine.provide({
    actors: {
      reapRun: fromPromise<ChatFacts, ReapRunInput>(({ input }) => {
        const d = deferred<ChatFacts>()
        reaps.push({ input, d })
        return d.promise
      }),
      deleteChat: fromPromise<void, DeleteChatInput>(({ input }) => {
        const d = deferred<void>()
        deletes.push({ input, d })
        return d.promise
      }),
      compactHistory: fromPromise<RunAdmission, CompactHistoryInput>(({ input }) => {
        const d = deferred<Admission>()
        compacts.push({ input: withRun(input), d })
        return d.promise.then((repacked) => runtime.replaceAdmission(repacked))
      }),
      refitTurn: fromPromise<RunAdmission, RefitTurnInput>(({ input }) => {
        const d = deferred<Admission>()
        refits.push({ input: withRun(input), d })
        return d.promise.then((repacked) => runtime.replaceAdmission(repacked))
      }),
      readTurn: fromPromise<TurnFacts, ReadTurnInput>(async ({ input }) => {
        reads.push(input)
        return turn
      }),
      writeTurn: fromPromise<RunAdmission, WriteTurnInput>(({ input }) => {
        const d = deferred<Admission>()
        admits.push({ input, d })
        // The run's stream is the submission's event log, as the host's writeTurn makes it.
        return d.promise.then((admitted) => runtime.holdAdmission(input.requestId, Object.assign(admitted, { channel: runtime.submissionLog(input.requestId) ?? admitted.channel })))
      }),
      streamRun: fromPromise<RunOutcome, StreamRunInput>(({ input }) => {
        const d = deferred<RunOutcome>()
        streams.push({ input: withRun(input), d })
        return d.promise
      }),
      // Settlement retries wait 5 ms here (200 ms × 4^n in production).
      settleBackoff: fromPromise(() => new Promise<void>((resolve) => setTimeout(resolve, 5))),
      settleRun: fromPromise<SettledRun, RunSettlementInput>(({ input }) => {
        const d = deferred<SettledRun>()
        settles.push({ input: settlementCall(input), d, settle: (output = {}) => d.resolve({ cost: '0', eager: null, ...output }) })
        return d.promise.then((output) => {
          runtime.forgetRun(input.runId)
          return output
        })
      }),
      releaseRun: fromPromise<void, RunSettlementInput>(({ input }) => {
        const d = deferred<void>()
        releases.push({ input: settlementCall(input), d })
        return d.promise.finally(() => runtime.forgetRun(input.runId))
      }),
      compactEagerly: fromPromise<void, EagerCompaction>(({ input, signal }) => {
        const d = deferred<void>()
        eagers.push({ input, d, signal })
        return d.promise
      }),
    },
  })
  const actor = createActor(machine.provide(overrides), { input: { chatId: CHAT_ID, pendingCalls: [], latestCustomerRun: null, ...input } })
  const errors: unknown[] = []
  actor.subscribe({ error: (e) => errors.push(e) })
  followMachine(actor, runtime)
  actor.start()
  actors.push(actor)

  /** Sends SUBMIT, dated by `now`; the returned mock is called with its fate, read from its event log. */
  const submit = (s = submission(), ledger?: LedgerView) => {
    const respond = vi.fn<(outcome: SubmitOutcome) => void>()
    const requestId = runtime.requestId()
    const log = runtime.openSubmission(requestId)
    log.wake(() => {
      const first = log.at(0)
      if (respond.mock.calls.length > 0 || !first) return
      if (first.type === 'admitted') respond({ kind: 'admitted', admission: runtime.run(first.runId).admission })
      if (first.type === 'rejected') respond({ kind: 'rejected', error: first.error })
    })
    actor.send({ type: 'SUBMIT', requestId, submission: s, at: now().toISOString(), ...(ledger ? { ledger } : {}) })
    return respond
  }
  const state = () => actor.getSnapshot().value
  const context = () => actor.getSnapshot().context
  const at = (value: Parameters<ReturnType<typeof actor.getSnapshot>['matches']>[0]) => waitFor(actor, (s) => s.matches(value), { timeout: 2_000 })
  /** Until the run's settlement was tried `n` times (polled, as the machine retries on its own). */
  const settleAttempts = (n: number) => vi.waitFor(() => expect(settles).toHaveLength(n), { timeout: 2_000, interval: 1 })
  /** Until the run is settling in `value` (writing it, waiting out a backoff, leaving it to the sweep). */
  const settlementAt = (value: 'recording' | 'backingOff' | 'leavingToSweep') => at({ running: { settling: value } })
  /** The eager compaction child, while the chat has one. */
  const eagerChild = () => actor.getSnapshot().children.eagerCompaction
  /**
   * Whether an eager compaction child is still at work. A finished child may linger in
   * `snapshot.children` (XState keeps a spawned child there until it is stopped), but never active.
   */
  const eagerRunning = () => eagerChild()?.getSnapshot().status === 'active'
  /** Until the eager child finished and the chat forgot it. */
  const eagerDone = () => waitFor(actor, (s) => s.context.eagerCompaction === null, { timeout: 2_000 })
  /** Sends DELETE; the returned mock is called with the outcome. */
  const remove = () => {
    const respond = vi.fn<(outcome: DeleteOutcome) => void>()
    const requestId = runtime.requestId()
    runtime.deletes.set(requestId, { resolve: respond })
    actor.send({ type: 'DELETE', requestId })
    return respond
  }
  /** Sends FORK; the returned mock is called with the decision. */
  const fork = (upToOrdinal: number | null | undefined, ledger: { lastOrdinal: number | null; lastSettledOrdinal: number | null }) => {
    const respond = vi.fn<(outcome: ForkOutcome) => void>()
    const requestId = runtime.requestId()
    runtime.forks.set(requestId, { resolve: respond })
    actor.send({ type: 'FORK', requestId, upToOrdinal, ledger })
    return respond
  }
  return { actor, runtime, fork, reads, admits, streams, settles, compacts, refits, eagers, releases, deletes, reaps, submit, remove, state, context, at, settlementAt, settleAttempts, errors, eagerChild, eagerRunning, eagerDone }
}

/** Drives a fresh harness to running.streaming for run `runId`. */
async function streaming(runId = 'run-1', input: Partial<ChatInput> = {}) {
  const h = harness(input)
  const respond = h.submit()
  await h.at({ running: { packing: 'writing' } })
  h.admits[0]!.d.resolve(admission(runId))
  await h.at({ running: { streaming: 'live' } })
  return { ...h, respond }
}

const actors: Actor<typeof chatMachine>[] = []
afterEach(() => {
  for (const a of actors.splice(0)) a.stop()
})

const pending = (id: string, over: Partial<PendingCall> = {}): PendingCall => ({
  tool_use_id: id,
  tool_name: 'lookup',
  created_at: '2030-01-01T00:00:00.000Z',
  run_status: 'succeeded',
  ...over,
})

describe('chat machine: ready', () => {
  it('ready → idle when the chat has no pending tool calls', () => {
    const h = harness()
    expect(h.state()).toBe('idle')
    expect(h.context().pendingCalls).toEqual([])
  })

  it('ready → awaitingToolResults when hydrated with pending calls', () => {
    const calls = [pending('call_a'), pending('call_b')]
    const h = harness({ pendingCalls: calls, latestCustomerRun: { id: 'run-0', status: 'succeeded' } })
    expect(h.state()).toBe('awaitingToolResults')
    expect(h.context().pendingCalls).toEqual(calls)
    expect(h.context().latestCustomerRun).toEqual({ id: 'run-0', status: 'succeeded' })
  })
})

describe('chat machine: packing', () => {
  it('idle → running.packing on SUBMIT, handing admitTurn the submission, with nothing to close', async () => {
    const latest = { id: 'run-0', status: 'failed' as const }
    const h = harness({ latestCustomerRun: latest })
    const s = submission('hi')
    h.submit(s)
    expect(h.actor.getSnapshot().matches({ running: 'packing' })).toBe(true)
    await h.at({ running: { packing: 'writing' } })
    expect(h.admits).toHaveLength(1)
    expect(h.admits[0]!.input.submission).toBe(s)
    expect(h.admits[0]!.input.closing).toEqual({ closures: [], tombstones: [], closesCallsOf: null })
  })

  it('awaitingToolResults → running.packing on SUBMIT, handing admitTurn how the pending calls close', async () => {
    const calls = [pending('call_a')]
    const h = harness({ pendingCalls: calls, latestCustomerRun: { id: 'run-0', status: 'succeeded' } })
    h.submit()
    expect(h.actor.getSnapshot().matches({ running: 'packing' })).toBe(true)
    await vi.waitFor(() => expect(h.admits).toHaveLength(1))
    expect(h.admits[0]!.input.closing.closures).toEqual([{ tool_use_id: 'call_a', tool_name: 'lookup', tombstone: 'abandoned' }])
    expect(h.admits[0]!.input.closing.closesCallsOf).toBe('run-0')
    // Pending until the run is admitted: a refused admission closes nothing.
    expect(h.context().pendingCalls).toEqual(calls)
  })

  it('packing → streaming when admitted: respond gets the admission, streamRun gets it with a live signal', async () => {
    const h = harness({ pendingCalls: [pending('call_a')] })
    const respond = h.submit()
    await h.at({ running: { packing: 'writing' } })
    expect(respond).not.toHaveBeenCalled()
    const a = admission('run-1')
    h.admits[0]!.d.resolve(a)
    await h.at({ running: { streaming: 'live' } })
    expect(respond).toHaveBeenCalledTimes(1)
    expect(respond).toHaveBeenCalledWith({ kind: 'admitted', admission: a })
    expect(h.streams).toHaveLength(1)
    expect(h.streams[0]!.input.admission).toBe(a)
    expect(h.streams[0]!.input.signal.aborted).toBe(false)
    expect(h.context().admission).toEqual(dataOf(a))
    // The admission closed every pending call (by result or tombstone).
    expect(h.context().pendingCalls).toEqual([])
    expect(h.context().queued).toBeNull()
  })

  it('packing → ready (idle) when admission refuses: respond gets the error, nothing else changes', async () => {
    const latest = { id: 'run-0', status: 'succeeded' as const }
    const h = harness({ latestCustomerRun: latest })
    const respond = h.submit()
    await h.at({ running: { packing: 'writing' } })
    const error = new Error('refused')
    h.admits[0]!.d.reject(error)
    await h.at('idle')
    expect(respond).toHaveBeenCalledTimes(1)
    expect(respond).toHaveBeenCalledWith({ kind: 'rejected', error })
    expect(h.streams).toHaveLength(0)
    expect(h.context()).toMatchObject({ admission: null, queued: null, latestCustomerRun: latest, pendingCalls: [] })
  })

  it('packing → ready (awaitingToolResults) when admission refuses: the pending calls stay pending', async () => {
    const calls = [pending('call_a')]
    const h = harness({ pendingCalls: calls })
    const respond = h.submit()
    await h.at({ running: { packing: 'writing' } })
    const error = new InsufficientBalanceError('the balance cannot pay', {})
    h.admits[0]!.d.reject(error)
    await h.at('awaitingToolResults')
    expect(respond).toHaveBeenCalledWith({ kind: 'rejected', error })
    expect(h.context().pendingCalls).toEqual(calls)
    // The chat takes the next submission normally.
    h.submit()
    expect(h.actor.getSnapshot().matches({ running: 'packing' })).toBe(true)
  })
})

describe('chat machine: the turn rules (src/domain/turns/admission-rules.ts TURN_RULES), on what readTurn read', () => {
  const refusalOf = (respond: ReturnType<ReturnType<typeof harness>['submit']>) => {
    const outcome = respond.mock.calls[0]![0]
    if (outcome.kind !== 'rejected') throw new Error(`expected a refusal, got ${outcome.kind}`)
    return outcome.error as { code: string; message: string; details?: unknown; hint?: string }
  }
  const overflow = { inputBudget: 100, fixedTokens: 150, tokens: { instructions: 10, tools: 20, anchors: 30, current: 90 } }
  const broke = { ...PASSING_TURN.budget!, balance: '-1' }

  it('cannotAffordTurn: the balance cannot pay the input and one output token: 402 insufficient_balance, and writeTurn is never invoked', async () => {
    const calls = [pending('call_a')]
    const h = harness({ pendingCalls: calls, latestCustomerRun: { id: 'run-0', status: 'succeeded' }, turn: { ...PASSING_TURN, budget: broke } })
    const respond = h.submit()
    await h.at('awaitingToolResults')
    expect(h.reads).toHaveLength(1)
    expect(h.admits).toHaveLength(0)
    const error = refusalOf(respond)
    expect(error).toBeInstanceOf(InsufficientBalanceError)
    expect(error).toMatchObject({
      code: 'insufficient_balance',
      message: "the balance of -1.00 USD cannot pay for this turn's input (about 5 tokens) and one output token",
      details: { balance: '-1', estimated_input_tokens: 5 },
      hint: 'add credit to the organisation',
    })
    // Nothing was written: the calls stay pending, the chat takes the next submission.
    expect(h.context()).toMatchObject({ pendingCalls: calls, queued: null, admission: null })
    // The guard decides: provided otherwise, the machine writes the turn.
    const k = harness({ turn: { ...PASSING_TURN, budget: broke } }, { guards: { cannotAffordTurn: () => false } })
    k.submit()
    await k.at({ running: { packing: 'writing' } })
    expect(k.admits[0]!.input.turn).toEqual({ ...PASSING_TURN, budget: broke })
  })

  it('contextIsTooLarge: the fixed parts alone pass the input budget: 422 context_too_large with their sizes, and writeTurn is never invoked', async () => {
    const h = harness({ turn: { ...PASSING_TURN, overflow, budget: null } })
    const respond = h.submit()
    await h.at('idle')
    expect(h.admits).toHaveLength(0)
    const error = refusalOf(respond)
    expect(error).toBeInstanceOf(ContextTooLargeError)
    expect(error).toMatchObject({
      code: 'context_too_large',
      message: "the fixed parts need 150 tokens but the model's input budget is 100: instructions 10, tools 20, anchor parts 30, the current exchange 90",
      details: { input_budget: 100, estimated_tokens: 150, fixed_tokens: { instructions: 10, tools: 20, anchors: 30, current: 90 } },
    })
    expect(h.context()).toMatchObject({ queued: null, admission: null })
    const k = harness({ turn: { ...PASSING_TURN, overflow, budget: null } }, { guards: { contextIsTooLarge: () => false } })
    k.submit()
    await k.at({ running: { packing: 'writing' } })
  })

  it('in the table\'s order: the running-run cap (429) before context_too_large (422) before the 402', async () => {
    const all = harness({ turn: { runningRuns: { count: 3, cap: 3 }, overflow, budget: broke, unmetToolChoice: null } })
    const capped = all.submit()
    await all.at('idle')
    expect(refusalOf(capped)).toBeInstanceOf(RunningRunsLimitError)
    expect(refusalOf(capped)).toMatchObject({ code: 'rate_limited', details: { reason: 'running_runs', limit: 3 } })
    const both = harness({ turn: { ...PASSING_TURN, overflow, budget: broke } })
    const large = both.submit()
    await both.at('idle')
    expect(refusalOf(large)).toBeInstanceOf(ContextTooLargeError)
    expect(all.admits).toHaveLength(0)
    expect(both.admits).toHaveLength(0)
  })

  it('a tool_choice the turn\'s tools cannot meet is refused (422, pointing at /tool_choice) before context_too_large and the 402; nothing is written', async () => {
    const h = harness({ turn: { ...PASSING_TURN, overflow, budget: broke, unmetToolChoice: { choice: 'lookup', offered: ['weather'] } } })
    const refused = h.submit()
    await h.at('idle')
    expect(refusalOf(refused)).toBeInstanceOf(ValidationError)
    expect(refusalOf(refused)).toMatchObject({ code: 'validation_failed', problems: [{ pointer: '/tool_choice' }] })
    expect(h.admits).toHaveLength(0)
  })

  it('a DELETE while the turn was read: a refused turn finds the chat gone (404), and the chat is deleted', async () => {
    const h = harness({ turn: { ...PASSING_TURN, budget: broke } })
    const respond = h.submit()
    h.remove()
    await h.at('deleting')
    expect(refusalOf(respond)).toBeInstanceOf(NotFoundError)
    expect(h.admits).toHaveLength(0)
  })

  it('every rule of both tables is a guard of the machine, under its name', () => {
    const guards = Object.keys(chatMachine.implementations.guards)
    for (const rule of [...SUBMISSION_RULES, ...TURN_RULES]) expect(guards).toContain(rule.name)
    expect(TURN_RULES.map((r) => r.name)).toEqual(['exceedsRunningRunCap', 'choosesToolNotOffered', 'contextIsTooLarge', 'cannotAffordTurn'])
  })
})

describe('chat machine: one running run', () => {
  it('a SUBMIT while packing is rejected with run_in_progress and changes nothing', async () => {
    const h = harness()
    const first = h.submit()
    await h.at({ running: { packing: 'writing' } })
    const second = h.submit(submission('second'))
    expect(second).toHaveBeenCalledTimes(1)
    const outcome = second.mock.calls[0]![0]
    expect(outcome.kind).toBe('rejected')
    const error = (outcome as { error: unknown }).error
    expect(error).toBeInstanceOf(RunInProgressError)
    expect((error as RunInProgressError).code).toBe('run_in_progress')
    expect(h.actor.getSnapshot().matches({ running: 'packing' })).toBe(true)
    expect(h.admits).toHaveLength(1)
    // Still the first submission's (the host numbers a chat's requests from 1).
    expect(h.context().queued?.requestId).toBe(`${CHAT_ID}#1`)
    expect(first).not.toHaveBeenCalled()
  })

  it('a SUBMIT while streaming is rejected with run_in_progress naming the running run', async () => {
    const h = await streaming('run-7')
    const before = h.actor.getSnapshot().context
    const other = h.submit(submission('other'))
    expect(other).toHaveBeenCalledTimes(1)
    const { kind, error } = other.mock.calls[0]![0] as { kind: string; error: RunInProgressError }
    expect(kind).toBe('rejected')
    expect(error).toBeInstanceOf(RunInProgressError)
    expect(error.code).toBe('run_in_progress')
    expect(error.details).toEqual({ run_id: 'run-7' })
    expect(h.state()).toEqual({ running: { streaming: 'live' } })
    expect(h.actor.getSnapshot().context).toEqual(before)
    expect(h.admits).toHaveLength(1)
    expect(h.streams).toHaveLength(1)
  })

  it('a SUBMIT while cancelling or settling is rejected too', async () => {
    const h = await streaming('run-8')
    h.actor.send({ type: 'CANCEL', runId: 'run-8' })
    const duringCancel = h.submit()
    expect(duringCancel.mock.calls[0]![0]).toMatchObject({ kind: 'rejected', error: expect.any(RunInProgressError) })
    h.streams[0]!.d.resolve(result('cancelled'))
    await h.at({ running: 'settling' })
    const duringSettle = h.submit()
    expect(duringSettle.mock.calls[0]![0]).toMatchObject({ kind: 'rejected', error: expect.any(RunInProgressError) })
    expect(h.admits).toHaveLength(1)
  })
})

describe('chat machine: cancel', () => {
  it('CANCEL for the running run → streaming.cancelling, and the abort signal fires', async () => {
    const h = await streaming('run-1')
    const signal = h.streams[0]!.input.signal
    const onAbort = vi.fn()
    signal.addEventListener('abort', onAbort)
    h.actor.send({ type: 'CANCEL', runId: 'run-1' })
    expect(h.state()).toEqual({ running: { streaming: 'cancelling' } })
    expect(signal.aborted).toBe(true)
    expect(onAbort).toHaveBeenCalledTimes(1)
    // The partial output is still settled: the run goes on to settling with what streamRun returns.
    h.streams[0]!.d.resolve(result('cancelled'))
    await h.at({ running: 'settling' })
    expect(h.settles[0]!.input.result.status).toBe('cancelled')
  })

  it('CANCEL naming another run is ignored', async () => {
    const h = await streaming('run-1')
    h.actor.send({ type: 'CANCEL', runId: 'run-2' })
    expect(h.state()).toEqual({ running: { streaming: 'live' } })
    expect(h.streams[0]!.input.signal.aborted).toBe(false)
  })

  it('CANCEL while idle or packing does nothing', async () => {
    const h = harness()
    h.actor.send({ type: 'CANCEL', runId: 'run-1' })
    expect(h.state()).toBe('idle')
    h.submit()
    await h.at({ running: { packing: 'writing' } })
    h.actor.send({ type: 'CANCEL', runId: 'run-1' })
    expect(h.actor.getSnapshot().matches({ running: 'packing' })).toBe(true)
    expect(h.context().admission).toBeNull()
  })
})

describe('chat machine: settling', () => {
  it('streaming → settling → ready: settleRun gets the admission and result; the run becomes the latest customer run', async () => {
    const h = await streaming('run-1', { latestCustomerRun: { id: 'run-0', status: 'failed' } })
    const r = result('succeeded')
    h.streams[0]!.d.resolve(r)
    await h.at({ running: 'settling' })
    expect(h.settles).toHaveLength(1)
    expect(h.settles[0]!.input).toMatchObject({ chatId: CHAT_ID, admission: h.streams[0]!.input.admission, result: r })
    expect(dataOf(h.settles[0]!.input.admission)).toEqual(h.context().admission)
    expect(h.context().result).toBe(r)
    // Still running until settled: the latest customer run has not changed yet.
    expect(h.context().latestCustomerRun).toEqual({ id: 'run-0', status: 'failed' })
    h.settles[0]!.settle({ cost: '0.01' })
    await h.at('idle')
    expect(h.context()).toMatchObject({
      latestCustomerRun: { id: 'run-1', status: 'succeeded' },
      pendingCalls: [],
      admission: null,
      result: null,
      queued: null,
    })
  })

  it.each(['failed', 'cancelled'] as const)('records a %s run as the latest customer run with its status', async (status) => {
    const h = await streaming('run-9')
    h.streams[0]!.d.resolve(result(status))
    await h.at({ running: 'settling' })
    h.settles[0]!.settle({ cost: null })
    await h.at('idle')
    expect(h.context().latestCustomerRun).toEqual({ id: 'run-9', status })
  })

  it('after a run with tool calls → awaitingToolResults with exactly those calls pending', async () => {
    const h = await streaming('run-1')
    const calls = [
      { tool_name: 'weather', tool_use_id: 'call_1', created_at: '2030-01-02T03:04:06.000Z' },
      { tool_name: 'clock', tool_use_id: 'call_2', created_at: '2030-01-02T03:04:07.000Z' },
    ]
    h.streams[0]!.d.resolve(result('succeeded', calls))
    await h.at({ running: 'settling' })
    h.settles[0]!.settle({ cost: '0' })
    await h.at('awaitingToolResults')
    // Dated as the run stream wrote their tool_call parts, as hydration dates them from the ledger.
    expect(h.context().pendingCalls).toEqual(calls.map((c) => ({ ...c, run_status: 'succeeded' })))
    expect(h.context().latestCustomerRun).toEqual({ id: 'run-1', status: 'succeeded' })

    // The next submission closes them: answered or tombstoned.
    h.submit()
    await vi.waitFor(() => expect(h.admits).toHaveLength(2))
    expect(h.admits[1]!.input.closing.closures.map((c) => c.tool_use_id)).toEqual(['call_1', 'call_2'])
    expect(h.admits[1]!.input.closing.closesCallsOf).toBe('run-1')
  })

  it('calls of a cancelled run stay pending with the run status, so the next turn can tombstone them cancelled', async () => {
    const h = await streaming('run-1')
    h.actor.send({ type: 'CANCEL', runId: 'run-1' })
    h.streams[0]!.d.resolve(result('cancelled', [{ tool_name: 'weather', tool_use_id: 'call_1', created_at: NOW_ISO }]))
    await h.at({ running: 'settling' })
    h.settles[0]!.settle({ cost: '0' })
    await h.at('awaitingToolResults')
    expect(h.context().pendingCalls).toEqual([{ tool_name: 'weather', tool_use_id: 'call_1', created_at: NOW_ISO, run_status: 'cancelled' }])
    expect(h.context().latestCustomerRun).toEqual({ id: 'run-1', status: 'cancelled' })
  })

  it('a settlement that throws is tried again after a backoff, with the same run and result; one that then succeeds settles the run as usual', async () => {
    const h = await streaming('run-1')
    h.streams[0]!.d.resolve(result('succeeded'))
    await h.at({ running: 'settling' })
    h.settles[0]!.d.reject(new Error('disk full'))
    await h.settlementAt('backingOff')
    expect(h.context().settleAttempts).toBe(1)
    await h.settleAttempts(2)
    expect(h.settles[1]!.input).toEqual(h.settles[0]!.input)
    h.settles[1]!.settle()
    await h.at('idle')
    expect(h.context()).toMatchObject({ latestCustomerRun: { id: 'run-1', status: 'succeeded' }, outstanding: null })
    expect(h.releases).toHaveLength(0)
    expect(h.errors).toEqual([])
  })

  it('streaming → settling → ready even when streamRun throws: the run is settled as failed, the chat stays usable', async () => {
    const h = await streaming('run-1')
    h.streams[0]!.d.reject(new Error('database is locked'))
    await h.at({ running: 'settling' })
    expect(h.errors).toEqual([])
    const settled = h.settles[0]!.input.result
    expect(settled.status).toBe('failed')
    expect(settled.error?.code).toBe('internal')
    // No internals reach the customer.
    expect(settled.error?.message).not.toContain('database')
    h.settles[0]!.settle({ cost: '0' })
    await h.at('idle')
    expect(h.context().latestCustomerRun).toEqual({ id: 'run-1', status: 'failed' })
    const next = h.submit()
    expect(h.actor.getSnapshot().matches({ running: 'packing' })).toBe(true)
    expect(next).not.toHaveBeenCalled()
  })

  it('a second run follows the first once it settled', async () => {
    const h = await streaming('run-1')
    h.streams[0]!.d.resolve(result('succeeded'))
    await h.at({ running: 'settling' })
    h.settles[0]!.settle({ cost: '0' })
    await h.at('idle')
    const respond = h.submit()
    await h.at({ running: { packing: 'writing' } })
    const second = admission('run-2')
    h.admits[1]!.d.resolve(second)
    await h.at({ running: { streaming: 'live' } })
    expect(respond).toHaveBeenCalledWith({ kind: 'admitted', admission: second })
    // A fresh abort controller: the first run's cancel cannot touch the second.
    expect(h.streams[1]!.input.signal).not.toBe(h.streams[0]!.input.signal)
    expect(h.streams[1]!.input.signal.aborted).toBe(false)
  })
})

describe('chat machine: refitting after a context refusal (docs/decisions/044-context-refusal-refit.md)', () => {
  const REFUSAL = { wording: 'anthropic-prompt-too-long', vendorCount: 210_000, window: 200_000, maxTokens: null }
  const refused = (): RunOutcome => ({ ...result('failed'), error: { code: 'context_too_large', message: 'refused' }, streamOpened: false, vendorRequests: 1, contextRefusal: REFUSAL })

  it('a refusal before the first byte: refitTurn gets the run and the refusal, then streamRun the refitted run; nothing is settled in between', async () => {
    const h = await streaming('run-r')
    h.streams[0]!.d.resolve(refused())
    await h.at({ running: 'refitting' })
    expect(h.refits[0]!.input.refusal).toEqual(REFUSAL)
    expect(h.refits[0]!.input.admission.runId).toBe('run-r')
    expect(h.settles).toHaveLength(0)
    const refitted = { ...h.refits[0]!.input.admission, refits: 1, estimatedInputTokens: 7 }
    h.refits[0]!.d.resolve(refitted)
    await h.at({ running: { streaming: 'live' } })
    expect(h.streams).toHaveLength(2)
    expect(h.streams[1]!.input.admission.refits).toBe(1)
    h.streams[1]!.d.resolve(result('succeeded'))
    await h.at({ running: 'settling' })
    expect(h.settles[0]!.input.result.status).toBe('succeeded')
  })

  it('a second refusal is not refitted: the run settles with it (MAX_REFITS is one)', async () => {
    const h = await streaming('run-r')
    h.streams[0]!.d.resolve(refused())
    await h.at({ running: 'refitting' })
    h.refits[0]!.d.resolve({ ...h.refits[0]!.input.admission, refits: 1 })
    await h.at({ running: { streaming: 'live' } })
    h.streams[1]!.d.resolve(refused())
    await h.at({ running: 'settling' })
    expect(h.refits).toHaveLength(1)
    expect(h.settles[0]!.input.result.contextRefusal).toEqual(REFUSAL)
  })

  it('any other failure before the stream is settled as it is, never refitted', async () => {
    const h = await streaming('run-r')
    h.streams[0]!.d.resolve({ ...result('failed'), streamOpened: false })
    await h.at({ running: 'settling' })
    expect(h.refits).toHaveLength(0)
  })

  it('a refit that fails settles the refused run, its refusal kept for the client', async () => {
    const h = await streaming('run-r')
    h.streams[0]!.d.resolve(refused())
    await h.at({ running: 'refitting' })
    h.refits[0]!.d.reject(new Error('the fixed parts no longer fit'))
    await h.at({ running: 'settling' })
    expect(h.settles[0]!.input.result.contextRefusal).toEqual(REFUSAL)
  })

  it('a cancel while refitting settles the run cancelled', async () => {
    const h = await streaming('run-r')
    h.streams[0]!.d.resolve(refused())
    await h.at({ running: 'refitting' })
    h.actor.send({ type: 'CANCEL', runId: 'run-r' })
    await h.at({ running: 'settling' })
    expect(h.settles[0]!.input.result.status).toBe('cancelled')
  })
})

describe('chat machine: compacting', () => {
  async function compacting(runId = 'run-c', blocks = 2, elsewhere = 0) {
    const h = harness()
    const respond = h.submit()
    await h.at({ running: { packing: 'writing' } })
    const admitted = needing(runId, blocks, elsewhere)
    h.admits[0]!.d.resolve(admitted)
    await h.at({ running: 'compacting' })
    return { ...h, respond, admitted }
  }

  it('packing → compacting when the admitted run needs summaries: the caller is answered, compactHistory gets the run and a live signal', async () => {
    const h = await compacting('run-c', 3)
    expect(h.respond).toHaveBeenCalledWith({ kind: 'admitted', admission: h.admitted })
    expect(h.compacts).toHaveLength(1)
    expect(h.compacts[0]!.input.admission).toBe(h.admitted)
    expect(h.compacts[0]!.input.admission.compaction).toEqual({ blocks: [block(0), block(1), block(2)], inProgressElsewhere: 0, elsewhere: [] })
    expect(h.compacts[0]!.input.signal.aborted).toBe(false)
    expect(h.context().admission).toEqual(dataOf(h.admitted))
    expect(h.context().queued).toBeNull()
    expect(h.streams).toHaveLength(0)
  })

  it('compacting opens the stream and announces the blocks to make in a compacting frame', async () => {
    const h = await compacting('run-c', 3)
    expect(h.admitted.channel.opened).toBe(true)
    expect(framesOf(h.admitted)).toEqual([{ event: 'compacting', data: { blocks: 3, in_progress_elsewhere: 0 } }])
  })

  it('the compacting frame counts blocks made elsewhere apart from those this turn makes', async () => {
    const h = await compacting('run-c', 3, 1)
    expect(framesOf(h.admitted)).toEqual([{ event: 'compacting', data: { blocks: 2, in_progress_elsewhere: 1 } }])
    expect(h.compacts[0]!.input.admission.compaction?.elsewhere).toEqual([blockKey(block(2))])
  })

  it.each([
    ['no blocks', (a: Admission) => needing(a.runId, 0)],
    ['no compaction at all', (a: Admission) => a],
  ])('packing → streaming when compaction asks for %s: no compacting frame, compactHistory not called', async (_, make) => {
    const h = harness()
    h.submit()
    await h.at({ running: { packing: 'writing' } })
    const a = make(admission('run-0'))
    h.admits[0]!.d.resolve(a)
    await h.at({ running: { streaming: 'live' } })
    expect(h.compacts).toHaveLength(0)
    expect(framesOf(a)).toEqual([])
    expect(h.streams[0]!.input.admission).toBe(a)
  })

  it('compacting → streaming with the re-packed run: streamRun gets what compactHistory returned', async () => {
    const h = await compacting()
    const repacked = { ...admission('run-c'), compaction: null, estimatedInputTokens: 42 } as Admission
    h.compacts[0]!.d.resolve(repacked)
    await h.at({ running: { streaming: 'live' } })
    expect(h.streams[0]!.input.admission).toBe(repacked)
    expect(h.context().admission).toEqual(dataOf(repacked))
  })

  it('compacting then streaming then settling: the frame, then the re-packed prompt and report reach streamRun and settleRun', async () => {
    const h = await compacting('run-c', 2)
    expect(framesOf(h.admitted)).toEqual([{ event: 'compacting', data: { blocks: 2, in_progress_elsewhere: 0 } }])
    const signal = h.compacts[0]!.input.signal
    const repacked: Admission = {
      ...h.admitted,
      prompt: [{ role: 'user', content: [{ type: 'text', text: 'Summary of ordinals 1-20: hello' }] }],
      compaction: null,
      compactionReport: { blocks_generated: 2, blocks_reused: 0, in_progress_elsewhere: 0 },
    }
    h.compacts[0]!.d.resolve(repacked)
    await h.at({ running: { streaming: 'live' } })
    expect(h.streams).toHaveLength(1)
    expect(h.streams[0]!.input.admission).toBe(repacked)
    expect(h.streams[0]!.input.admission.prompt).toEqual(repacked.prompt)
    expect(h.streams[0]!.input.admission.compactionReport).toEqual({ blocks_generated: 2, blocks_reused: 0, in_progress_elsewhere: 0 })
    // The same run: one abort controller from admission to settlement.
    expect(h.streams[0]!.input.signal).toBe(signal)
    expect(h.streams[0]!.input.signal.aborted).toBe(false)
    // Compaction announced once, on entry: streaming does not repeat it.
    expect(framesOf(repacked).filter((f) => f.event === 'compacting')).toHaveLength(1)

    const r = result('succeeded')
    h.streams[0]!.d.resolve(r)
    await h.at({ running: 'settling' })
    expect(h.settles[0]!.input).toMatchObject({ chatId: CHAT_ID, admission: repacked, result: r })
    expect(h.settles[0]!.input.admission).toBe(repacked)
    h.settles[0]!.settle()
    await h.at('idle')
    expect(h.context()).toMatchObject({ latestCustomerRun: { id: 'run-c', status: 'succeeded' }, admission: null, result: null })
  })

  it('compacting → settling when compaction fails: the run is settled failed with compaction_failed, then ready', async () => {
    const h = await compacting()
    h.compacts[0]!.d.reject(new Error('summariser down'))
    await h.at({ running: 'settling' })
    expect(h.errors).toEqual([])
    const settled = h.settles[0]!.input.result
    expect(settled.status).toBe('failed')
    expect(settled.error).toEqual({ code: 'compaction_failed', message: 'the history could not be summarised: summariser down' })
    expect(settled.usage).toEqual(ZERO_USAGE)
    expect(settled.pendingToolCalls).toEqual([])
    expect(h.settles[0]!.input.admission).toBe(h.admitted)
    expect(h.streams).toHaveLength(0)
    h.settles[0]!.settle({ cost: '0' })
    await h.at('idle')
    expect(h.context().latestCustomerRun).toEqual({ id: 'run-c', status: 'failed' })
  })

  it('after a failed compaction the chat is usable: the next SUBMIT is admitted and streams', async () => {
    const h = await compacting('run-c')
    h.compacts[0]!.d.reject('not an Error')
    await h.at({ running: 'settling' })
    expect(h.settles[0]!.input.result.error).toEqual({ code: 'compaction_failed', message: 'the history could not be summarised: not an Error' })
    h.settles[0]!.settle()
    await h.at('idle')
    const respond = h.submit()
    await h.at({ running: { packing: 'writing' } })
    expect(h.admits[1]!.input.closing.closures).toEqual([])
    const next = admission('run-d')
    h.admits[1]!.d.resolve(next)
    await h.at({ running: { streaming: 'live' } })
    expect(respond).toHaveBeenCalledWith({ kind: 'admitted', admission: next })
    expect(h.streams[0]!.input.admission).toBe(next)
    expect(h.streams[0]!.input.signal.aborted).toBe(false)
  })

  it('CANCEL while compacting → settling as cancelled; the abort signal fires and no provider call starts', async () => {
    const h = await compacting('run-x')
    const signal = h.compacts[0]!.input.signal
    const onAbort = vi.fn()
    signal.addEventListener('abort', onAbort)
    h.actor.send({ type: 'CANCEL', runId: 'run-x' })
    expect(h.state()).toEqual({ running: { settling: 'recording' } })
    expect(signal.aborted).toBe(true)
    expect(onAbort).toHaveBeenCalledTimes(1)
    const settled = h.settles[0]!.input
    expect(settled.admission).toBe(h.admitted)
    expect(settled.result).toMatchObject({ status: 'cancelled', error: null, usage: ZERO_USAGE, pendingToolCalls: [], stopReason: null })
    expect(h.streams).toHaveLength(0)
    // compactHistory settling late changes nothing: its invocation was stopped with the state.
    h.compacts[0]!.d.resolve({ ...h.admitted, compaction: null })
    await Promise.resolve()
    expect(h.state()).toEqual({ running: { settling: 'recording' } })
    expect(h.streams).toHaveLength(0)
    h.settles[0]!.settle()
    await h.at('idle')
    expect(h.context()).toMatchObject({ latestCustomerRun: { id: 'run-x', status: 'cancelled' }, admission: null, result: null })
    expect(h.errors).toEqual([])
  })

  it('CANCEL naming another run while compacting is ignored', async () => {
    const h = await compacting('run-x')
    h.actor.send({ type: 'CANCEL', runId: 'someone-else' })
    expect(h.state()).toEqual({ running: 'compacting' })
    expect(h.compacts[0]!.input.signal.aborted).toBe(false)
    expect(h.settles).toHaveLength(0)
  })

  it('a SUBMIT while compacting is rejected with run_in_progress naming the run', async () => {
    const h = await compacting('run-c')
    const other = h.submit(submission('other'))
    const outcome = other.mock.calls[0]![0] as { kind: string; error: unknown }
    expect(outcome.kind).toBe('rejected')
    expect(outcome.error).toBeInstanceOf(RunInProgressError)
    expect((outcome.error as RunInProgressError).details).toEqual({ run_id: 'run-c' })
    expect(h.state()).toEqual({ running: 'compacting' })
    expect(h.admits).toHaveLength(1)
  })
})

/** Runs one turn to settlement on `h` and leaves settleRun pending. */
async function runToSettling(h: ReturnType<typeof harness>, runId: string) {
  const respond = h.submit()
  await h.at({ running: { packing: 'writing' } })
  h.admits.at(-1)!.d.resolve(admission(runId))
  await h.at({ running: { streaming: 'live' } })
  h.streams.at(-1)!.d.resolve(result('succeeded'))
  await h.at({ running: 'settling' })
  return respond
}

describe('chat machine: eager compaction', () => {
  it('a settle with eager blocks spawns compactEagerly with them, beside the turns', async () => {
    const h = harness()
    await runToSettling(h, 'run-1')
    const work = eager(0, 1)
    h.settles[0]!.settle({ cost: '0.01', eager: work })
    await h.at('idle')
    expect(h.eagers).toHaveLength(1)
    expect(h.eagers[0]!.input).toEqual(work)
    expect(h.context().eagerCompaction).toEqual(work)
    expect(h.eagerChild()).toBeDefined()
    expect(h.eagerRunning()).toBe(true)
    // The run itself settled as usual.
    expect(h.context()).toMatchObject({ latestCustomerRun: { id: 'run-1', status: 'succeeded' }, admission: null, result: null })
  })

  it('a second settle while eager work runs spawns no other', async () => {
    const h = harness()
    await runToSettling(h, 'run-1')
    const first = eager(0)
    h.settles[0]!.settle({ eager: first })
    await h.at('idle')
    const child = h.eagerChild()
    await runToSettling(h, 'run-2')
    h.settles[1]!.settle({ eager: eager(1, 2) })
    await h.at('idle')
    expect(h.eagers).toHaveLength(1)
    expect(h.context().eagerCompaction).toEqual(first)
    expect(h.eagerChild()).toBe(child)
    expect(h.context().latestCustomerRun).toEqual({ id: 'run-2', status: 'succeeded' })
  })

  it.each([
    ['resolves', (d: ReturnType<typeof deferred<void>>) => d.resolve()],
    ['rejects', (d: ReturnType<typeof deferred<void>>) => d.reject(new Error('summariser down'))],
  ])('when the child %s, context.eagerCompaction is null and no child runs; the next settle spawns a new one', async (_, end) => {
    const h = harness()
    await runToSettling(h, 'run-1')
    h.settles[0]!.settle({ eager: eager(0) })
    await h.at('idle')
    const first = h.eagerChild()!
    end(h.eagers[0]!.d)
    await h.eagerDone()
    expect(h.eagerRunning()).toBe(false)
    expect(first.getSnapshot().status).not.toBe('active')
    // The finished child is removed, and its input with it.
    expect(h.eagerChild()).toBeUndefined()
    expect(h.state()).toBe('idle')
    expect(h.errors).toEqual([])
    expect(h.actor.getSnapshot().status).toBe('active')

    await runToSettling(h, 'run-2')
    const again = eager(1)
    h.settles[1]!.settle({ eager: again })
    await h.at('idle')
    expect(h.eagers).toHaveLength(2)
    expect(h.eagers[1]!.input).toEqual(again)
    expect(h.context().eagerCompaction).toEqual(again)
    expect(h.eagerChild()).not.toBe(first)
    expect(h.eagerRunning()).toBe(true)
  })

  it.each([
    ['eager: null', null],
    ['no blocks', { job: job(), blocks: [] }],
  ] as const)('a settle with %s spawns nothing', async (_, work) => {
    const h = harness()
    await runToSettling(h, 'run-1')
    h.settles[0]!.settle({ eager: work as EagerCompaction | null })
    await h.at('idle')
    expect(h.eagers).toHaveLength(0)
    expect(h.context().eagerCompaction).toBeNull()
    expect(h.eagerChild()).toBeUndefined()
  })

  it('a settle that throws spawns nothing', async () => {
    const h = harness()
    await runToSettling(h, 'run-1')
    for (let i = 0; i < 4; i++) {
      await h.settleAttempts(i + 1)
      h.settles[i]!.d.reject(new Error('disk full'))
    }
    await h.settlementAt('leavingToSweep')
    h.releases[0]!.d.resolve()
    await h.at('outstanding')
    expect(h.eagers).toHaveLength(0)
    expect(h.context().eagerCompaction).toBeNull()
  })
})

describe('chat machine: a turn during eager compaction', () => {
  /** A chat whose first run settled with eager work on block 0, still running. */
  async function eagerRunning() {
    const h = harness()
    await runToSettling(h, 'run-1')
    h.settles[0]!.settle({ eager: eager(0) })
    await h.at('idle')
    const child = h.eagerChild()!
    expect(child.getSnapshot().status).toBe('active')
    return { ...h, child }
  }

  it('a SUBMIT is admitted, waits in compacting for the blocks made elsewhere, and the eager child outlives its CANCEL and settlement', async () => {
    const h = await eagerRunning()
    const respond = h.submit()
    expect(h.actor.getSnapshot().matches({ running: 'packing' })).toBe(true)
    expect(respond).not.toHaveBeenCalled()
    await h.at({ running: { packing: 'writing' } })
    // Every block this turn needs is the one eager work is making.
    const a = needing('run-2', 1, 1)
    h.admits[1]!.d.resolve(a)
    await h.at({ running: 'compacting' })
    expect(respond).toHaveBeenCalledTimes(1)
    expect(respond).toHaveBeenCalledWith({ kind: 'admitted', admission: a })
    expect(framesOf(a)).toEqual([{ event: 'compacting', data: { blocks: 0, in_progress_elsewhere: 1 } }])
    expect(h.compacts).toHaveLength(1)
    expect(h.compacts[0]!.input.admission.compaction).toEqual({ blocks: [block(0)], inProgressElsewhere: 1, elsewhere: [blockKey(block(0))] })
    expect(h.eagerChild()).toBe(h.child)

    h.actor.send({ type: 'CANCEL', runId: 'run-2' })
    expect(h.state()).toEqual({ running: { settling: 'recording' } })
    expect(h.compacts[0]!.input.signal.aborted).toBe(true)
    expect(h.settles[1]!.input.result).toMatchObject({ status: 'cancelled', usage: ZERO_USAGE })
    expect(h.eagerChild()).toBe(h.child)
    expect(h.child.getSnapshot().status).toBe('active')
    expect(h.context().eagerCompaction).toEqual(eager(0))

    h.settles[1]!.settle()
    await h.at('idle')
    expect(h.context().latestCustomerRun).toEqual({ id: 'run-2', status: 'cancelled' })
    expect(h.eagerChild()).toBe(h.child)
    expect(h.child.getSnapshot().status).toBe('active')
    expect(h.context().eagerCompaction).toEqual(eager(0))
    expect(h.eagers).toHaveLength(1)

    h.eagers[0]!.d.resolve()
    await h.eagerDone()
    expect(h.eagerRunning()).toBe(false)
    expect(h.errors).toEqual([])
  })

  it('a turn needing blocks of its own and blocks made elsewhere streams once compactHistory returns, the eager child still running', async () => {
    const h = await eagerRunning()
    h.submit()
    await h.at({ running: { packing: 'writing' } })
    const a = needing('run-2', 3, 1)
    h.admits[1]!.d.resolve(a)
    await h.at({ running: 'compacting' })
    expect(framesOf(a)).toEqual([{ event: 'compacting', data: { blocks: 2, in_progress_elsewhere: 1 } }])
    const repacked: Admission = { ...a, compaction: null, compactionReport: { blocks_generated: 2, blocks_reused: 0, in_progress_elsewhere: 1 } }
    h.compacts[0]!.d.resolve(repacked)
    await h.at({ running: { streaming: 'live' } })
    expect(h.streams[1]!.input.admission).toBe(repacked)
    expect(h.eagerChild()).toBe(h.child)
    h.streams[1]!.d.resolve(result('succeeded'))
    await h.at({ running: 'settling' })
    // A settle asking for eager work while the child runs spawns nothing more.
    h.settles[1]!.settle({ eager: eager(3) })
    await h.at('idle')
    expect(h.eagers).toHaveLength(1)
    expect(h.eagerChild()).toBe(h.child)
    expect(h.child.getSnapshot().status).toBe('active')
    expect(h.context().eagerCompaction).toEqual(eager(0))
  })

  it('the eager child finishing while a turn compacts frees the chat for the next eager work, the turn unaffected', async () => {
    const h = await eagerRunning()
    h.submit()
    await h.at({ running: { packing: 'writing' } })
    const a = needing('run-2', 1, 1)
    h.admits[1]!.d.resolve(a)
    await h.at({ running: 'compacting' })
    h.eagers[0]!.d.resolve()
    await h.eagerDone()
    expect(h.state()).toEqual({ running: 'compacting' })
    expect(h.eagerRunning()).toBe(false)
    expect(h.compacts[0]!.input.signal.aborted).toBe(false)
    expect(framesOf(a)).toEqual([{ event: 'compacting', data: { blocks: 0, in_progress_elsewhere: 1 } }])
    // The turn goes on when its compactHistory returns; its settle may start the next eager work.
    h.compacts[0]!.d.resolve({ ...a, compaction: null })
    await h.at({ running: { streaming: 'live' } })
    h.streams[1]!.d.resolve(result('succeeded'))
    await h.at({ running: 'settling' })
    const next = eager(1)
    h.settles[1]!.settle({ eager: next })
    await h.at('idle')
    expect(h.eagers).toHaveLength(2)
    expect(h.eagers[1]!.input).toEqual(next)
    expect(h.context().eagerCompaction).toEqual(next)
    expect(h.eagerRunning()).toBe(true)
  })
})

/** A stopped run's result as streamRun returns it after the abort: some output streamed, usage estimated. */
const stopped = (): RunOutcome => ({
  ...result('cancelled'),
  usage: { ...ZERO_USAGE, input_tokens: 120, output_tokens: 7 },
  usageLost: true,
})

const future = () => new Date(Date.now() + 30_000).toISOString()
const past = () => new Date(Date.now() - 1_000).toISOString()

describe('chat machine: delete (decision 020)', () => {
  it.each([
    ['idle', {}],
    ['awaitingToolResults', { pendingCalls: [{ tool_name: 'x', tool_use_id: 'c1', created_at: '2030-01-01T00:00:00.000Z', run_status: 'succeeded' }] as PendingCall[] }],
  ] as const)('DELETE at rest (%s) → deleting → deleted: the rows go, the actor ends, the caller is answered', async (at, input) => {
    const h = harness(input)
    expect(h.state()).toBe(at)
    const respond = h.remove()
    expect(h.state()).toBe('deleting')
    expect(h.deletes).toHaveLength(1)
    expect(h.deletes[0]!.input).toEqual({ chatId: CHAT_ID, outstanding: null })
    expect(respond).not.toHaveBeenCalled()
    h.deletes[0]!.d.resolve()
    await waitFor(h.actor, (s) => s.status === 'done', { timeout: 2_000 })
    expect(respond).toHaveBeenCalledWith({ kind: 'deleted' })
    expect(h.state()).toBe('deleted')
    expect(h.errors).toEqual([])
  })

  it('DELETE while running: the run is stopped, settled cancelled with chat_deleted for what it used, then the chat is deleted', async () => {
    const h = await streaming('run-1')
    const signal = h.streams[0]!.input.signal
    const first = h.remove()
    expect(h.state()).toEqual({ running: { streaming: 'cancelling' } })
    expect(signal.aborted).toBe(true)
    // A turn meanwhile is refused (one running run); a second DELETE waits with the first.
    const turn = h.submit(submission('late'))
    expect(turn.mock.calls[0]![0]).toMatchObject({ kind: 'rejected', error: expect.any(RunInProgressError) })
    const second = h.remove()
    // The provider call returns what it streamed before the abort.
    h.streams[0]!.d.resolve(stopped())
    await h.at({ running: 'settling' })
    expect(h.settles[0]!.input.result).toMatchObject({
      status: 'cancelled',
      stopReason: null,
      error: CHAT_DELETED,
      // Billed for what was used: the packed input and the output streamed.
      usage: { input_tokens: 120, output_tokens: 7 },
      usageLost: true,
    })
    expect(h.deletes).toHaveLength(0)
    // Eager work the settlement asks for is not started for a chat about to go.
    h.settles[0]!.settle({ eager: eager(0) })
    await h.at('deleting')
    expect(h.eagers).toHaveLength(0)
    expect(h.context()).toMatchObject({ admission: null, result: null, latestCustomerRun: { id: 'run-1', status: 'cancelled' } })
    const afterSettle = h.submit(submission('later'))
    expect(afterSettle.mock.calls[0]![0]).toMatchObject({ kind: 'rejected', error: expect.any(NotFoundError) })
    h.deletes[0]!.d.resolve()
    await waitFor(h.actor, (s) => s.status === 'done', { timeout: 2_000 })
    expect(first).toHaveBeenCalledWith({ kind: 'deleted' })
    expect(second).toHaveBeenCalledWith({ kind: 'gone' })
    expect(h.errors).toEqual([])
  })

  it('DELETE while a CANCEL is being carried out: the run ends as deleted', async () => {
    const h = await streaming('run-1')
    h.actor.send({ type: 'CANCEL', runId: 'run-1' })
    h.remove()
    h.streams[0]!.d.resolve(stopped())
    await h.at({ running: 'settling' })
    expect(h.settles[0]!.input.result).toMatchObject({ status: 'cancelled', error: CHAT_DELETED })
  })

  it('a run that finished just as the DELETE came is settled as it ended (its done frame is true), then the chat is deleted', async () => {
    const h = await streaming('run-1')
    h.remove()
    h.streams[0]!.d.resolve(result('succeeded'))
    await h.at({ running: 'settling' })
    expect(h.settles[0]!.input.result).toMatchObject({ status: 'succeeded', error: null })
    h.settles[0]!.settle()
    await h.at('deleting')
  })

  it('DELETE while compacting: compaction is aborted, no provider call starts, the run settles cancelled with chat_deleted, eager work is stopped', async () => {
    const h = harness()
    await runToSettling(h, 'run-0')
    h.settles[0]!.settle({ eager: eager(0) })
    await h.at('idle')
    const eagerSignal = h.eagers[0]!.signal
    h.submit()
    await h.at({ running: { packing: 'writing' } })
    const a = needing('run-1', 2, 1)
    h.admits[1]!.d.resolve(a)
    await h.at({ running: 'compacting' })
    const compactSignal = h.compacts[0]!.input.signal
    const respond = h.remove()
    expect(h.state()).toEqual({ running: { settling: 'recording' } })
    expect(compactSignal.aborted).toBe(true)
    expect(h.streams).toHaveLength(1)
    expect(h.settles[1]!.input.admission.runId).toBe('run-1')
    expect(h.settles[1]!.input.result).toMatchObject({ status: 'cancelled', error: CHAT_DELETED, usage: ZERO_USAGE })
    // The eager child still runs while the turn settles; deleting stops it (its runs settle as cancelled).
    expect(eagerSignal.aborted).toBe(false)
    h.settles[1]!.settle()
    await h.at('deleting')
    expect(eagerSignal.aborted).toBe(true)
    expect(h.eagerChild()).toBeUndefined()
    expect(h.context().eagerCompaction).toBeNull()
    h.deletes[0]!.d.resolve()
    await waitFor(h.actor, (s) => s.status === 'done', { timeout: 2_000 })
    expect(respond).toHaveBeenCalledWith({ kind: 'deleted' })
    expect(h.errors).toEqual([])
  })

  it('DELETE while packing: the run admission wrote is announced, then settled with chat_deleted without streaming', async () => {
    const h = harness()
    const turn = h.submit()
    await h.at({ running: { packing: 'writing' } })
    h.remove()
    expect(h.actor.getSnapshot().matches({ running: 'packing' })).toBe(true)
    const a = admission('run-1')
    h.admits[0]!.d.resolve(a)
    await h.at({ running: 'settling' })
    expect(turn).toHaveBeenCalledWith({ kind: 'admitted', admission: a })
    expect(h.streams).toHaveLength(0)
    expect(h.settles[0]!.input.result).toMatchObject({ status: 'cancelled', error: CHAT_DELETED, usage: ZERO_USAGE })
    h.settles[0]!.settle()
    await h.at('deleting')
  })

  it('DELETE while packing, admission refusing: the turn finds the chat gone (404), the chat is deleted', async () => {
    const h = harness()
    const turn = h.submit()
    await h.at({ running: { packing: 'writing' } })
    h.remove()
    h.admits[0]!.d.reject(new Error('FOREIGN KEY constraint failed'))
    await h.at('deleting')
    expect(turn.mock.calls[0]![0]).toMatchObject({ kind: 'rejected', error: expect.any(NotFoundError) })
  })

  it('a deletion that cannot be written answers its error and leaves the chat as it was', async () => {
    const h = harness()
    const respond = h.remove()
    h.deletes[0]!.d.reject(new Error('database is locked'))
    await h.at('idle')
    expect(respond.mock.calls[0]![0]).toMatchObject({ kind: 'failed', error: new Error('database is locked') })
    expect(h.context().deleters).toEqual([])
    expect(h.actor.getSnapshot().status).toBe('active')
  })

  it('DELETE during a settlement retry waits for the settlement, then deletes', async () => {
    const h = await streaming('run-1')
    h.streams[0]!.d.resolve(result('succeeded'))
    await h.at({ running: 'settling' })
    h.settles[0]!.d.reject(new Error('disk I/O error'))
    await h.settlementAt('backingOff')
    h.remove()
    await h.settleAttempts(2)
    h.settles[1]!.settle()
    await h.at('deleting')
  })
})

describe('chat machine: settlement cannot be lost (decision 020)', () => {
  it(`retries ${SETTLE_RETRIES} times at 200 ms × 4^n; the next failure leaves the run to the sweep, outstanding, its stream ended by releaseRun`, async () => {
    expect([1, 2, 3].map(settleRetryDelayMs)).toEqual([200, 800, 3_200])

    const h = await streaming('run-1')
    const res = result('succeeded', [{ tool_name: 'weather', tool_use_id: 'call_1', created_at: NOW_ISO }])
    h.streams[0]!.d.resolve(res)
    for (let i = 0; i <= SETTLE_RETRIES; i++) {
      await h.settleAttempts(i + 1)
      expect(h.state()).toEqual({ running: { settling: 'recording' } })
      h.settles[i]!.d.reject(new Error('SQLITE_FULL: database or disk is full'))
    }
    await h.settlementAt('leavingToSweep')
    expect(h.settles).toHaveLength(SETTLE_RETRIES + 1)
    expect(h.releases).toHaveLength(1)
    expect(h.releases[0]!.input.admission.runId).toBe('run-1')
    expect(h.releases[0]!.input.result).toBe(res)
    // While the run is being left, it is still running: no turn.
    expect(h.submit().mock.calls[0]![0]).toMatchObject({ kind: 'rejected', error: expect.any(RunInProgressError) })
    h.releases[0]!.d.resolve()
    await h.at('outstanding')
    // Never `ready` as if the run had ended: the ledger still shows it running.
    expect(h.context()).toMatchObject({
      admission: null,
      result: null,
      pendingCalls: [],
      latestCustomerRun: { id: 'run-1', status: 'running' },
      outstanding: { id: 'run-1', leaseOwner: null },
    })
    expect(h.errors).toEqual([])
  })

  it('after the run was left to the sweep: a turn is refused while the ledger shows its lease live, and reaps it once the lease lapsed (recovery)', async () => {
    const h = await streaming('run-1')
    h.streams[0]!.d.resolve(result('succeeded'))
    for (let i = 0; i <= SETTLE_RETRIES; i++) {
      await h.settleAttempts(i + 1)
      h.settles[i]!.d.reject(new Error('disk full'))
    }
    await h.settlementAt('leavingToSweep')
    // A release that could not be written changes nothing for the chat.
    h.releases[0]!.d.reject(new Error('disk full'))
    await h.at('outstanding')

    // The release did not reach the ledger: its lease still looks live there.
    const run = { id: 'run-1', leaseOwner: 'node-a', leaseExpiresAt: future() }
    const refused = h.submit(submission(), { runningRun: run, at: new Date().toISOString() })
    expect(refused.mock.calls[0]![0]).toMatchObject({ kind: 'rejected', error: expect.any(RunInProgressError) })
    expect((refused.mock.calls[0]![0] as { error: RunInProgressError }).error.details).toEqual({ run_id: 'run-1' })
    expect(h.state()).toBe('outstanding')

    // Lapsed: the turn reaps it (settled as interrupted), reads the chat's facts again, and goes on.
    const lapsed = { ...run, leaseExpiresAt: past() }
    const admitted = h.submit(submission(), { runningRun: lapsed, at: new Date().toISOString() })
    expect(h.state()).toEqual({ running: 'reaping' })
    expect(h.reaps[0]!.input).toEqual({ chatId: CHAT_ID, run: lapsed })
    const closed: PendingCall[] = [{ tool_name: 'weather', tool_use_id: 'call_1', created_at: '2030-01-02T03:04:05.000Z', run_status: 'failed' }]
    h.reaps[0]!.d.resolve({ pendingCalls: closed, latestCustomerRun: { id: 'run-1', status: 'failed' } })
    await h.at({ running: { packing: 'writing' } })
    expect(h.context().outstanding).toBeNull()
    // Decided again on the reaped facts: the failed run's call is tombstoned `cancelled`.
    expect(h.admits[1]!.input.closing).toMatchObject({ closures: [{ tool_use_id: 'call_1', tombstone: 'cancelled' }], closesCallsOf: 'run-1' })
    h.admits[1]!.d.resolve(admission('run-2'))
    await h.at({ running: { streaming: 'live' } })
    expect(admitted).toHaveBeenCalledWith({ kind: 'admitted', admission: expect.objectContaining({ runId: 'run-2' }) })
  })
})

describe('chat machine: hydrated with a running run in the ledger (decision 020)', () => {
  const lease = future()
  const held = () => ({ id: 'run-x', leaseOwner: 'node-a', leaseExpiresAt: lease })

  it('ready → outstanding, whatever calls are pending: not idle', () => {
    const h = harness({ outstanding: held(), latestCustomerRun: { id: 'run-x', status: 'running' } })
    expect(h.state()).toBe('outstanding')
    expect(h.context().outstanding).toEqual(held())
  })

  it('a turn is refused with run_in_progress naming the run while its lease is live, by the ledger or, without one, by what the actor knows', () => {
    const h = harness({ outstanding: held() })
    const bare = h.submit()
    expect(bare.mock.calls[0]![0]).toMatchObject({ kind: 'rejected', error: expect.any(RunInProgressError) })
    expect((bare.mock.calls[0]![0] as { error: RunInProgressError }).error.details).toEqual({ run_id: 'run-x' })
    expect(h.state()).toBe('outstanding')
    expect(h.admits).toHaveLength(0)
    // CANCEL names no run this actor streams: nothing happens.
    h.actor.send({ type: 'CANCEL', runId: 'run-x' })
    expect(h.state()).toBe('outstanding')
  })

  it('once its lease lapsed, a turn reaps it first; a ledger showing it settled meanwhile (by the sweep) reaps nothing more but reads the facts again', async () => {
    const h = harness({ outstanding: { ...held(), leaseExpiresAt: past() } })
    h.submit()
    expect(h.state()).toEqual({ running: 'reaping' })
    expect(h.reaps[0]!.input.run.id).toBe('run-x')
    h.reaps[0]!.d.resolve({ pendingCalls: [], latestCustomerRun: { id: 'run-x', status: 'failed' } })
    await h.at({ running: { packing: 'writing' } })

    const g = harness({ outstanding: held() })
    const respond = g.submit(submission(), { runningRun: null, at: new Date().toISOString() })
    expect(g.state()).toEqual({ running: 'reaping' })
    expect(g.reaps[0]!.input.run.id).toBe('run-x')
    // A reaping that fails leaves the chat outstanding, the turn answered with the error.
    g.reaps[0]!.d.reject(new Error('database is locked'))
    await g.at('outstanding')
    expect(respond.mock.calls[0]![0]).toMatchObject({ kind: 'rejected', error: new Error('database is locked') })
  })

  it('DELETE of such a chat hands the run to deleteChat, which settles it if its lease lapsed', async () => {
    const h = harness({ outstanding: held() })
    h.remove()
    expect(h.state()).toBe('deleting')
    expect(h.deletes[0]!.input).toEqual({ chatId: CHAT_ID, outstanding: held() })
  })
})

describe('chat machine: the sweep of an interrupted run goes through the actor (decision 020)', () => {
  const lapsed = { id: 'run-x', leaseOwner: 'node-a', leaseExpiresAt: '2030-01-01T00:00:00.000Z' }

  it('outstanding → sweeping on SWEEP: reapRun settles it, the facts are read again, turns wait meanwhile', async () => {
    const h = harness({ outstanding: lapsed })
    h.actor.send({ type: 'SWEEP', run: lapsed })
    expect(h.state()).toBe('sweeping')
    expect(h.reaps[0]!.input).toEqual({ chatId: CHAT_ID, run: lapsed })
    const turn = h.submit()
    expect(turn.mock.calls[0]![0]).toMatchObject({ kind: 'rejected', error: expect.any(RunInProgressError) })
    expect((turn.mock.calls[0]![0] as { error: RunInProgressError }).error.details).toEqual({ run_id: 'run-x' })
    const closed: PendingCall[] = [{ tool_name: 'lookup', tool_use_id: 'c1', created_at: '2030-01-01T00:00:00.000Z', run_status: 'failed' }]
    h.reaps[0]!.d.resolve({ pendingCalls: closed, latestCustomerRun: { id: 'run-x', status: 'failed' } })
    await h.at('awaitingToolResults')
    expect(h.context()).toMatchObject({ outstanding: null, orphan: null, pendingCalls: closed, latestCustomerRun: { id: 'run-x', status: 'failed' } })
  })

  it('a sweep that fails leaves the run outstanding for the next one, also for an actor that did not know of it', async () => {
    const h = harness({ outstanding: lapsed })
    h.actor.send({ type: 'SWEEP', run: lapsed })
    h.reaps[0]!.d.reject(new Error('database is locked'))
    await h.at('outstanding')
    expect(h.context()).toMatchObject({ orphan: null, outstanding: lapsed })
    expect(h.errors).toEqual([])

    const idle = harness()
    idle.actor.send({ type: 'SWEEP', run: lapsed })
    expect(idle.state()).toBe('sweeping')
    idle.reaps[0]!.d.reject(new Error('database is locked'))
    await idle.at('outstanding')
    expect(idle.context().outstanding).toEqual(lapsed)
  })

  it('a DELETE during the sweep is carried out once the run is settled', async () => {
    const h = harness({ outstanding: lapsed })
    h.actor.send({ type: 'SWEEP', run: lapsed })
    const respond = h.remove()
    h.reaps[0]!.d.resolve({ pendingCalls: [], latestCustomerRun: { id: 'run-x', status: 'failed' } })
    await h.at('deleting')
    expect(h.deletes[0]!.input).toEqual({ chatId: CHAT_ID, outstanding: null })
    h.deletes[0]!.d.resolve()
    await waitFor(h.actor, (s) => s.status === 'done', { timeout: 2_000 })
    expect(respond).toHaveBeenCalledWith({ kind: 'deleted' })
  })

  it('while running its own run, the actor ignores the sweep: it settles that run itself', async () => {
    const h = await streaming('run-1')
    h.actor.send({ type: 'SWEEP', run: { id: 'run-1', leaseOwner: 'node-a', leaseExpiresAt: lapsed.leaseExpiresAt } })
    expect(h.state()).toEqual({ running: { streaming: 'live' } })
    expect(h.reaps).toHaveLength(0)
  })
})

describe('chat machine: the rules of decisions §4 it holds, by name', () => {
  it('awaitsToolResults decides idle or awaitingToolResults at rest (a provided guard overrides it)', () => {
    expect(harness({ pendingCalls: [pending('c1')] }).state()).toBe('awaitingToolResults')
    expect(harness({ pendingCalls: [pending('c1')] }, { guards: { awaitsToolResults: () => false } }).state()).toBe('idle')
    expect(harness({ pendingCalls: [] }, { guards: { awaitsToolResults: () => true } }).state()).toBe('awaitingToolResults')
  })

  it('closePendingCalls is what decides how the pending calls close: without it admission is told of none', async () => {
    const calls = [pending('c1')]
    const closing = vi.fn()
    const h = harness({ pendingCalls: calls }, { actions: { closePendingCalls: closing } })
    h.submit()
    await h.at({ running: { packing: 'writing' } })
    expect(closing).toHaveBeenCalledTimes(1)
    expect(h.admits[0]!.input.closing.closures).toEqual([])
  })

  it('holdCallsOfEndedRun makes the ended run\'s calls pending, dated, with its status; a run without calls leaves none', async () => {
    const h = await streaming('run-1', { pendingCalls: [pending('old')] })
    expect(h.context().pendingCalls).toEqual([])
    h.streams[0]!.d.resolve(result('failed', [{ tool_name: 'lookup', tool_use_id: 'c9', created_at: NOW_ISO }]))
    await h.at({ running: 'settling' })
    h.settles[0]!.settle()
    await h.at('awaitingToolResults')
    expect(h.context().pendingCalls).toEqual([{ tool_name: 'lookup', tool_use_id: 'c9', created_at: NOW_ISO, run_status: 'failed' }])

    // The next turn closes them (a failed run's call: tombstoned `cancelled`) and ends without calls: idle again.
    h.submit()
    await h.at({ running: { packing: 'writing' } })
    expect(h.admits[1]!.input.closing).toMatchObject({ closures: [{ tool_use_id: 'c9', tombstone: 'cancelled' }], closesCallsOf: 'run-1' })
    h.admits[1]!.d.resolve(admission('run-2'))
    await h.at({ running: { streaming: 'live' } })
    h.streams[1]!.d.resolve(result('succeeded'))
    await h.at({ running: 'settling' })
    h.settles[1]!.settle()
    await h.at('idle')
    expect(h.context().pendingCalls).toEqual([])
  })

  it('without holdCallsOfEndedRun a run\'s calls are not held: none is pending after it', async () => {
    const h = harness({}, { actions: { holdCallsOfEndedRun: () => {} } })
    h.submit()
    await h.at({ running: { packing: 'writing' } })
    h.admits[0]!.d.resolve(admission('run-1'))
    await h.at({ running: { streaming: 'live' } })
    h.streams[0]!.d.resolve(result('succeeded', [{ tool_name: 'lookup', tool_use_id: 'c1', created_at: NOW_ISO }]))
    await h.at({ running: 'settling' })
    h.settles[0]!.settle()
    await h.at('awaitingToolResults')
    expect(h.context().pendingCalls).toEqual([])
    expect(h.context().latestCustomerRun).toEqual({ id: 'run-1', status: 'succeeded' })
  })
})

describe('chat machine: one clock, the service\'s, read by the host and carried by the events', () => {
  const T = '2031-03-04T05:06:07.000Z'
  const at = (iso: string) => () => new Date(iso)

  it('without a ledger reading, whether an outstanding run\'s lease is live is read at the instant the SUBMIT carries, not on the wall clock', () => {
    const run = { id: 'run-x', leaseOwner: 'node-a', leaseExpiresAt: T }
    const before = harness({ outstanding: run, now: at('2031-03-04T05:06:06.999Z') })
    expect(before.submit().mock.calls[0]![0]).toMatchObject({ kind: 'rejected', error: expect.any(RunInProgressError) })
    expect(before.state()).toBe('outstanding')

    const after = harness({ outstanding: run, now: at(T) })
    after.submit()
    expect(after.state()).toEqual({ running: 'reaping' })
  })

  it('a run left to the sweep is outstanding with its lease lapsed: at its creation, an instant already past', async () => {
    const h = harness({ now: at(T) })
    h.submit()
    await h.at({ running: { packing: 'writing' } })
    h.admits[0]!.d.resolve(admission('run-1'))
    await h.at({ running: { streaming: 'live' } })
    h.streams[0]!.d.resolve(result('succeeded'))
    for (let i = 0; i <= SETTLE_RETRIES; i++) {
      await h.settleAttempts(i + 1)
      h.settles[i]!.d.reject(new Error('disk full'))
    }
    await h.settlementAt('leavingToSweep')
    h.releases[0]!.d.resolve()
    await h.at('outstanding')
    expect(h.context().outstanding).toEqual({ id: 'run-1', leaseOwner: null, leaseExpiresAt: '2030-01-02T03:04:05.000Z' })
  })
})

describe('chat machine: the rules of a submission (decisions §4), as named guards', () => {
  /** A submission answering `answers` and retrying `retryOf`, with what the ledger said of it. */
  const send = (
    h: ReturnType<typeof harness>,
    { answers = [], retryOf = null, retried = null, keyUsedBy = null }: { answers?: string[]; retryOf?: string | null; retried?: { id: string; chatId: string } | null; keyUsedBy?: string | null },
  ) => {
    const s = submission()
    const input = answers.map((id) => ({ body: { type: 'tool_result', tool_use_id: id, text: 'ok' }, media: [], tokens: 1 }))
    const sub = { ...s, request: { ...s.request, retry_of: retryOf }, input: retryOf ? [] : [...s.input, ...input] } as unknown as Submission
    return h.submit(sub, { runningRun: null, at: NOW_ISO, retried, keyUsedBy })
  }
  const refusal = (respond: ReturnType<typeof send>) => {
    expect(respond).toHaveBeenCalledTimes(1)
    const outcome = respond.mock.calls[0]![0]
    if (outcome.kind !== 'rejected') throw new Error(`expected a refusal, got ${outcome.kind}`)
    return outcome.error as { code: string; details?: unknown }
  }
  const failed = { id: 'run-9', status: 'failed' as const }

  it('retriesMissingRun: retry_of naming no run of the organisation is 404; nothing is admitted, the chat stays at rest', () => {
    const h = harness({ latestCustomerRun: failed })
    const error = refusal(send(h, { retryOf: 'run-x' }))
    expect(error).toBeInstanceOf(NotFoundError)
    expect(h.state()).toBe('idle')
    expect(h.admits).toHaveLength(0)
    expect(h.context().queued).toBeNull()
  })

  it('isRetryOfLatestFailedRun: the latest failed customer run of the chat is retried; any other is 409 retry_not_allowed', async () => {
    const h = harness({ latestCustomerRun: failed })
    expect(refusal(send(h, { retryOf: 'run-1', retried: { id: 'run-1', chatId: CHAT_ID } }))).toBeInstanceOf(RetryNotAllowedError)
    expect(refusal(send(h, { retryOf: 'run-9', retried: { id: 'run-9', chatId: 'another-chat' } }))).toMatchObject({
      code: 'retry_not_allowed',
      details: { run_id: 'run-9', latest_run_id: 'run-9', latest_status: 'failed' },
    })
    expect(h.state()).toBe('idle')
    const admitted = send(h, { retryOf: 'run-9', retried: { id: 'run-9', chatId: CHAT_ID } })
    expect(h.actor.getSnapshot().matches({ running: 'packing' })).toBe(true)
    await vi.waitFor(() => expect(h.admits).toHaveLength(1))
    expect(h.admits[0]!.input.submission.request.retry_of).toBe('run-9')
    expect(admitted).not.toHaveBeenCalled()

    // The latest run succeeded: no retry, whatever the ledger says of the run named.
    const g = harness({ latestCustomerRun: { id: 'run-9', status: 'succeeded' } })
    expect(refusal(send(g, { retryOf: 'run-9', retried: { id: 'run-9', chatId: CHAT_ID } }))).toBeInstanceOf(RetryNotAllowedError)
    // The guard decides: provided otherwise, the machine admits it.
    const k = harness({ latestCustomerRun: { id: 'run-9', status: 'succeeded' } }, { guards: { retriesOtherThanLatestFailedRun: () => false } })
    send(k, { retryOf: 'run-9', retried: { id: 'run-9', chatId: CHAT_ID } })
    expect(k.actor.getSnapshot().matches({ running: 'packing' })).toBe(true)
  })

  it('a retry of an orphan is decided after the reaping, on what the ledger then says: the orphan failed, so it may be retried', async () => {
    const orphan = { id: 'run-o', leaseOwner: 'node-a', leaseExpiresAt: '2030-01-01T00:00:00.000Z' }
    const h = harness({ outstanding: orphan, latestCustomerRun: { id: 'run-o', status: 'running' } })
    const s = { ...submission(), request: { model: 'sandbox/echo', input: [], retry_of: 'run-o' }, input: [] } as unknown as Submission
    const respond = h.submit(s, { runningRun: orphan, at: NOW_ISO, retried: { id: 'run-o', chatId: CHAT_ID }, keyUsedBy: null })
    expect(h.state()).toEqual({ running: 'reaping' })
    h.reaps[0]!.d.resolve({ pendingCalls: [], latestCustomerRun: { id: 'run-o', status: 'failed' } })
    await h.at({ running: { packing: 'writing' } })
    expect(h.admits[0]!.input.submission).toBe(s)
    expect(respond).not.toHaveBeenCalled()
  })

  it('reusesIdempotencyKey: a key used within 24 h is 409 naming the first run, whatever its outcome', () => {
    const h = harness()
    const error = refusal(send(h, { keyUsedBy: 'run-first' }))
    expect(error).toBeInstanceOf(IdempotencyKeyReusedError)
    expect(error.details).toEqual({ run_id: 'run-first' })
    expect(h.state()).toBe('idle')
    expect(h.admits).toHaveLength(0)
    const k = harness({}, { guards: { reusesIdempotencyKey: () => false } })
    send(k, { keyUsedBy: 'run-first' })
    expect(k.actor.getSnapshot().matches({ running: 'packing' })).toBe(true)
  })

  it('answersOnlyPendingCalls: a tool_result for an id not pending is 422 naming it and the pending ones; the calls stay pending', () => {
    const idle = harness()
    expect(refusal(send(idle, { answers: ['call_z'] }))).toMatchObject({ code: 'unknown_tool_use_id', details: { tool_use_ids: ['call_z'], pending: [] } })
    expect(idle.state()).toBe('idle')

    const calls = [pending('call_a'), pending('call_b')]
    const h = harness({ pendingCalls: calls, latestCustomerRun: { id: 'run-0', status: 'succeeded' } })
    const error = refusal(send(h, { answers: ['call_a', 'call_z'] }))
    expect(error).toBeInstanceOf(UnknownToolUseIdError)
    expect(error.details).toEqual({ tool_use_ids: ['call_z'], pending: ['call_a', 'call_b'] })
    expect(h.state()).toBe('awaitingToolResults')
    expect(h.context().pendingCalls).toEqual(calls)
    expect(h.admits).toHaveLength(0)
  })

  it('the rules are checked in order: retry, then the key, then the tool ids', () => {
    const h = harness({ pendingCalls: [pending('call_a')] })
    expect(refusal(send(h, { retryOf: 'run-x', keyUsedBy: 'run-k' }))).toBeInstanceOf(NotFoundError)
    expect(refusal(send(h, { answers: ['call_z'], keyUsedBy: 'run-k' }))).toBeInstanceOf(IdempotencyKeyReusedError)
    expect(refusal(send(h, { answers: ['call_z'] }))).toBeInstanceOf(UnknownToolUseIdError)
  })

  it('closePendingCalls: answered calls close by result; the others get tombstones, expired past 24 h by the service clock, cancelled for a failed or cancelled run, abandoned otherwise', async () => {
    const now = new Date('2030-01-03T00:00:00.000Z')
    const calls = [
      pending('answered'),
      pending('old', { created_at: '2030-01-01T23:59:59.000Z' }),
      pending('fresh', { created_at: '2030-01-02T12:00:00.000Z' }),
    ]
    const h = harness({ pendingCalls: calls, latestCustomerRun: { id: 'run-0', status: 'succeeded' }, now: () => now })
    send(h, { answers: ['answered'] })
    await vi.waitFor(() => expect(h.admits).toHaveLength(1))
    const { closing } = h.admits[0]!.input
    expect(closing.closures).toEqual([
      { tool_use_id: 'answered', tool_name: 'lookup', tombstone: null },
      { tool_use_id: 'old', tool_name: 'lookup', tombstone: 'expired' },
      { tool_use_id: 'fresh', tool_name: 'lookup', tombstone: 'abandoned' },
    ])
    expect(closing.tombstones.map((t) => [t.tool_use_id, t.tombstone_reason, t.is_error])).toEqual([
      ['old', 'expired', true],
      ['fresh', 'abandoned', true],
    ])
    expect(closing.closesCallsOf).toBe('run-0')

    const c = harness({ pendingCalls: [pending('c1', { run_status: 'cancelled', created_at: '2030-01-02T12:00:00.000Z' })], now: () => now })
    send(c, {})
    await vi.waitFor(() => expect(c.admits).toHaveLength(1))
    expect(c.admits[0]!.input.closing.closures).toEqual([{ tool_use_id: 'c1', tool_name: 'lookup', tombstone: 'cancelled' }])
  })

  it('startRun: the calls close once the run is admitted; a refused admission (402) leaves them pending for the next submission', async () => {
    const calls = [pending('call_a')]
    const h = harness({ pendingCalls: calls })
    send(h, {})
    await vi.waitFor(() => expect(h.admits).toHaveLength(1))
    expect(h.context().pendingCalls).toEqual(calls)
    h.admits[0]!.d.reject(new InsufficientBalanceError('the balance cannot pay', {}))
    await h.at('awaitingToolResults')
    expect(h.context().pendingCalls).toEqual(calls)
    send(h, {})
    await vi.waitFor(() => expect(h.admits).toHaveLength(2))
    h.admits[1]!.d.resolve(admission('run-2'))
    await h.at({ running: { streaming: 'live' } })
    expect(h.context().pendingCalls).toEqual([])
  })
})

describe('chat machine: shutdown (INTERRUPT)', () => {
  it('a streaming run is stopped and settled as failed `interrupted`, keeping what it streamed', async () => {
    const h = await streaming('run-1')
    h.actor.send({ type: 'INTERRUPT', message: 'the server shut down' })
    expect(h.state()).toEqual({ running: { streaming: 'cancelling' } })
    expect(h.streams[0]!.input.signal.aborted).toBe(true)
    h.streams[0]!.d.resolve({ ...result('cancelled'), usage: { ...ZERO_USAGE, output_tokens: 7 } })
    await h.at({ running: 'settling' })
    const settled = h.settles[0]!.input.result
    expect(settled).toMatchObject({ status: 'failed', stopReason: null, error: { code: 'interrupted', message: 'interrupted' } })
    expect(settled.usage.output_tokens).toBe(7)
    h.settles[0]!.settle()
    await h.at('idle')
    expect(h.context()).toMatchObject({ latestCustomerRun: { id: 'run-1', status: 'failed' }, interruption: null })
  })

  it('a run that succeeded before the interruption took effect stays succeeded', async () => {
    const h = await streaming('run-1')
    h.actor.send({ type: 'INTERRUPT', message: 'bye' })
    h.streams[0]!.d.resolve(result('succeeded'))
    await h.at({ running: 'settling' })
    expect(h.settles[0]!.input.result.status).toBe('succeeded')
  })

  it('a run being admitted is interrupted once written, before it streams', async () => {
    const h = harness()
    const respond = h.submit()
    await h.at({ running: { packing: 'writing' } })
    h.actor.send({ type: 'INTERRUPT', message: 'bye' })
    h.admits[0]!.d.resolve(admission('run-1'))
    await h.at({ running: 'settling' })
    expect(respond).toHaveBeenCalledWith(expect.objectContaining({ kind: 'admitted' }))
    expect(h.streams).toHaveLength(0)
    expect(h.settles[0]!.input.result).toMatchObject({ status: 'failed', error: { code: 'interrupted' } })
  })

  it('an interruption of a refused admission is forgotten: the next run streams normally', async () => {
    const h = harness()
    h.submit()
    await h.at({ running: { packing: 'writing' } })
    h.actor.send({ type: 'INTERRUPT', message: 'bye' })
    h.admits[0]!.d.reject(new Error('refused'))
    await h.at('idle')
    expect(h.context().interruption).toBeNull()
  })

  it('at rest it does nothing', () => {
    const h = harness()
    h.actor.send({ type: 'INTERRUPT', message: 'bye' })
    expect(h.state()).toBe('idle')
  })
})

describe('chat machine: demotion (RELINQUISH)', () => {
  it('a streaming run ends with `unavailable` naming the run, the provider call is stopped, and the actor ends without settling', async () => {
    const h = await streaming('run-1')
    const a = h.streams[0]!.input.admission
    h.actor.send({ type: 'RELINQUISH', message: 'this node is no longer the primary' })
    expect(h.actor.getSnapshot().status).toBe('done')
    expect(h.streams[0]!.input.signal.aborted).toBe(true)
    const last = framesOf(a).at(-1)!
    expect(last.event).toBe('error')
    expect(last.data).toMatchObject({ code: 'unavailable', message: 'this node is no longer the primary', details: { run_id: 'run-1' } })
    expect((last.data as { hint: string }).hint).toContain('retry_of')
    expect(h.settles).toHaveLength(0)
  })

  it('a submission being admitted and a waiting DELETE are refused with 503', async () => {
    const h = harness()
    const respond = h.submit()
    await h.at({ running: { packing: 'writing' } })
    const deleted = h.remove()
    h.actor.send({ type: 'RELINQUISH', message: 'demoted' })
    expect(respond.mock.calls[0]![0]).toMatchObject({ kind: 'rejected', error: { code: 'unavailable' } })
    expect(deleted.mock.calls[0]![0]).toMatchObject({ kind: 'failed', error: { code: 'unavailable' } })
    expect(h.actor.getSnapshot().status).toBe('done')
  })

  it('at rest the actor simply ends', () => {
    const h = harness()
    h.actor.send({ type: 'RELINQUISH', message: 'demoted' })
    expect(h.actor.getSnapshot().status).toBe('done')
    expect(h.actor.getSnapshot().value).toBe('relinquished')
  })
})

describe('chat machine: FORK (docs/decisions/037-fork.md)', () => {
  const forkIt = (h: ReturnType<typeof harness>, upToOrdinal: number | undefined, ledger: { lastOrdinal: number | null; lastSettledOrdinal: number | null }) =>
    h.fork(upToOrdinal, ledger)

  it('at rest answers the cut, and changes nothing of the chat', () => {
    const h = harness()
    const respond = forkIt(h, 7, { lastOrdinal: 9, lastSettledOrdinal: 9 })
    expect(respond).toHaveBeenCalledWith({ kind: 'cut', upTo: 7 })
    expect(h.state()).toBe('idle')
  })

  it('while a run streams, cuts before its parts by default and refuses an ordinal inside them with 422 at /up_to_ordinal; the run goes on', async () => {
    const h = await streaming('run-1')
    expect(forkIt(h, undefined, { lastOrdinal: 12, lastSettledOrdinal: 9 })).toHaveBeenCalledWith({ kind: 'cut', upTo: 9 })
    const refused = forkIt(h, 10, { lastOrdinal: 12, lastSettledOrdinal: 9 })
    const outcome = refused.mock.calls[0]![0]
    expect(outcome.kind).toBe('refused')
    const error = (outcome as { error: ValidationError }).error
    expect(error).toBeInstanceOf(ValidationError)
    expect(error.problems).toEqual([{ in: 'body', pointer: '/up_to_ordinal', message: expect.stringContaining('not settled') }])
    expect(h.state()).toEqual({ running: { streaming: 'live' } })
    expect(h.context().admission?.runId).toBe('run-1')
  })

  it('refuses an ordinal beyond the ledger', () => {
    const h = harness()
    expect(forkIt(h, 10, { lastOrdinal: 9, lastSettledOrdinal: 9 }).mock.calls[0]![0].kind).toBe('refused')
  })

  it('a chat being deleted is not found', async () => {
    const h = harness()
    h.remove()
    await h.at('deleting')
    const outcome = forkIt(h, undefined, { lastOrdinal: 9, lastSettledOrdinal: 9 }).mock.calls[0]![0]
    expect(outcome.kind === 'refused' && outcome.error).toBeInstanceOf(NotFoundError)
  })
})
