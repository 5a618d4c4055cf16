import type { CatalogueEntry } from '../catalogue/catalogue-entry.ts'
import {
  IdempotencyKeyReusedError,
  InsufficientBalanceError,
  NotFoundError,
  RetryNotAllowedError,
  RunningRunsLimitError,
  ValidationError,
  UnknownToolUseIdError,
  type DomainError,
} from '../errors.ts'
import { contextTooLargeError, type ContextOverflow } from '../context/context-overflow.ts'
import { outputRoom, windowInForce, type ModelLimits, type WindowInForce } from '../context/model-limits.ts'
import { Money } from '../money.ts'
import type { PartBody } from '../parts.ts'
import { customerCost } from '../pricing/customer-cost.ts'
import { ZERO_USAGE } from '../pricing/usage.ts'
import { closePendingCalls, type Closure, type PendingCall } from './close-pending-calls.ts'
import type { TranslationWarning } from './coerce-reasoning-effort.ts'

/**
 * docs/guide/runs.md as a pure decision: whether a submission may run, over the facts the chat actor holds
 * and those admission reads from the ledger. No I/O, no clock of its own (`now` is passed in), no
 * throw: a refusal is a value (`AdmissionRejection`), turned into the domain error by `rejectionError`.
 */

export type RunStatus = 'running' | 'succeeded' | 'failed' | 'cancelled'
export type LatestRun = { id: string; status: RunStatus }

/**
 * What the chat actor knows of its chat when a submission arrives. Each pending call carries its
 * tool_call part's `created_at` as the ledger has it, whether the actor saw the run end (the run
 * stream keeps the row's date) or was hydrated, so the 24 h rule does not depend on eviction.
 */
export type ChatFacts = {
  pendingCalls: PendingCall[]
  latestCustomerRun: LatestRun | null
}

/**
 * What the ledger says of a submission beyond the chat: read by the actor host just before it hands
 * the submission to the chat's actor (src/actors/read-submission-facts.ts).
 */
export type LedgerFacts = {
  /** The run `retry_of` names, if the organisation has it (null: none, or no retry_of). */
  retried: { id: string; chatId: string } | null
  /** The run that used the submission's idempotency key within its 24 h (null: none, or no key). */
  keyUsedBy: string | null
}

/** The facts a submission is decided on: the chat actor's and the ledger's. */
export type AdmissionFacts = ChatFacts & LedgerFacts

/** The part of a submission the rules look at (src/actors/turn-types.ts Submission is one). */
export type SubmissionForAdmission = {
  chatId: string
  request: { retry_of?: string | null }
  input: readonly { body: PartBody }[]
}

export type AdmissionRejection =
  | { rule: 'retry_of_not_found'; retryOf: string }
  | { rule: 'retry_not_allowed'; retryOf: string; latest: LatestRun | null }
  | { rule: 'idempotency_key_reused'; runId: string }
  | { rule: 'unknown_tool_use_id'; unknownIds: string[]; pendingIds: string[] }
  | { rule: 'insufficient_balance'; balance: string; estimatedInputTokens: number }
  | { rule: 'context_too_large'; overflow: ContextOverflow }
  | { rule: 'running_runs_limit'; cap: number }
  | { rule: 'tool_choice_not_offered'; choice: string; offered: string[] }

export type Decision<T> = { value: T; warnings: TranslationWarning[] }

export type TombstoneBody = Extract<PartBody, { type: 'tool_result' }>

/** What a submission that passes the rules is admitted with: how it closes the pending calls, the run it retries. */
export type AdmissionVerdict =
  | ({ kind: 'admit'; retryOf: string | null } & CallClosing)
  | { kind: 'reject'; rejection: AdmissionRejection }

/**
 * docs/guide/runs.md Retry: `retry_of` must name the latest failed customer run of this chat. The run's
 * status is the chat's latest (the actor's, current after an orphan was reaped), not the one read
 * before the submission reached the actor.
 */
export function isRetryOfLatestFailedRun(facts: Pick<AdmissionFacts, 'latestCustomerRun' | 'retried'>, chatId: string): boolean {
  const { retried, latestCustomerRun: latest } = facts
  return retried !== null && retried.chatId === chatId && latest?.id === retried.id && latest.status === 'failed'
}

