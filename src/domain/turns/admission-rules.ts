import { fixedPartsFit, type ContextOverflow } from '../context/context-overflow.ts'
import {
  answeredIds,
  answersOnlyPendingCalls,
  closeCalls,
  decideMaxTokens,
  isRetryOfLatestFailedRun,
  keyIsUnused,
  retriesMissingRun,
  unknownToolUseIds,
  type AdmissionFacts,
  type AdmissionRejection,
  type AdmissionVerdict,
  type BudgetFacts,
  type Decision,
  type SubmissionForAdmission,
} from './decide-admission.ts'

/**
 * docs/guide/runs.md, tool-calls.md and billing-and-usage.md: the admission rules, in the one order they are checked.
 * Each rule is named as the chat machine's guard that checks it (machines/chat.machine.ts builds its
 * guard chain from these tables), says whether a submission breaks it, and, only for the rule that
 * broke, what the refusal is. Pure: no I/O, no clock (`now` is passed in), no throw.
 *
 * Two tables, because the rules read two sets of facts at two moments:
 * - SUBMISSION_RULES, when the submission reaches the chat at rest: the chat's facts and the ledger's
 *   the sender read (retry, idempotency, tool ids);
 * - TURN_RULES, once the machine's invoked `readTurn` has read the organisation's running runs,
 *   configuration, budget and balance and packed the history (the running-run cap, context too
 *   large, then the 402): nothing is written unless all pass. The invoked `writeTurn` asks the cap
 *   and the idempotency key again in its transaction, where concurrent turns meet.
 */
export type AdmissionRule<Facts, S> = {
  /** The guard's name in the chat machine. */
  name: string
  breaks: (facts: Facts, submission: S, now: Date) => boolean
  /** The refusal, asked of the rule that broke only. */
  rejection: (facts: Facts, submission: S, now: Date) => AdmissionRejection
}

type Named<R, N extends string> = R & { name: N }
const submissionRule = <const N extends string>(rule: Named<AdmissionRule<AdmissionFacts, SubmissionForAdmission>, N>) => rule
const turnRule = <const N extends string>(rule: Named<AdmissionRule<TurnFacts, unknown>, N>) => rule

export const SUBMISSION_RULES = [
  /** docs/guide/runs.md Retry: `retry_of` names no run of the organisation (404, not 409). */
  submissionRule({
    name: 'retriesMissingRun',
    breaks: (facts, submission) => retriesMissingRun(facts, submission),
    rejection: (_, submission) => ({ rule: 'retry_of_not_found', retryOf: submission.request.retry_of! }),
  }),
  /** docs/guide/runs.md Retry: only the latest failed customer run of this chat may be retried (409). */
  submissionRule({
    name: 'retriesOtherThanLatestFailedRun',
    breaks: (facts, submission) => (submission.request.retry_of ?? null) !== null && !isRetryOfLatestFailedRun(facts, submission.chatId),
    rejection: (facts, submission) => ({ rule: 'retry_not_allowed', retryOf: submission.request.retry_of!, latest: facts.latestCustomerRun }),
  }),
  /** docs/guide/runs.md Idempotency: a key used within 24 h names the first run, whatever its outcome (409). */
  submissionRule({
    name: 'reusesIdempotencyKey',
    breaks: (facts) => !keyIsUnused(facts),
    rejection: (facts) => ({ rule: 'idempotency_key_reused', runId: facts.keyUsedBy! }),
  }),
  /** docs/guide/tool-calls.md: a tool_result for an id that is not pending in this chat (422). */
  submissionRule({
    name: 'answersUnknownToolCall',
    breaks: (facts, submission) => !answersOnlyPendingCalls(facts.pendingCalls, answeredIds(submission)),
    rejection: (facts, submission) => ({
      rule: 'unknown_tool_use_id',
      unknownIds: unknownToolUseIds(facts.pendingCalls, answeredIds(submission)),
      pendingIds: facts.pendingCalls.map((c) => c.tool_use_id),
    }),
  }),
] as const

/**
 * What `readTurn` read for a submission that passed SUBMISSION_RULES, as data (the packed prompt
 * itself stays with the chat's runtime): the fixed parts' sizes when they do not fit the model's
 * input budget, and otherwise what the 402 and max_tokens are decided on.
 */
