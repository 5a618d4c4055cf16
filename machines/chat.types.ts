import type { BlockToSummarise } from '../src/domain/context/block-to-summarise.ts'
import type { CompactionJob } from '../src/domain/context/compaction-job.ts'
import type { RunLease } from '../src/domain/runs/lease.ts'
import type { ContextRefusal } from '../src/domain/context/refit.ts'
import type { RunOutcome } from '../src/domain/runs/run-outcome.ts'
import type { PreparedPart, Submission } from '../src/domain/turns/submission.ts'
import type { PendingCall } from '../src/domain/turns/close-pending-calls.ts'
import type { CallClosing, ChatFacts, LatestRun, LedgerFacts } from '../src/domain/turns/decide-admission.ts'
import type { TurnFacts } from '../src/domain/turns/admission-rules.ts'
import type { ForkLedgerView } from '../src/domain/chats/fork-cut.ts'
import type { ErasablePart } from '../src/domain/chats/erase-parts.ts'

/**
 * What the machine holds of an admitted run: plain data (issue 25: the context can be persisted with
 * getPersistedSnapshot and read in the inspector as JSON). The actor host keeps the rest (the
 * prompt, the tools, the run's event log, its AbortController) in the chat's runtime
 * (src/actors/chat-runtime.ts), keyed by `runId`.
 */
export interface RunAdmission {
  runId: string
  /** The service clock's time of admission: when the run was created. */
  createdAt: string
  startedAtMs: number
  estimatedInputTokens: number
  /** Blocks to summarise before the run can stream; null when none. */
  compaction: { blocks: number; inProgressElsewhere: number } | null
  /** How many times the turn was packed again after the vendor refused its context (src/domain/context/refit.ts). */
  refits: number
}
export type ChatAdmission = RunAdmission

/**
 * How a DELETE ended: `deleted` for the request that deleted the chat, `gone` for one that arrived
 * while that deletion was under way (the chat was already going: a repeat answers 404), `failed`
 * when the deletion could not be written (the chat stays, as it was).
 */
/**
 * How a FORK was decided (docs/decisions/037-fork.md): the cut to copy up to (null: nothing), which the
 * host then writes, or the refusal (422 at /up_to_ordinal; 404 for a chat being deleted).
 */
export type ForkOutcome = { kind: 'cut'; upTo: number | null } | { kind: 'refused'; error: unknown }

/** How an APPEND ended: the ordinals its parts were written at, or why nothing was written. */
export type AppendOutcome = { kind: 'appended'; ordinals: number[] } | { kind: 'refused'; error: unknown }

/** How an ERASE ended: the ordinals erased, or why nothing was. */
export type EraseOutcome = { kind: 'erased'; ordinals: number[] } | { kind: 'refused'; error: unknown }

export type DeleteOutcome = { kind: 'deleted' } | { kind: 'gone' } | { kind: 'failed'; error: unknown }

export type ChatContext = {
  chatId: string
  /**
   * Tool calls of the latest customer run that no submission has closed yet (docs/guide/tool-calls.md): the next
   * admitted submission closes them all. Each is dated as its tool_call part is in the ledger.
   */
  pendingCalls: PendingCall[]
  latestCustomerRun: LatestRun | null
  /**
   * The submission being admitted, named by its request id, with what the ledger said of it when it
   * came, how it closes the pending calls (decided when it came, written by admission) and, once
   * readTurn has read it, the facts the turn rules decide on (src/domain/turns/admission-rules.ts).
   */
  queued: { requestId: string; submission: Submission; at: string; ledger: LedgerView | undefined; closing: CallClosing; turn: TurnFacts | null } | null
  /** The run this chat is running, once admitted. */
  admission: ChatAdmission | null
  result: RunOutcome | null
  /** The eager compaction (a child actor) summarising blocks of this chat, while it runs. */
  eagerCompaction: EagerCompaction | null
  /** A running run of this chat nobody streams any more (its lease expired), being settled before the turn. */
  orphan: RunLease | null
  /**
   * A run the ledger shows `running` that this actor does not stream: found at hydration, or left by
   * a settlement that failed (decision 020). The chat refuses turns while its lease is live; once the
   * lease has lapsed the sweep, or the next turn, settles it as `interrupted`.
   */
  outstanding: RunLease | null
  /** The DELETE requests waiting for this chat's deletion, first one first; empty when none came. */
  deleters: string[]
  /** Items being added to the ledger outside a turn (APPEND, decision 055), and the request waiting for them; null otherwise. */
  appending: { requestId: string; parts: PreparedPart[] } | null
  /** Parts being erased from the ledger (ERASE, decision 056), and the request waiting for it; null otherwise. */
  erasing: { requestId: string; ordinals: number[] } | null
  /** Why the running run is being stopped when this node shuts down (INTERRUPT), for the inspector; null otherwise. */
  interruption: string | null
  /** Failed attempts to write the running run's settlement so far (decision 020); 0 outside `running.settling`. */
  settleAttempts: number
}

/**
 * What the ledger holds when a submission arrives, read by the actor host just before it sends it
 * (src/actors/read-submission-facts.ts): the chat's running customer run, if any, whichever node's it
 * is (after a restart under another node id, an orphan), the time of the reading, and the ledger's
 * facts the rules read (docs/guide/runs.md: the run `retry_of` names, an earlier use of the idempotency
 * key; absent: none). The whole view is absent when the sender read nothing.
 */
export type LedgerView = { runningRun: RunLease | null; at: string } & Partial<LedgerFacts>

