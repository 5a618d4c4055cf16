import type { Actor } from 'xstate'
import { relinquishedFrame, type chatMachine } from '../../machines/chat.machine.ts'
import type { DeleteOutcome, ForkOutcome, RunAdmission } from '../../machines/chat.types.ts'
import { openingFrames, RunChannel } from './run-channel.ts'
import type { ReadTurn } from './admit-turn.ts'
import type { Admission } from './turn-types.ts'
import type { CompactionsInFlight } from './compactor.ts'

/** A request that waits for the machine's answer (DELETE, FORK): settled by the host when the machine emits it. */
type Waiter<T> = { resolve: (outcome: T) => void }

/**
 * Everything a chat's actor keeps besides its machine's context (issue 25: the actor owns all of its
 * chat's memory). The context holds data only; what cannot be data lives here, one object per chat,
 * created with the actor and dropped with it:
 * - the event log of each submission in flight and of each run streaming (src/actors/run-channel.ts);
 * - each running run's full admission (the prompt, the tools, the manifest's inputs) and the
 *   AbortController that stops its provider call, keyed by run id;
 * - the DELETE and FORK requests waiting for the machine's answer;
 * - the runs whose leases this node released (never renewed again);
 * - the chat's blocks being summarised now.
 * The chat's kept history (src/actors/context-history.ts) goes with the actor too: the host forgets
 * it whenever it drops the actor.
 */
export class ChatRuntime {
  /** Submissions sent to the machine and not yet admitted or rejected, by request id. */
  private readonly submissions = new Map<string, RunChannel>()
  /** Turns readTurn read and packed, waiting for the machine's turn rules and writeTurn, by request id. */
  private readonly reads = new Map<string, ReadTurn>()
  /** Admissions written by writeTurn, waiting for the machine to announce them, by request id. */
  private readonly admitted = new Map<string, Admission>()
  private readonly runs = new Map<string, { admission: Admission; abort: AbortController }>()
  readonly deletes = new Map<string, Waiter<DeleteOutcome>>()
  readonly forks = new Map<string, Waiter<ForkOutcome>>()
  /**
   * Runs of this chat whose settlement this node gave up (decision 020): their leases were released
   * and are never renewed here, even if the release could not be written; the sweep settles them.
   */
  readonly released = new Set<string>()
  /** The chat's blocks being summarised now (src/actors/compactor.ts), so a turn waits for them rather than making them twice. */
  readonly compactions: CompactionsInFlight = new Map()
  private nextRequest = 1

  readonly chatId: string

  constructor(chatId: string) {
    this.chatId = chatId
  }

  /** A new request id for an event sent to this chat's machine. */
  requestId(): string {
    return `${this.chatId}#${this.nextRequest++}`
  }

  /** The event log of a submission about to be sent. */
  openSubmission(requestId: string): RunChannel {
    const channel = new RunChannel()
    this.submissions.set(requestId, channel)
    return channel
  }

  submissionLog(requestId: string): RunChannel | undefined {
    return this.submissions.get(requestId)
  }

  /** readTurn read and packed the turn: kept for writeTurn; the machine gets the facts only. */
  holdRead(requestId: string, read: ReadTurn): void {
    this.reads.set(requestId, read)
  }

  /** The turn readTurn read, for writeTurn to write. */
  takeRead(requestId: string): ReadTurn {
    const read = this.reads.get(requestId)
    this.reads.delete(requestId)
    if (!read) throw new Error(`submission ${requestId} of chat ${this.chatId} was not read`)
    return read
  }

  /** writeTurn wrote the run: kept until the machine says it is this chat's run. */
  holdAdmission(requestId: string, admission: Admission): RunAdmission {
    this.admitted.set(requestId, admission)
    return dataOf(admission)
  }

  /** The machine announced the admission: the run's log opens with its opening frames (ids 1-3, decision 038). */
  announce(requestId: string, runId: string): void {
    const admission = this.admitted.get(requestId)
    const channel = this.submissions.get(requestId)
    this.admitted.delete(requestId)
    this.submissions.delete(requestId)
    if (!admission || !channel || admission.runId !== runId) return
    this.runs.set(runId, { admission, abort: new AbortController() })
    channel.admit(runId, openingFrames(admission))
  }

  reject(requestId: string, error: unknown): void {
    const channel = this.submissions.get(requestId)
    this.submissions.delete(requestId)
    this.reads.delete(requestId)
    this.admitted.delete(requestId)
    channel?.reject(error)
  }

  run(runId: string): { admission: Admission; abort: AbortController } {
    const run = this.runs.get(runId)
    if (!run) throw new Error(`chat ${this.chatId} has no run ${runId} in memory`)
    return run
  }

  /** Compaction packed the run again: the machine's data follows. */
  replaceAdmission(admission: Admission): RunAdmission {
    this.run(admission.runId).admission = admission
    return dataOf(admission)
  }

  /** The live event log of a run streaming here, if any. */
  channelOf(runId: string): RunChannel | null {
    return this.runs.get(runId)?.admission.channel ?? null
  }

  /** The runs streaming here now. */
  runningChannels(): RunChannel[] {
    return [...this.runs.values()].map((run) => run.admission.channel)
  }

  /** The run is settled or left to the sweep: its log lives on with its readers, nothing else. */
  forgetRun(runId: string): void {
    this.runs.delete(runId)
  }

  /** The released runs still running in the ledger (`isRunning`); those settled since are forgotten. */
  releasedStillRunning(isRunning: (runId: string) => boolean): string[] {
    for (const id of this.released) if (!isRunning(id)) this.released.delete(id)
    return [...this.released]
  }

  abort(runId: string): void {
    this.runs.get(runId)?.abort.abort()
  }
}

/** What the machine holds of an admission: plain data. */
export function dataOf(admission: Admission): RunAdmission {
  return {
    runId: admission.runId,
    createdAt: admission.createdAt,
    startedAtMs: admission.startedAtMs,
    estimatedInputTokens: admission.estimatedInputTokens,
    compaction: admission.compaction && { blocks: admission.compaction.blocks.length, inProgressElsewhere: admission.compaction.inProgressElsewhere },
    refits: admission.refits,
  }
}

/** What the machine emits, carried out on the chat's runtime: the only way its decisions leave it. */
export function followMachine(actor: Actor<typeof chatMachine>, runtime: ChatRuntime): void {
  actor.on('admitted', (e) => runtime.announce(e.requestId, e.runId))
  actor.on('rejected', (e) => runtime.reject(e.requestId, e.error))
  actor.on('deleteAnswered', (e) => {
    runtime.deletes.get(e.requestId)?.resolve(e.outcome)
    runtime.deletes.delete(e.requestId)
  })
  actor.on('forkAnswered', (e) => {
    runtime.forks.get(e.requestId)?.resolve(e.outcome)
    runtime.forks.delete(e.requestId)
  })
  actor.on('abortRequested', (e) => runtime.abort(e.runId))
  actor.on('compacting', (e) => {
    const channel = runtime.channelOf(e.runId)
    channel?.open()
    channel?.push('compacting', { blocks: e.blocks, in_progress_elsewhere: e.inProgressElsewhere })
  })
  actor.on('relinquished', (e) => {
    runtime.abort(e.runId)
    const channel = runtime.channelOf(e.runId)
    channel?.open()
    channel?.end('error', relinquishedFrame(e.runId, e.message))
    channel?.markSettled()
    runtime.forgetRun(e.runId)
  })
}
