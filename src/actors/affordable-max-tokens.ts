import { correctedTokens, type WindowInForce } from '../domain/context/model-limits.ts'
import type { TranslationWarning } from '../domain/turns/coerce-reasoning-effort.ts'
import { decideMaxTokens, rejectionError } from '../domain/turns/decide-admission.ts'
import type { RunDeps } from './run-deps.ts'
import type { Submission } from './turn-types.ts'

/** The max_tokens a turn is sent with, and the window it fits (docs/decisions/027-model-limits.md). */
export type MaxTokensFit = {
  maxTokens: number
  window: WindowInForce
  /** The input as the vendor is expected to count it: the estimate times the model's correction. */
  correctedInputTokens: number
}

/**
 * decideMaxTokens (docs/guide/billing-and-usage.md, the one place of the 402/max_tokens rule) over the balance read now
 * and the packed input as the vendor will count it: throws its refusal as InsufficientBalanceError;
 * otherwise adds its warnings to `warnings` and returns the max_tokens it allows and the window.
 */
export function affordableMaxTokens(
  deps: RunDeps,
  submission: Submission,
  inputTokens: number,
  markupPercent: string,
  warnings: TranslationWarning[],
  correction = 1,
): MaxTokensFit {
  const correctedInputTokens = correctedTokens(inputTokens, correction)
  const decided = decideMaxTokens({
    balance: deps.store.balance.balanceOf(submission.orgId),
    model: submission.model,
    markupPercent,
    inputTokens,
    correctedInputTokens,
    requestedMaxTokens: submission.request.max_tokens,
  })
  if (decided.value.kind === 'reject') throw rejectionError(decided.value.rejection)
  warnings.push(...decided.warnings)
  return { maxTokens: decided.value.maxTokens, window: decided.value.window, correctedInputTokens }
}
