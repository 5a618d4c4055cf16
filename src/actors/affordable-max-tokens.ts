import { InsufficientBalanceError } from '../domain/errors.ts'
import { Money } from '../domain/money.ts'
import { customerCost } from '../domain/pricing/customer-cost.ts'
import { ZERO_USAGE } from '../domain/pricing/usage.ts'
import type { TranslationWarning } from '../domain/turns/coerce-reasoning-effort.ts'
import type { RunDeps } from './run-deps.ts'
import type { Submission } from './turn-types.ts'

/**
 * decisions §4: 402 when the balance cannot pay the estimated input plus one output token;
 * otherwise max_tokens is only ever lowered, by the model's ceiling and by what the balance pays for.
 */
export function affordableMaxTokens(
  deps: RunDeps,
  submission: Submission,
  inputTokens: number,
  markupPercent: string,
  warnings: TranslationWarning[],
): number {
  const { model, request } = submission
  const balance = new Money(deps.store.balance.balanceOf(submission.orgId))
  const cost = (output: number) => new Money(customerCost({ ...ZERO_USAGE, input_tokens: inputTokens, output_tokens: output }, model, markupPercent))
  const inputCost = cost(0)
  if (balance.lt(cost(1))) {
    throw new InsufficientBalanceError(
      `the balance of ${balance.toFixed(2)} USD cannot pay for this turn's input (about ${inputTokens} tokens) and one output token`,
      { balance: balance.toFixed(), estimated_input_tokens: inputTokens },
      'add credit to the organisation',
    )
  }
  const perMillion = cost(1_000_000).minus(inputCost)
  const affordable = perMillion.isZero()
    ? Number.MAX_SAFE_INTEGER
    : balance.minus(inputCost).mul(1_000_000).div(perMillion).floor().toNumber()
  const requested = request.max_tokens ?? model.max_output_tokens
  const applied = Math.max(1, Math.min(requested, model.max_output_tokens, affordable))
  if (request.max_tokens != null && applied < request.max_tokens) {
    warnings.push({
      code: 'max_tokens_lowered',
      message: `max_tokens was lowered from ${request.max_tokens} to ${applied} (model ceiling or balance)`,
      details: { requested: request.max_tokens, applied },
    })
  }
  return applied
}