export type ChatEvent =
  /**
   * A turn. `requestId` names the request in what the machine emits about it (`admitted`,
   * `rejected`); `at` is when it was sent, by the service's clock: the instant its rules read.
   */
  | { type: 'SUBMIT'; requestId: string; submission: Submission; at: string; ledger?: LedgerView }
  | { type: 'CANCEL'; runId: string }
  /** Delete the chat: a running run is stopped and settled first (decision 020). */
  | { type: 'DELETE'; requestId: string }
  /**
   * Fork the chat (docs/decisions/037-fork.md): decided in whatever state the chat is, on what the
   * ledger held when the event was sent (read just before, like SUBMIT's): only settled parts are copied.
   */
  | { type: 'FORK'; requestId: string; upToOrdinal: number | null | undefined; ledger: ForkLedgerView }
  /**
   * Add items to the ledger outside a turn (the OpenAI facade's conversation items, decision 055):
   * written with no run, at rest only, with no call pending (a call's result must follow it).
   */
  | { type: 'APPEND'; requestId: string; parts: PreparedPart[] }
  /**
   * Erase a part from the ledger (the OpenAI facade's item deletion, docs/decisions/056-erasing-items.md),
   * at rest only: `target`, and `exchange`, the chat's parts with its tool_use_id (read just before
   * it was sent), of which the rule (partsToErase) erases the rest of a tool call's exchange too.
   */
  | { type: 'ERASE'; requestId: string; target: ErasablePart; exchange: ErasablePart[] }
  /** The lease sweep found this running run of the chat abandoned (its lease lapsed): the actor settles it (decision 020). */
  | { type: 'SWEEP'; run: RunLease }
  /**
   * This node is shutting down (docs/decisions/009-multi-node-litefs.md): the running run is stopped
   * and settled here as failed `interrupted`, for what it streamed, so the chat is free at once.
   */
  | { type: 'INTERRUPT'; message: string }
  /**
   * This node can no longer write (it was demoted): the chat is no longer this actor's. A running
   * run's stream ends with `unavailable`; its settlement is the new primary's, which settles every
   * run of another node at promotion. Waiting callers are refused with 503. The actor ends.
   */
  | { type: 'RELINQUISH'; message: string }
  // The end of the eager compaction child (machines/chat.machine.ts spawns it as `eagerCompaction`).
  | { type: 'xstate.done.actor.eagerCompaction'; output: void }
  | { type: 'xstate.error.actor.eagerCompaction'; error: unknown }

/**
 * What the actor is hydrated with: read from the ledger, never from a snapshot. `outstanding`: the
 * chat's running customer run, when the ledger has one (no actor streams it: the actor is new).
 */
export type ChatInput = {
  chatId: string
  outstanding?: RunLease | null
} & ChatFacts

/**
 * What the machine tells the world (XState's `emit`; the actor host listens with `actor.on`): the
 * answers to the requests that came as events, named by their `requestId`, and what the host must
 * do to a run's resources, named by its `runId`. Nothing goes back through the events themselves.
 */
export type ChatEmitted =
  | { type: 'admitted'; requestId: string; runId: string }
  | { type: 'rejected'; requestId: string; error: unknown }
  | { type: 'deleteAnswered'; requestId: string; outcome: DeleteOutcome }
  | { type: 'forkAnswered'; requestId: string; outcome: ForkOutcome }
  | { type: 'appendAnswered'; requestId: string; outcome: AppendOutcome }
  | { type: 'eraseAnswered'; requestId: string; outcome: EraseOutcome }
  /** Stop the run's provider call (CANCEL, DELETE, INTERRUPT, RELINQUISH): its output so far is kept. */
  | { type: 'abortRequested'; runId: string }
  /** The run's stream opens before the summaries are made: the customer learns what the turn waits for. */
  | { type: 'compacting'; runId: string; blocks: number; inProgressElsewhere: number }
  /** RELINQUISH: the run's stream ends with `unavailable`; its settlement is the new primary's. */
  | { type: 'relinquished'; runId: string; message: string }

/** Settles an orphan whose lease expired; resolves with what the chat knows afterwards, read from the ledger. */
export type ReapRunInput = { chatId: string; run: RunLease }
/** The submission the machine let through its submission rules, and how it closes the pending calls: readTurn reads and packs it. */
export type ReadTurnInput = { requestId: string; submission: Submission; closing: CallClosing }
/** The submission, and the facts readTurn read that passed the machine's turn rules: writeTurn writes it. */
export type WriteTurnInput = { requestId: string; submission: Submission; closing: CallClosing; turn: TurnFacts }
export type StreamRunInput = { chatId: string; admission: ChatAdmission }
/** The admitted run and the blocks to summarise; resolves with the run re-packed over the summaries. */
export type CompactHistoryInput = { chatId: string; admission: ChatAdmission }
/** The run whose request the vendor refused for its context, and what the refusal said. */
export type RefitTurnInput = { chatId: string; admission: ChatAdmission; refusal: ContextRefusal }
/** Writes items to the chat's ledger with no run, in one transaction; resolves with their ordinals. */
export type AppendPartsInput = { chatId: string; parts: PreparedPart[] }
/** Erases the chat's parts at these ordinals in one transaction; resolves with the chat's facts as the ledger then has them. */
export type ErasePartsInput = { chatId: string; ordinals: number[] }
/** Deletes the chat's rows in one transaction, settling first a run left outstanding whose lease lapsed. */
export type DeleteChatInput = { chatId: string; outstanding: RunLease | null }
/** Blocks to summarise in the background after a run settled (docs/guide/context.md at_fill), and for whom. */
export type EagerCompaction = { job: CompactionJob; blocks: BlockToSummarise[] }