/** docs/guide/runs.md Retry: `retry_of` names no run of the organisation (404, not 409). */
export function retriesMissingRun(facts: Pick<AdmissionFacts, 'retried'>, submission: Pick<SubmissionForAdmission, 'request'>): boolean {
  return (submission.request.retry_of ?? null) !== null && facts.retried === null
}

/** docs/guide/runs.md Idempotency: a key used within 24 h names the first run, whatever its outcome. */
export function keyIsUnused(facts: Pick<AdmissionFacts, 'keyUsedBy'>): boolean {
  return facts.keyUsedBy === null
}

/** The tool_use_ids a submission answers, in its order. */
export function answeredIds(submission: Pick<SubmissionForAdmission, 'input'>): string[] {
  return submission.input.flatMap((p) => (p.body.type === 'tool_result' ? [p.body.tool_use_id] : []))
}

/** docs/guide/tool-calls.md: a `tool_result` for an id that is not pending in this chat is refused (422). */
export function answersOnlyPendingCalls(pending: readonly Pick<PendingCall, 'tool_use_id'>[], answered: readonly string[]): boolean {
  return unknownToolUseIds(pending, answered).length === 0
}

export function unknownToolUseIds(pending: readonly Pick<PendingCall, 'tool_use_id'>[], answered: readonly string[]): string[] {
  const ids = new Set(pending.map((c) => c.tool_use_id))
  return answered.filter((id) => !ids.has(id))
}

/** docs/guide/tool-calls.md: every pending call the submission did not answer gets a tombstone tool_result, written before the input. */
export function tombstoneUnanswered(closures: readonly Closure[]): TombstoneBody[] {
  return closures.flatMap((c) =>
    c.tombstone === null
      ? []
      : [{ type: 'tool_result' as const, text: '', is_error: true, tool_name: c.tool_name, tool_use_id: c.tool_use_id, trust: 'trusted' as const, tombstone_reason: c.tombstone }],
  )
}

/** How an admitted submission closes the chat's pending calls (docs/guide/tool-calls.md). */
export type CallClosing = {
  /** Every pending call, closed by the submission's result or by a tombstone. */
  closures: Closure[]
  /** The tombstones to write before the new input, in the order of the pending calls. */
  tombstones: TombstoneBody[]
  /** The run whose calls this submission closes (its calls stay packed with their results), if any. */
  closesCallsOf: string | null
}

/** No call was pending: nothing to close. */
export const NOTHING_TO_CLOSE: CallClosing = { closures: [], tombstones: [], closesCallsOf: null }

/**
 * docs/guide/tool-calls.md: every pending call is closed, by the submission's tool_result or by a tombstone
 * (`expired` past 24 h by `now`, `cancelled` for a cancelled or failed run's call, `abandoned` otherwise).
 */
export function closeCalls(facts: ChatFacts, submission: Pick<SubmissionForAdmission, 'input'>, now: Date): CallClosing {
  if (facts.pendingCalls.length === 0) return NOTHING_TO_CLOSE
  const { closures } = closePendingCalls(facts.pendingCalls, answeredIds(submission), now)
  return { closures, tombstones: tombstoneUnanswered(closures), closesCallsOf: facts.latestCustomerRun?.id ?? null }
}

export type BudgetFacts = {
  /** The organisation's balance, in USD (a decimal string). */
  balance: string
  model: Pick<CatalogueEntry, 'rates' | 'tiers' | 'max_output_tokens'> & ModelLimits
  markupPercent: string
  /** The packed context's estimated input tokens. */
  inputTokens: number
  /** The same input as the vendor is expected to count it (the estimate times the model's correction); the estimate when not given. */
  correctedInputTokens?: number
  requestedMaxTokens: number | null | undefined
  /** The budget's headroom: what it reserves of the window for the output (default 0, none). */
  headroom?: number
}

export type MaxTokensVerdict =
  | {
      kind: 'admit'
      maxTokens: number
      /** The window the request is sent under, and whether it needs the model's long-context opt-in. */
      window: WindowInForce
    }
  | { kind: 'reject'; rejection: AdmissionRejection }

/**
 * docs/guide/billing-and-usage.md Balance: refused (402) when the balance cannot pay the input (as the
 * vendor will count it) plus one output token; otherwise max_tokens is only ever lowered: by the
 * model's ceiling, by what the window leaves after the input (docs/decisions/027-model-limits.md), and
 * by what the balance pays for, with a `max_tokens_lowered` warning when a requested value was.
 */