export type TurnFacts = {
  /** decision 033: the organisation's running customer runs (counted up to the cap) and the cap. */
  runningRuns: { count: number; cap: number }
  /** The fixed parts measured against the input budget when they do not fit it; null when they do (or nothing was packed: over the cap). */
  overflow: ContextOverflow | null
  /** The balance, prices, ceilings and packed input size (docs/guide/billing-and-usage.md); null when the context did not fit, or nothing was packed (over the cap). */
  budget: BudgetFacts | null
  /** docs/guide/turn-options.md: a tool_choice the turn's tools cannot meet (it names none of them, or requires one of none); null when met or not asked. */
  unmetToolChoice: { choice: string; offered: string[] } | null
}

export const TURN_RULES = [
  /** decision 033: the organisation already has as many running customer runs as it may (429); checked first, before packing. */
  turnRule({
    name: 'exceedsRunningRunCap',
    breaks: (facts) => facts.runningRuns.count >= facts.runningRuns.cap,
    rejection: (facts) => ({ rule: 'running_runs_limit', cap: facts.runningRuns.cap }),
  }),
  /** docs/guide/turn-options.md: tool_choice names a tool the turn does not offer, or requires one when it offers none (422). */
  turnRule({
    name: 'choosesToolNotOffered',
    breaks: (facts) => facts.unmetToolChoice !== null,
    rejection: (facts) => ({ rule: 'tool_choice_not_offered', ...facts.unmetToolChoice! }),
  }),
  /** docs/guide/context.md: the fixed parts (instructions, tools, anchors, the current exchange) alone pass the input budget (422). */
  turnRule({
    name: 'contextIsTooLarge',
    breaks: (facts) => facts.overflow !== null && !fixedPartsFit(facts.overflow),
    rejection: (facts) => ({ rule: 'context_too_large', overflow: facts.overflow! }),
  }),
  /** docs/guide/billing-and-usage.md Balance: the balance cannot pay the input and one output token (402). */
  turnRule({
    name: 'cannotAffordTurn',
    breaks: (facts) => facts.budget !== null && decideMaxTokens(facts.budget).value.kind === 'reject',
    rejection: (facts) => {
      const verdict = decideMaxTokens(facts.budget!).value
      if (verdict.kind !== 'reject') throw new Error('cannotAffordTurn asked for the refusal of a turn it admits')
      return verdict.rejection
    },
  }),
] as const

export type SubmissionRuleName = (typeof SUBMISSION_RULES)[number]['name']
export type TurnRuleName = (typeof TURN_RULES)[number]['name']

/** The first rule of `rules` the submission breaks, in the table's order; null when it breaks none. */
export function firstBrokenRule<Facts, S, R extends AdmissionRule<Facts, S>>(rules: readonly R[], facts: Facts, submission: S, now: Date): R | null {
  return rules.find((rule) => rule.breaks(facts, submission, now)) ?? null
}

/** The refusal of the named rule of `rules`. */
export function rejectionOf<Facts, S>(rules: readonly AdmissionRule<Facts, S>[], name: string, facts: Facts, submission: S, now: Date): AdmissionRejection {
  const rule = rules.find((r) => r.name === name)
  if (!rule) throw new Error(`no admission rule named ${name}`)
  return rule.rejection(facts, submission, now)
}

/**
 * SUBMISSION_RULES as one decision (the machine checks the same table rule by rule, as guards): the
 * first rule broken refuses the submission; one that breaks none closes every pending call, by
 * result or tombstone (`expired` past 24 h by `now`, `cancelled` for a cancelled or failed run's
 * call, `abandoned` otherwise).
 */
export function decideAdmission(facts: AdmissionFacts, submission: SubmissionForAdmission, now: Date): Decision<AdmissionVerdict> {
  const broken = firstBrokenRule(SUBMISSION_RULES, facts, submission, now)
  if (broken) return { value: { kind: 'reject', rejection: broken.rejection(facts, submission, now) }, warnings: [] }
  return { value: { kind: 'admit', ...closeCalls(facts, submission, now), retryOf: submission.request.retry_of ?? null }, warnings: [] }
}

/** TURN_RULES as one decision: the refusal of the first rule the read turn breaks, or null when it may be written. */
export function decideTurn(facts: TurnFacts, submission: unknown = null, now: Date = new Date(0)): AdmissionRejection | null {
  const broken = firstBrokenRule(TURN_RULES, facts, submission, now)
  return broken ? broken.rejection(facts, submission, now) : null
}
