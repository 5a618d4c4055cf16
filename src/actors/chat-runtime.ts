import type { Actor } from 'xstate'
import { relinquishedFrame, type chatMachine } from '../../machines/chat.machine.ts'
import type { AppendOutcome, ChatEmitted, DeleteOutcome, EraseOutcome, ForkOutcome, RunAdmission } from '../../machines/chat.types.ts'
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
  /**
   * Submissions sent to the machine and not yet admitted or rejected, by request id: each one's event
   * log, then the turn readTurn read and packed (waiting for the machine's turn rules and writeTurn),
   * then the admission writeTurn wrote (waiting for the machine to announce it). Created with the
   * first submission and dropped once none is pending: a chat streaming or at rest holds none (issue 34).
   */
  private pending: Map<string, { channel: RunChannel; read?: ReadTurn; admission?: Admission }> | null = null
  /** The runs streaming here, by run id; null when none. */
  private runs: Map<string, { admission: Admission; abort: AbortController }> | null = null
  private deleteWaiters: Map<string, Waiter<DeleteOutcome>> | null = null
  private forkWaiters: Map<string, Waiter<ForkOutcome>> | null = null
  private appendWaiters: Map<string, Waiter<AppendOutcome>> | null = null
  private eraseWaiters: Map<string, Waiter<EraseOutcome>> | null = null
  private releasedRuns: Set<string> | null = null
  private compactionsInFlight: CompactionsInFlight | null = null
  private nextRequest = 1

  readonly chatId: string

  constructor(chatId: string) {
    this.chatId = chatId
  }

  /** The DELETE requests waiting for the machine's answer (created on first use, as the others below). */
  get deletes(): Map<string, Waiter<DeleteOutcome>> {
    return (this.deleteWaiters ??= new Map())
  }

  /** The APPEND requests waiting for the machine's answer. */
  get appends(): Map<string, Waiter<AppendOutcome>> {
    return (this.appendWaiters ??= new Map())
  }

  /** The ERASE requests waiting for the machine's answer. */
  get erasures(): Map<string, Waiter<EraseOutcome>> {
    return (this.eraseWaiters ??= new Map())
  }

  /** The FORK requests waiting for the machine's answer. */
  get forks(): Map<string, Waiter<ForkOutcome>> {
    return (this.forkWaiters ??= new Map())
  }

  /**
   * Runs of this chat whose settlement this node gave up (decision 020): their leases were released
   * and are never renewed here, even if the release could not be written; the sweep settles them.
   */
  get released(): Set<string> {
    return (this.releasedRuns ??= new Set())
  }

  /** Whether any run's settlement was given up here (see `released`), without creating the set. */
  get hasReleased(): boolean {
    return this.releasedRuns !== null && this.releasedRuns.size > 0
  }

  /** The chat's blocks being summarised now (src/actors/compactor.ts), so a turn waits for them rather than making them twice. */
  get compactions(): CompactionsInFlight {
    return (this.compactionsInFlight ??= new Map())
  }

  /** A new request id for an event sent to this chat's machine. */
  requestId(): string {
    return `${this.chatId}#${this.nextRequest++}`
  }

  /** The event log of a submission about to be sent. */
  openSubmission(requestId: string): RunChannel {
    const channel = new RunChannel()
    ;(this.pending ??= new Map()).set(requestId, { channel })
    return channel
  }

  submissionLog(requestId: string): RunChannel | undefined {
    return this.pending?.get(requestId)?.channel
  }

  /** readTurn read and packed the turn: kept for writeTurn; the machine gets the facts only. */
  holdRead(requestId: string, read: ReadTurn): void {
    const entry = this.pending?.get(requestId)
    if (entry) entry.read = read
  }

  /** The turn readTurn read, for writeTurn to write. */
  takeRead(requestId: string): ReadTurn {
    const entry = this.pending?.get(requestId)
    const read = entry?.read
    if (entry) delete entry.read
    if (!read) throw new Error(`submission ${requestId} of chat ${this.chatId} was not read`)
    return read
  }

  /** writeTurn wrote the run: kept until the machine says it is this chat's run. */
  holdAdmission(requestId: string, admission: Admission): RunAdmission {
    const entry = this.pending?.get(requestId)
    if (entry) entry.admission = admission
    return dataOf(admission)
  }

  /** The submission is decided: nothing more is kept of it here. */
  private settle(requestId: string): { channel: RunChannel; read?: ReadTurn; admission?: Admission } | undefined {
    const entry = this.pending?.get(requestId)
    this.pending?.delete(requestId)
    if (this.pending?.size === 0) this.pending = null
    return entry
  }

  /** The machine announced the admission: the run's log opens with its opening frames (ids 1-3, decision 038). */
  announce(requestId: string, runId: string): void {
    const entry = this.settle(requestId)
    const admission = entry?.admission
    if (!admission || !entry || admission.runId !== runId) return
    ;(this.runs ??= new Map()).set(runId, { admission, abort: new AbortController() })
    entry.channel.admit(runId, openingFrames(admission))
  }

  reject(requestId: string, error: unknown): void {
    this.settle(requestId)?.channel.reject(error)
  }

  run(runId: string): { admission: Admission; abort: AbortController } {
    const run = this.runs?.get(runId)
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
    return this.runs?.get(runId)?.admission.channel ?? null
  }

  /** The runs streaming here now. */
  runningChannels(): RunChannel[] {
    return this.runs === null ? [] : [...this.runs.values()].map((run) => run.admission.channel)
  }

  /** The run is settled or left to the sweep: its log lives on with its readers, nothing else. */
  forgetRun(runId: string): void {
    this.runs?.delete(runId)
    if (this.runs?.size === 0) this.runs = null
  }

  /** The released runs still running in the ledger (`isRunning`); those settled since are forgotten. */
  releasedStillRunning(isRunning: (runId: string) => boolean): string[] {
    if (this.releasedRuns === null) return []
    for (const id of this.releasedRuns) if (!isRunning(id)) this.releasedRuns.delete(id)
    return [...this.releasedRuns]
  }

  abort(runId: string): void {
    this.runs?.get(runId)?.abort.abort()
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
  // One listener for every emitted event (a listener per type cost each live actor a set and a bound function apiece).
  actor.on('*', (e) => carryOut(runtime, e))
}