export function decideMaxTokens(facts: BudgetFacts): Decision<MaxTokensVerdict> {
  const { model, inputTokens, markupPercent } = facts
  const input = facts.correctedInputTokens ?? inputTokens
  const balance = new Money(facts.balance)
  const cost = (output: number) => new Money(customerCost({ ...ZERO_USAGE, input_tokens: input, output_tokens: output }, model, markupPercent))
  const inputCost = cost(0)
  if (balance.lt(cost(1))) {
    return { value: { kind: 'reject', rejection: { rule: 'insufficient_balance', balance: facts.balance, estimatedInputTokens: inputTokens } }, warnings: [] }
  }
  const perMillion = cost(1_000_000).minus(inputCost)
  const affordable = perMillion.isZero() ? Number.MAX_SAFE_INTEGER : balance.minus(inputCost).mul(1_000_000).div(perMillion).floor().toNumber()
  const window = windowInForce(model, input)
  const room = outputRoom(model, window.window, input, facts.headroom)
  const requested = facts.requestedMaxTokens ?? model.max_output_tokens
  const applied = Math.max(1, Math.min(requested, model.max_output_tokens, room, affordable))
  const warnings: TranslationWarning[] =
    facts.requestedMaxTokens != null && applied < facts.requestedMaxTokens
      ? [
          {
            code: 'max_tokens_lowered',
            message: `max_tokens was lowered from ${facts.requestedMaxTokens} to ${applied} (${loweredBy(applied, { ceiling: model.max_output_tokens, room, affordable })})`,
            details: { requested: facts.requestedMaxTokens, applied },
          },
        ]
      : []
  return { value: { kind: 'admit', maxTokens: applied, window }, warnings }
}

/** What set the applied max_tokens, in words: the smallest of the limits. */
function loweredBy(applied: number, limits: { ceiling: number; room: number; affordable: number }): string {
  if (applied === limits.ceiling) return 'the model ceiling'
  if (applied === limits.room) return 'what the context window leaves after the input, with a margin for the vendor\'s count'
  return 'what the balance pays for'
}

/** The domain error a refusal answers with (the HTTP layer maps its code to a status). */
export function rejectionError(rejection: AdmissionRejection): DomainError {
  switch (rejection.rule) {
    case 'retry_of_not_found':
      return new NotFoundError(`run ${rejection.retryOf} not found`)
    case 'retry_not_allowed':
      return new RetryNotAllowedError(
        `run ${rejection.retryOf} is not the latest failed customer run of this chat; only that run can be retried`,
        { run_id: rejection.retryOf, latest_run_id: rejection.latest?.id ?? null, latest_status: rejection.latest?.status ?? null },
      )
    case 'idempotency_key_reused':
      return new IdempotencyKeyReusedError(rejection.runId)
    case 'unknown_tool_use_id':
      return new UnknownToolUseIdError(`no pending tool call in this chat has id ${rejection.unknownIds.join(', ')}`, {
        tool_use_ids: rejection.unknownIds,
        pending: rejection.pendingIds,
      })
    case 'insufficient_balance': {
      const balance = new Money(rejection.balance)
      return new InsufficientBalanceError(
        `the balance of ${balance.toFixed(2)} USD cannot pay for this turn's input (about ${rejection.estimatedInputTokens} tokens) and one output token`,
        { balance: balance.toFixed(), estimated_input_tokens: rejection.estimatedInputTokens },
        'add credit to the organisation',
      )
    }
    case 'context_too_large':
      return contextTooLargeError(rejection.overflow)
    case 'running_runs_limit':
      return new RunningRunsLimitError(rejection.cap)
    case 'tool_choice_not_offered':
      return new ValidationError([
        {
          in: 'body',
          pointer: '/tool_choice',
          message:
            rejection.offered.length === 0
              ? `tool_choice ${rejection.choice} needs the turn to offer tools, and it offers none`
              : `tool_choice names ${rejection.choice}, which this turn does not offer; it offers ${rejection.offered.join(', ')}`,
        },
      ])
    default: {
      const unknown: never = rejection
      throw new Error(`unknown rejection ${JSON.stringify(unknown)}`)
    }
  }
}
