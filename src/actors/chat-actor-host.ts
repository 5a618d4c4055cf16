import { createActor, fromPromise, type Actor, type InspectionEvent, type Observer, type Snapshot } from 'xstate'
import { chatMachine } from '../../machines/chat.machine.ts'
import type { ChatInput } from '../../machines/chat.types.ts'
import { DomainError, NotFoundError, RunInProgressError, UnavailableError } from '../domain/errors.ts'
import type { PartBody } from '../domain/parts.ts'
import { ALWAYS_PRIMARY, type ReplicationRoleSource } from '../store/replication-role.ts'
import { readTurn, writeTurn } from './admit-turn.ts'
import { readSubmissionFacts } from './read-submission-facts.ts'
import { closeCalls, rejectionError } from '../domain/turns/decide-admission.ts'
import { TURN_RULES } from '../domain/turns/admission-rules.ts'
import { refitTurn } from './refit-turn.ts'
import { compactForTurn } from './compact-for-turn.ts'
import { createCompactor } from './compactor.ts'
import { planEagerCompaction } from './plan-eager-compaction.ts'
import { executeRun } from './execute-run.ts'
import { endStream, endUnsettled, writeSettlement } from './finish-run.ts'
import { leaveToSweep } from './run-lifecycle.ts'
import type { RunDeps } from './run-deps.ts'
import { summariseBlock } from './summarise-block.ts'
import type { BlockSummary } from '../domain/context/render-summary.ts'
import type { BlockToSummarise } from '../domain/context/block-to-summarise.ts'
import type { CompactionJob } from '../domain/context/compaction-job.ts'
import { reapExpiredRun, settleUnstreamedRun, sweepAbandonedRuns, takeOverRunningRuns } from './sweep-abandoned-runs.ts'
import { leaseIsLive } from '../domain/runs/lease.ts'
import type { Submission } from './turn-types.ts'
import { ChatRuntime, followMachine } from './chat-runtime.ts'
import { admissionOf, nextEvent, settledOf, type RunChannel } from './run-channel.ts'
import { createAttachmentHolder } from './attachment-holder.ts'
import type { AttachmentBytes, PreparedPart } from '../domain/turns/submission.ts'
import type { RunRow } from '../store/runs.ts'
import type { ChatRow } from '../store/chats.ts'
import { forkCopier } from '../store/fork-copier.ts'
import type { RunOutcome } from '../domain/runs/run-outcome.ts'
import { noteCommit, storageStall } from '../store/storage-stall.ts'

type ChatActor = Actor<typeof chatMachine>

/** A fork's request, validated by the route: where to cut (absent: every settled part) and the new chat's labels. */
export type ForkRequest = { upToOrdinal?: number | null; title: string | null; description: string | null; userMetadata: unknown }

export type ActorHostOptions = {
  /** Idle actors unused this long are dropped; the ledger rebuilds them on the next use. */
  idleEvictMs?: number
  maxIdleActors?: number
  /**
   * Idle actors unused this long are parked: stopped, kept as their persisted snapshot (plain data,
   * about a tenth of a live actor's heap), and started from it on the next use without reading the
   * ledger (issue 34). The sweep that evicts parks too, so this is at least its period.
   */
  parkAfterMs?: number
  /** How often this node renews its leases and sweeps; a third of the lease TTL unless told. */
  leaseRenewMs?: number
  inspect?: Observer<InspectionEvent>
  /** LiteFS's view of this node (decision 009); without it, the node is the primary. */
  role?: ReplicationRoleSource
  /** Where background failures go (a lease renewal, a sweep, a settlement left to the sweep); stderr unless told. */
  onError?: (what: string, error: unknown) => void
}

/**
 * Where a chat's actor lives: on the LiteFS primary, the only node that writes. Every chat has the
 * same owner; the question stays per chat so that owners could be spread later.
 */
export type ChatOwner = { kind: 'local' } | { kind: 'remote'; url: string } | { kind: 'unknown' }