function carryOut(runtime: ChatRuntime, e: ChatEmitted): void {
  switch (e.type) {
    case 'admitted':
      return runtime.announce(e.requestId, e.runId)
    case 'rejected':
      return runtime.reject(e.requestId, e.error)
    case 'deleteAnswered':
      runtime.deletes.get(e.requestId)?.resolve(e.outcome)
      runtime.deletes.delete(e.requestId)
      return
    case 'forkAnswered':
      runtime.forks.get(e.requestId)?.resolve(e.outcome)
      runtime.forks.delete(e.requestId)
      return
    case 'appendAnswered':
      runtime.appends.get(e.requestId)?.resolve(e.outcome)
      runtime.appends.delete(e.requestId)
      return
    case 'eraseAnswered':
      runtime.erasures.get(e.requestId)?.resolve(e.outcome)
      runtime.erasures.delete(e.requestId)
      return
    case 'abortRequested':
      return runtime.abort(e.runId)
    case 'compacting': {
      const channel = runtime.channelOf(e.runId)
      channel?.open()
      channel?.push('compacting', { blocks: e.blocks, in_progress_elsewhere: e.inProgressElsewhere })
      return
    }
    case 'relinquished': {
      runtime.abort(e.runId)
      const channel = runtime.channelOf(e.runId)
      channel?.open()
      channel?.end('error', relinquishedFrame(e.runId, e.message))
      channel?.markSettled()
      runtime.forgetRun(e.runId)
      return
    }
    default: {
      const unknown: never = e
      throw new Error(`unknown emitted event ${JSON.stringify(unknown)}`)
    }
  }
}
