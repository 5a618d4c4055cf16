import type { TranslationWarning } from '../domain/turns/coerce-reasoning-effort.ts'
import { decideMaxTokens, rejectionError } from '../domain/turns/decide-admission.ts'
import type { RunDeps } from './run-deps.ts'
import type { Submission } from './turn-types.ts'

/**
 * decideMaxTokens (docs/guide/billing-and-usage.md, the one place of the 402/max_tokens rule) over the balance read now:
 * throws its refusal as InsufficientBalanceError; otherwise adds its warnings to `warnings` and
 * returns the max_tokens it allows.
 */
export function affordableMaxTokens(
  deps: RunDeps,
  submission: Submission,
  inputTokens: number,
  markupPercent: string,
  warnings: TranslationWarning[],
): number {
  const decided = decideMaxTokens({
    balance: deps.store.balance.balanceOf(submission.orgId),
    model: submission.model,
    markupPercent,
    inputTokens,
    requestedMaxTokens: submission.request.max_tokens,
  })
  if (decided.value.kind === 'reject') throw rejectionError(decided.value.rejection)
  warnings.push(...decided.warnings)
  return decided.value.maxTokens
}