export function createChatActorHost(deps: RunDeps, options: ActorHostOptions = {}) {
  const role = options.role ?? ALWAYS_PRIMARY
  const idleEvictMs = options.idleEvictMs ?? 60_000
  const maxIdleActors = options.maxIdleActors ?? 10_000
  const parkAfterMs = options.parkAfterMs ?? 1_000
  /** Each chat's actor and its runtime (src/actors/chat-runtime.ts): together, all this node keeps of the chat. */
  const actors = new Map<string, { actor: ChatActor; runtime: ChatRuntime; lastUsed: number; parking?: boolean }>()
  /**
   * Chats at rest whose actor was stopped and kept as its persisted snapshot: what the machine knew
   * of the chat, started again from it on the next use. A chat is in one of the two maps, or neither.
   */
  const parked = new Map<string, { snapshot: Snapshot<unknown>; lastUsed: number }>()
  /** The runtime of a chat whose actor is running here; its invoked actors find their run's resources there. */
  const runtimeOf = (chatId: string): ChatRuntime => {
    const entry = actors.get(chatId)
    if (!entry) throw new Error(`chat ${chatId} has no actor here`)
    return entry.runtime
  }
  /** Set by drain (a shutdown): no new turn is admitted here any more. */
  let draining = false
  const report = options.onError ?? ((what: string, error: unknown) => console.error(`chat actor host: ${what}:`, error))

  const compactor = createCompactor(deps, runtimeOf)
  /** The attachment bytes of submissions not yet decided (decision 049): the machine holds their hashes only. */
  const attachments = createAttachmentHolder((sha256) => deps.store.parts.blob(sha256))
  const machine = chatMachine.provide({
    actors: {
      // Admission in two invoked actors around the machine's turn rules: the reading (the packed turn
      // stays in the runtime, the machine gets the facts) and the writing.
      readTurn: fromPromise(async ({ input }) => {
        const runtime = runtimeOf(input.submission.chatId)
        const { facts, read } = readTurn(deps, input.submission, input.closing, attachments.bytesOf)
        runtime.holdRead(input.requestId, read)
        return facts
      }),
      writeTurn: fromPromise(async ({ input }) => {
        const runtime = runtimeOf(input.submission.chatId)
        const log = runtime.submissionLog(input.requestId)
        if (!log) throw new Error(`submission ${input.requestId} has no event log`)
        const read = runtime.takeRead(input.requestId)
        return runtime.holdAdmission(input.requestId, await writeTurn(deps, compactor, read, input.turn, input.closing, log))
      }),
      compactHistory: fromPromise(async ({ input }) => {
        const runtime = runtimeOf(input.chatId)
        const { admission, abort } = runtime.run(input.admission.runId)
        return runtime.replaceAdmission(await compactForTurn(deps, compactor, admission, abort.signal))
      }),
      refitTurn: fromPromise(async ({ input }) => {
        const runtime = runtimeOf(input.chatId)
        const { admission } = runtime.run(input.admission.runId)
        return runtime.replaceAdmission(await refitTurn(deps, compactor, admission, input.refusal))
      }),
      streamRun: fromPromise(async ({ input }) => {
        const { admission, abort } = runtimeOf(input.chatId).run(input.admission.runId)
        return executeRun(deps, admission, abort.signal)
      }),
      // decision 020: written (a throw is tried again by the chat machine: the stream waits for it),
      // or, once every attempt failed, left to the sweep (releaseRun).
      settleRun: fromPromise(async ({ input }) => {
        const runtime = runtimeOf(input.chatId)
        const { admission } = runtime.run(input.runId)
        const cost = await writeSettlement(deps, admission, input.outcome)
        endStream(admission, input.outcome, cost)
        runtime.forgetRun(admission.runId)
        // A run cancelled or failed still grew the ledger; eager work is planned on what is there now.
        // The run is settled whatever planning meets: its failure must not bring a second settlement.
        let eager = null
        try {
          eager = planEagerCompaction(deps, compactor, admission)
        } catch (error) {
          report(`eager compaction of chat ${admission.chatId} not planned`, error)
        }
        return { cost, eager }
      }),
      // Settlement kept failing: the lease is released and never renewed here, so the sweep settles the run.
      releaseRun: fromPromise(async ({ input }) => {
        const runtime = runtimeOf(input.chatId)
        runtime.released.add(input.runId)
        try {
          await leaveToSweep(deps, input.runId)
        } catch (error) {
          // Unwritten, the lease lapses within its TTL all the same: nobody renews it.
          report(`lease of run ${input.runId} not released`, error)
        } finally {
          endUnsettled(runtime.run(input.runId).admission)
          runtime.forgetRun(input.runId)
        }
      }),
      // decision 020: the chat's rows in one transaction; an outstanding run whose lease lapsed is settled first.
      // decision 055: items outside a turn, written with no run, attachments from the holder as admission's are.
      appendParts: fromPromise(async ({ input }) => {
        const parts = input.parts.map((part) => ({
          body: part.body,
          runId: null,
          userMetadata: {},
          tokens: part.tokens,
          media: part.media.map(({ byte_len: _, ...ref }) => ({ ...ref, bytes: attachments.bytesOf(ref.sha256) })),
        }))
        const written = await deps.store.writes.write(() => deps.store.parts.append(input.chatId, parts))
        return written.map((row) => row.ordinal)
      }),
      // decision 056: the parts and the summaries written from them go in one transaction; packing
      // then reads the chat again from the ledger, and the machine the chat's facts.
      eraseParts: fromPromise(async ({ input }) => {
        await deps.store.writes.write(() => deps.store.erasures.erase(input.chatId, input.ordinals))
        deps.history.forget(input.chatId)
        const { chatId: _, outstanding: __, ...facts } = hydrate(input.chatId)
        return facts
      }),
      deleteChat: fromPromise(async ({ input }) => {
        await deps.store.writes.write(() => {
          if (input.outstanding) {
            try {
              // Its own savepoint: a settlement that fails is undone alone and left to the sweep.
              deps.store.db.transaction(() => reapExpiredRun(deps, input.outstanding!.id))()
            } catch (error) {
              report(`run ${input.outstanding.id} of deleted chat ${input.chatId} left to the sweep`, error)
            }
          }
          deps.store.chats.deleteById(input.chatId)
        })
      }),
      // docs/guide/runs.md: an orphan whose lease expired is settled before the turn that found it.
      reapRun: fromPromise(async ({ input }) => {
        try {
          await deps.store.writes.write(() => reapExpiredRun(deps, input.run.id))
        } catch (error) {
          if (error instanceof DomainError) throw error
          // It cannot be settled now (decision 020): the turn is refused as the run is still running.
          report(`run ${input.run.id} not reaped`, error)
          throw new RunInProgressError(input.run.id)
        }
        const { chatId: _, outstanding: __, ...facts } = hydrate(input.chatId)
        return facts
      }),
      // Background work: not tied to any caller, so nothing cancels it; each run settles on its own.
      // Its signal fires only when the chat is deleted (the machine stops the child then).
      compactEagerly: fromPromise(async ({ input, signal }) => {
        await compactor.summarise(input.job, input.blocks, signal)
      }),
    },
  })

  /**
   * Rebuilds what the actor needs from the ledger: the latest customer run and its open calls, and
   * the chat's running customer run, which no actor here streams since the actor is new (decision 020).
   */
  function hydrate(chatId: string): ChatInput {
    const outstanding = deps.store.runs.runningCustomerRun(chatId)
    const latest = deps.store.runs.latestCustomerRun(chatId)
    if (!latest) {
      // A fork that made no run of its own yet: the calls its source left pending at the cut (decision 037).
      const inherited = deps.store.forks.inheritedPending(chatId)
      if (inherited) return { chatId, outstanding, pendingCalls: inherited.calls, latestCustomerRun: inherited.latest }
    }
    if (!latest || latest.status === 'running') {
      return { chatId, outstanding, pendingCalls: [], latestCustomerRun: latest ? { id: latest.id, status: latest.status } : null }
    }
    // This chat's parts only: a fork holds copies of them under the same run id (decision 037).
    const pendingCalls = deps.store.parts.ofRunInChat(latest.id, chatId).flatMap((row) => {
      const body = JSON.parse(row.body) as PartBody
      return body.type === 'tool_call'
        ? [{ tool_use_id: body.tool_use_id, tool_name: body.tool_name, created_at: row.created_at, run_status: latest.status }]
        : []
    })
    return { chatId, outstanding, pendingCalls, latestCustomerRun: { id: latest.id, status: latest.status } }
  }

  function actorFor(chatId: string): ChatActor {
    return entryFor(chatId).actor
  }

  /** The chat's actor and runtime, hydrated from the ledger when this node has none. */
  function entryFor(chatId: string): { actor: ChatActor; runtime: ChatRuntime } {
    const found = actors.get(chatId)
    if (found) {
      found.lastUsed = Date.now()
      return found
    }
    const wasParked = parked.get(chatId)
    parked.delete(chatId)
    const actor = wasParked
      ? // The input is the machine's only for a fresh start: a snapshot carries the context it made.
        createActor(machine, { snapshot: wasParked.snapshot, input: { chatId, pendingCalls: [], latestCustomerRun: null }, inspect: options.inspect, id: `chat:${chatId}` })
      : createActor(machine, { input: hydrate(chatId), inspect: options.inspect, id: `chat:${chatId}` })
    const runtime = new ChatRuntime(chatId)
    followMachine(actor, runtime)
    const drop = () => {
      if (actors.get(chatId)?.actor === actor) actors.delete(chatId)
    }
    actor.subscribe({
      // Done (the chat was deleted, or the node gave it up) or stopped (evicted, shut down): everything
      // kept for it goes too; but a parked chat keeps its packing history for its next turn.
      complete: () => {
        drop()
        if (!entry.parking) deps.history.forget(chatId)
      },
      // Never expected; the next use hydrates a new actor from the ledger.
      error: (error) => {
        drop()
        deps.history.forget(chatId)
        report(`actor of chat ${chatId} failed`, error)
      },
    })
    const entry: { actor: ChatActor; runtime: ChatRuntime; lastUsed: number; parking?: boolean } = { actor, runtime, lastUsed: Date.now() }
    actors.set(chatId, entry)
    actor.start()
    return entry
  }

  /** At rest, with nothing in its runtime that only this actor knows (a lease released here, unwritten). */
  const isIdle = ({ actor, runtime }: { actor: ChatActor; runtime: ChatRuntime }) => {
    const snapshot = actor.getSnapshot()
    const resting = snapshot.matches('idle') || snapshot.matches('awaitingToolResults') || snapshot.matches('outstanding')
    return resting && snapshot.context.eagerCompaction === null && !runtime.hasReleased
  }

  /**
   * Drops a chat's actor and everything kept for it: its runtime, and its kept history once the
   * stopped actor completes (the ledger rebuilds both).
   */
  function dropActor(chatId: string, entry: { actor: ChatActor }): void {
    entry.actor.stop()
    if (actors.get(chatId) === entry) actors.delete(chatId)
  }

  /**
   * Only a chat at rest with nothing the ledger could change behind it is parked: not one with an
   * outstanding run (the sweep or a cancel settles it through the ledger).
   */
  const isParkable = (entry: { actor: ChatActor; runtime: ChatRuntime }) => isIdle(entry) && !entry.actor.getSnapshot().matches('outstanding')

  /** Stops an idle actor and keeps its persisted snapshot (with its chat's packing history) for the next use. */
  function park(chatId: string, entry: { actor: ChatActor; runtime: ChatRuntime; lastUsed: number; parking?: boolean }): void {
    const snapshot = entry.actor.getPersistedSnapshot()
    entry.parking = true
    entry.actor.stop()
    if (actors.get(chatId) === entry) actors.delete(chatId)
    parked.set(chatId, { snapshot, lastUsed: entry.lastUsed })
  }

  /**
   * Idle chats: parked once unused for parkAfterMs; dropped (with their packing history) once unused
   * for idleEvictMs, or beyond maxIdleActors, least recently used first. Returns how many were dropped.
   */
  function evictIdle(now = Date.now()): number {
    let evicted = 0
    const idle: { chatId: string; lastUsed: number; drop: () => void }[] = []
    for (const [chatId, entry] of actors) {
      if (isIdle(entry)) idle.push({ chatId, lastUsed: entry.lastUsed, drop: () => dropActor(chatId, entry) })
    }
    for (const [chatId, entry] of parked) {
      idle.push({ chatId, lastUsed: entry.lastUsed, drop: () => {
        parked.delete(chatId)
        deps.history.forget(chatId)
      } })
    }
    idle.sort((a, b) => a.lastUsed - b.lastUsed)
    const excess = Math.max(0, idle.length - maxIdleActors)
    idle.forEach(({ lastUsed, drop }, i) => {
      if (i < excess || now - lastUsed > idleEvictMs) {
        drop()
        evicted++
      }
    })
    for (const [chatId, entry] of actors) if (now - entry.lastUsed >= parkAfterMs && isParkable(entry)) park(chatId, entry)
    return evicted
  }

  /**
   * Promotion under LiteFS, or a start as its primary: every run still `running` is settled at once
   * as `interrupted` (the only writer knows nobody else streams them). Returns the runs settled.
   */
  function takeOver(): RunRow[] {
    if (!role.exclusiveWriter || role.current().kind !== 'primary') return []
    return takeOverRunningRuns(deps, (run, error) => report(`run ${run.id} not taken over`, error))
  }

  return {
    /** How many distinct attachments are held for submissions not yet decided (decision 049). */
    get attachmentsHeld(): number {
      return attachments.size
    },

    /** Which node owns a chat's actor; turns and writes must be served there. */
    ownerOf(_chatId: string): ChatOwner {
      const current = role.current()
      switch (current.kind) {
        case 'primary':
          return { kind: 'local' }
        case 'replica':
          return { kind: 'remote', url: current.primaryUrl }
        case 'replica-without-primary':
          return { kind: 'unknown' }
        default: {
          const unknown: never = current
          throw new Error(`unknown role ${JSON.stringify(unknown)}`)
        }
      }
    },

    /**
     * Hands a validated turn to the chat's actor. Returns the submission's event log at once
     * (src/actors/run-channel.ts): `admitted` (the run is written) or `rejected`, then, for a run,
     * `opened` or `failed_before_stream`, its frames and `settled`.
     */
    submit(submission: Submission, attachmentBytes: AttachmentBytes = new Map()): RunChannel {
      const refusal =
        this.ownerOf(submission.chatId).kind !== 'local'
          ? new UnavailableError('this node does not own the chat')
          : draining
            ? new UnavailableError('this server is shutting down', undefined, 'try again shortly')
            : null
      if (refusal) {
        const refused = new ChatRuntime(submission.chatId).openSubmission('refused')
        refused.reject(refusal)
        return refused
      }
      const { actor, runtime } = entryFor(submission.chatId)
      const requestId = runtime.requestId()
      const log = runtime.openSubmission(requestId)
      // Held until the machine decides the submission: admitted (written to the ledger) or rejected.
      const release = attachments.hold(attachmentBytes)
      if (attachmentBytes.size > 0) void nextEvent(log, ['admitted', 'rejected']).then(release)
      const now = deps.now()
      // The ledger, not this node's memory, says whether the chat has a running run (docs/guide/runs.md),
      // and what the rules read of it: read just before the event, which the actor handles at once.
      const ledger = readSubmissionFacts(deps.store, submission, now)
      actor.send({ type: 'SUBMIT', requestId, submission, at: now.toISOString(), ledger })
      return log
    },

    /**
     * What a turn would send, counted without running it (the facade's `input_tokens`, decision 055):
     * the context packed as the turn's admission packs it, from the same ledger and configuration,
     * as the vendor is expected to count it (the estimate times the model's learned correction).
     * Writes nothing. A turn whose fixed parts alone pass the budget gets the refusal its submission would.
     */
    countInput(submission: Submission, attachmentBytes: AttachmentBytes = new Map()): number {
      const { chatId: _, outstanding: __, ...facts } = hydrate(submission.chatId)
      const closing = closeCalls(facts, submission, deps.now())
      const unbounded = { ...deps, maxRunningRunsPerOrg: Number.MAX_SAFE_INTEGER }
      const { facts: turn, read } = readTurn(unbounded, submission, closing, (sha) => attachmentBytes.get(sha) ?? Buffer.alloc(0))
      const now = deps.now()
      // What makes the input itself unsendable; the balance and the running-run cap do not change a count.
      const rejection = TURN_RULES.find((rule) => (rule.name === 'choosesToolNotOffered' || rule.name === 'contextIsTooLarge') && rule.breaks(turn, undefined, now))
      if (rejection) throw rejectionError(rejection.rejection(turn, undefined, now))
      const packed = read.packed!
      return Math.ceil(packed.estimatedTokens * read.frame.correction.correction)
    },

    /**
     * Cancels a running run and waits until it is settled. Streamed by an actor here, the actor stops
     * it (its output so far kept and billed). Streamed by nobody (docs/decisions/009-multi-node-litefs.md):
     * settled now as `interrupted` when nobody can be streaming it, that is when this node is the
     * only writer (a LiteFS primary), the lease is this node's own (its previous life) or has
     * expired. Otherwise another process on the same file holds a live lease: 503, for the lease's
     * remaining time, since this node cannot reach it. Never a 200 that changed nothing.
     */
    async cancel(chatId: string, runId: string): Promise<void> {
      const entry = actors.get(chatId)
      const admission = entry?.actor.getSnapshot().context.admission
      const channel = admission?.runId === runId ? entry?.runtime.channelOf(runId) : null
      if (entry && channel) {
        entry.actor.send({ type: 'CANCEL', runId })
        await settledOf(channel)
        return
      }
      if (this.ownerOf(chatId).kind !== 'local') throw new UnavailableError('this node does not own the chat')
      const run = deps.store.runs.getById(runId)
      if (!run || run.status !== 'running') return
      const now = deps.now().toISOString()
      const nobodyStreams = role.exclusiveWriter || run.lease_owner === deps.nodeId || !leaseIsLive(run.lease_expires_at, now)
      if (!nobodyStreams) {
        const retryAfter = Math.max(1, Math.ceil((Date.parse(run.lease_expires_at ?? now) - Date.parse(now)) / 1000))
        throw new UnavailableError(
          `run ${runId} is streamed by node ${run.lease_owner}, which this node cannot reach`,
          { run_id: runId, lease_owner: run.lease_owner, retry_after_seconds: retryAfter },
          `cancel again after its lease ends (${run.lease_expires_at}); it is then settled as interrupted`,
        )
      }
      // Through the chat's actor when it has one, so what it knows of the chat follows the ledger.
      const resting = entry?.actor.getSnapshot()
      if (resting && resting.status === 'active' && (resting.matches('outstanding') || resting.matches('idle') || resting.matches('awaitingToolResults'))) {
        entry!.actor.stop()
        actors.delete(chatId)
      }
      // A parked chat is never outstanding (isParkable): its snapshot cannot hold this run. Dropped all the same, so it follows the ledger.
      parked.delete(chatId)
      await deps.store.writes.write(() => settleUnstreamedRun(deps, runId))
    },

    /**
     * Graceful shutdown (SIGTERM): new turns are refused (503); running runs get up to `graceMs` to end on their own; those still
     * running are stopped and settled as `interrupted` for what they streamed (INTERRUPT), so the
     * next turn on their chats is admitted at once, on whichever node (docs/decisions/009-multi-node-litefs.md).
     * Resolves once every run is settled, or after `settleMs` more.
     */
    async drain(graceMs: number, settleMs = 5_000): Promise<void> {
      draining = true
      const running = () => [...actors.values()].flatMap(({ actor, runtime }) => {
        const admission = actor.getSnapshot().context.admission
        const channel = admission ? runtime.channelOf(admission.runId) : null
        return channel ? [channel] : []
      })
      const deadline = Date.now() + graceMs
      while (running().length > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25))
      const left = running()
      for (const { actor } of actors.values()) actor.send({ type: 'INTERRUPT', message: 'the server shut down while this run streamed' })
      const settled = Promise.all(left.map(settledOf))
      await Promise.race([settled, new Promise((resolve) => setTimeout(resolve, settleMs).unref())])
    },

    /**
     * Demotion (docs/decisions/009-multi-node-litefs.md): this node can no longer write. Every actor
     * gives its chat up (RELINQUISH): a running run's stream ends with `unavailable` naming the run,
     * and the new primary settles it at promotion. Returns the ids of the runs that were streaming.
     */
    relinquishAll(message: string): string[] {
      const streaming: string[] = []
      for (const { actor } of actors.values()) {
        const admission = actor.getSnapshot().context.admission
        if (admission) streaming.push(admission.runId)
        actor.send({ type: 'RELINQUISH', message })
      }
      actors.clear()
      // Parked chats are given up too: the next primary's actors follow its ledger.
      for (const chatId of parked.keys()) deps.history.forget(chatId)
      parked.clear()
      return streaming
    },

    takeOver,

    /**
     * Deletes a chat through its actor (decision 020): a running run is stopped and settled (error
     * `chat_deleted` on its stream, billed for what it used), the chat's rows go in one transaction,
     * then the actor and everything kept for the chat. False when the organisation has no such chat,
     * or another request deleted it meanwhile.
     */
    delete(orgId: string, chatId: string): Promise<boolean> {
      if (this.ownerOf(chatId).kind !== 'local') {
        return Promise.reject(new UnavailableError('this node does not own the chat'))
      }
      if (!deps.store.chats.get(orgId, chatId)) return Promise.resolve(false)
      const { actor, runtime } = entryFor(chatId)
      const requestId = runtime.requestId()
      return new Promise<boolean>((resolve, reject) => {
        runtime.deletes.set(requestId, { resolve: (outcome) => (outcome.kind === 'failed' ? reject(outcome.error) : resolve(outcome.kind === 'deleted')) })
        actor.send({ type: 'DELETE', requestId })
      })
    },

    /**
     * A summary of all of a chat's history in one billed compaction run (the facade's
     * `/responses/compact`, decision 055), made by the step turns use (src/actors/summarise-block.ts),
     * on the caller's model and charged to its organisation. For a chat made for the request and
     * deleted after it, so nothing else reads or writes it meanwhile. Null when the run made no summary.
     */
    async summariseWhole(job: CompactionJob, maxTokens: number, signal: AbortSignal): Promise<BlockSummary | null> {
      const rows = deps.store.parts.packingMeta(job.chatId, 0)
      if (rows.length === 0) return null
      const block: BlockToSummarise = {
        kind: 'block',
        start: 0,
        end: rows.length,
        firstOrdinal: rows[0]!.ordinal,
        lastOrdinal: rows.at(-1)!.ordinal,
        parts: rows.length,
        tokens: rows.reduce((sum, row) => sum + row.tokens, 0),
        ordinals: rows.map((row) => row.ordinal),
        maxTokens,
      }
      return summariseBlock(deps, job, block, signal)
    },

    /**
     * Adds items to a chat's ledger outside a turn, through its actor (decision 055): at rest only,
     * with no tool call pending; written with no run, in one transaction. Resolves with their
     * ordinals; rejects with the refusal (a run in progress, calls pending, the chat gone).
     */
    append(orgId: string, chatId: string, parts: PreparedPart[], attachmentBytes: AttachmentBytes = new Map()): Promise<number[]> {
      if (this.ownerOf(chatId).kind !== 'local') {
        return Promise.reject(new UnavailableError('this node does not own the chat'))
      }
      if (!deps.store.chats.get(orgId, chatId)) return Promise.reject(new NotFoundError(`chat ${chatId} not found`))
      const { actor, runtime } = entryFor(chatId)
      const requestId = runtime.requestId()
      const release = attachments.hold(attachmentBytes)
      return new Promise<number[]>((resolve, reject) => {
        runtime.appends.set(requestId, {
          resolve: (outcome) => {
            release()
            if (outcome.kind === 'appended') resolve(outcome.ordinals)
            else reject(outcome.error)
          },
        })
        actor.send({ type: 'APPEND', requestId, parts })
      })
    },

    /**
     * Erases a part of a chat's ledger, with the rest of its tool call's exchange, through its actor
     * (docs/decisions/056-erasing-items.md): at rest only. Resolves with the ordinals erased; rejects
     * with the refusal (a run in progress, the ledger being changed, the chat or part gone).
     */
    erase(orgId: string, chatId: string, ordinal: number): Promise<number[]> {
      if (this.ownerOf(chatId).kind !== 'local') {
        return Promise.reject(new UnavailableError('this node does not own the chat'))
      }
      if (!deps.store.chats.get(orgId, chatId)) return Promise.reject(new NotFoundError(`chat ${chatId} not found`))
      const target = deps.store.parts.between(chatId, ordinal, ordinal)[0]
      if (!target) return Promise.reject(new NotFoundError(`part ${ordinal} of chat ${chatId} not found`))
      const body = JSON.parse(target.body) as PartBody
      const toolUseId = body.type === 'tool_call' || body.type === 'tool_result' ? body.tool_use_id : null
      const exchange = toolUseId === null ? [] : deps.store.parts.exchangeOf(chatId, toolUseId).map((row) => ({ ordinal: row.ordinal, body: JSON.parse(row.body) as PartBody }))
      const { actor, runtime } = entryFor(chatId)
      const requestId = runtime.requestId()
      return new Promise<number[]>((resolve, reject) => {
        runtime.erasures.set(requestId, { resolve: (outcome) => (outcome.kind === 'erased' ? resolve(outcome.ordinals) : reject(outcome.error)) })
        actor.send({ type: 'ERASE', requestId, target: { ordinal, body }, exchange })
      })
    },

    /**
     * Forks a chat through its actor (docs/decisions/037-fork.md): the actor decides the cut on what
     * the ledger holds now (a running run's parts are not settled, so not copied), then the new chat
     * and its copied rows are written in one transaction. Null when the organisation has no such
     * chat, or it was deleted meanwhile. The copy runs on the fork copier's thread
     * (src/store/fork-copier.ts), so a long one never holds the event loop.
     */
    fork(orgId: string, chatId: string, request: ForkRequest): Promise<ChatRow | null> {
      if (this.ownerOf(chatId).kind !== 'local') {
        return Promise.reject(new UnavailableError('this node does not own the chat'))
      }
      if (!deps.store.chats.get(orgId, chatId)) return Promise.resolve(null)
      return new Promise<number | null>((resolve, reject) => {
        const running = deps.store.runs.runningCustomerRun(chatId)
        const ledger = deps.store.forks.ledgerView(chatId, running?.id ?? null)
        const { actor, runtime } = entryFor(chatId)
        const requestId = runtime.requestId()
        runtime.forks.set(requestId, { resolve: (outcome) => (outcome.kind === 'cut' ? resolve(outcome.upTo) : reject(outcome.error)) })
        actor.send({ type: 'FORK', requestId, upToOrdinal: request.upToOrdinal, ledger })
      }).then((upTo) =>
        forkCopier.copy(
          deps.store.db.name,
          { orgId, sourceChatId: chatId, upTo, title: request.title, description: request.description, userMetadata: request.userMetadata },
          deps.now(),
        ),
      )
    },

    /** The live channel of a run streaming on this node, if any. */
    channelOf(chatId: string, runId: string): RunChannel | null {
      return actors.get(chatId)?.runtime.channelOf(runId) ?? null
    },

    /** Hydrates the chat's actor now, without a turn (warming a node, measuring an idle actor's memory). */
    preload(chatId: string): void {
      actorFor(chatId)
    },

    evictIdle,
    /** Live actors on this node (parked chats are not among them). */
    get size() {
      return actors.size
    },
    /** Chats at rest kept as their actor's persisted snapshot. */
    get parkedCount() {
      return parked.size
    },

    /**
     * Settles runs left by a crash, then keeps leases fresh and idle actors few, and settles another
     * node's runs when their leases expire (decision 018). Returns the stop function.
     */
    start(): () => void {
      const host = this
      // Only the primary writes: a replica settles nothing, and takes over once it is promoted.
      const isPrimary = () => role.current().kind === 'primary'
      const renewMs = options.leaseRenewMs ?? Math.max(1, Math.floor(deps.leaseTtlMs / 3))
      let atExpiry: ReturnType<typeof setTimeout> | null = null
      let stopped = false

      // decision 020, issue 25: once serving, a run of a chat is settled by the chat's actor (SWEEP),
      // loaded if needed, so what it knows follows the ledger; customer and compaction runs alike.
      // Only a run whose chat is gone (deleted) is settled here.
      const handOver = (run: RunRow) => {
        if (!deps.store.chats.exists(run.chat_id)) return false
        const entry = entryFor(run.chat_id)
        if (entry.actor.getSnapshot().status !== 'active') return false
        entry.actor.send({ type: 'SWEEP', run: { id: run.id, leaseOwner: run.lease_owner, leaseExpiresAt: run.lease_expires_at } })
        return true
      }
      // At start nothing is loaded and nothing served yet: the runs left by a crash are settled here
      // and now, before the first turn (which would otherwise find its chat still sweeping).
      const sweep = (previousSelf: string | null, atStart = false) => {
        sweepAbandonedRuns(deps, previousSelf, (run, error) => report(`run ${run.id} not swept`, error), atStart ? undefined : handOver)
        scheduleAtExpiry()
      }
      // Another node's lease (an orphan after a node change) is swept the moment it expires, not at
      // the next renewal tick; the tick reschedules, so a lease that appears later is seen too.
      function scheduleAtExpiry() {
        if (atExpiry) clearTimeout(atExpiry)
        atExpiry = null
        // Only leases still ahead: one already expired was just swept and could not be settled (or
        // was handed to its chat's actor); the tick tries it again, rather than a timer at once, in a loop.
        const next = stopped ? null : deps.store.runs.nextForeignLeaseExpiry(deps.nodeId, deps.now().toISOString())
        if (next === null) return
        const delay = Date.parse(next) - deps.now().getTime() + 2
        if (delay > renewMs) return
        atExpiry = setTimeout(renewAndSweep, Math.max(0, delay))
        atExpiry.unref()
      }

      // decision 055: a chat kept for responses not to be stored outlives them only while a connection
      // may continue it; none does across a start, so those a stopped node left are deleted, through their actors.
      function deleteUnstoredChats() {
        for (const chat of deps.store.runs.unstoredChats()) {
          host.delete(chat.org_id, chat.chat_id).catch((error: unknown) => report(`chat ${chat.chat_id} of a response not to be stored not deleted`, error))
        }
      }

      // This node's own leases are renewed first, so a late tick never finds its own runs expired.
      // A tick that fails (the database refuses writes for a moment) is logged; the next one tries again.
      function renewAndSweep() {
        // While litefs does not answer, the renewal would hold the event loop until it does (decision
        // 048); the next tick renews (a lease lasts three ticks, a stall that outlasts them is a dead node).
        if (!isPrimary() || storageStall.stalled()) return
        try {
          const now = deps.now()
          // The leases this node released (each chat's runtime keeps its own), never renewed.
          const released = [...actors.values()].flatMap(({ runtime }) => runtime.releasedStillRunning((id) => deps.store.runs.getById(id)?.status === 'running'))
          if (deps.store.runs.renewLeases(deps.nodeId, new Date(now.getTime() + deps.leaseTtlMs).toISOString(), released) > 0) noteCommit()
        } catch (error) {
          report('leases not renewed', error)
        }
        try {
          sweep(null)
        } catch (error) {
          report('abandoned runs not swept', error)
        }
      }

      if (isPrimary()) {
        // The only writer settles every run it finds running; otherwise its own earlier life's and expired ones.
        if (role.exclusiveWriter) takeOver()
        sweep(deps.nodeId, true)
        deleteUnstoredChats()
      }
      const renew = setInterval(() => {
        renewAndSweep()
        evictIdle()
      }, renewMs)
      renew.unref()
      return () => {
        stopped = true
        clearInterval(renew)
        if (atExpiry) clearTimeout(atExpiry)
      }
    },

    /** Stops every actor (on shutdown); their runs' leases lapse and the next start settles them. */
    stopAll(): void {
      for (const [chatId, entry] of actors) dropActor(chatId, entry)
      for (const chatId of parked.keys()) deps.history.forget(chatId)
      parked.clear()
    },
  }
}

export type ChatActorHost = ReturnType<typeof createChatActorHost>
