import { describe, expect, it } from 'vitest'
import { PLATFORM_MARKUP_PERCENT } from '../../../src/domain/catalogue/apply-markup.ts'
import { correctedTokens } from '../../../src/domain/context/model-limits.ts'
import { InsufficientBalanceError } from '../../../src/domain/errors.ts'
import { decideMaxTokens, rejectionError } from '../../../src/domain/turns/decide-admission.ts'
import { echo } from '../../helpers/turns.ts'

// Moved from test/actors/affordable-max-tokens.test.ts (issue 25: the 402 is the machine's guard
// `cannotAffordTurn` over decideMaxTokens; the balance is read by readTurn as a value).
const fit = (balance: string, inputTokens: number, requestedMaxTokens?: number, correction = 1) =>
  decideMaxTokens({
    balance,
    model: echo(),
    markupPercent: PLATFORM_MARKUP_PERCENT,
    inputTokens,
    correctedInputTokens: correctedTokens(inputTokens, correction),
    requestedMaxTokens,
  })

describe('decideMaxTokens over a balance read as a value', () => {
  it('402 as InsufficientBalanceError when the balance cannot pay the input and one output token', () => {
    const decided = fit('0.0000001', 1000, 100)
    if (decided.value.kind !== 'reject') throw new Error('expected a refusal')
    const error = rejectionError(decided.value.rejection)
    expect(error).toBeInstanceOf(InsufficientBalanceError)
    expect(error).toMatchObject({
      message: "the balance of 0.00 USD cannot pay for this turn's input (about 1000 tokens) and one output token",
      details: { balance: '0.0000001', estimated_input_tokens: 1000 },
      hint: 'add credit to the organisation',
    })
    expect(decided.warnings).toEqual([])
  })

  it('lowers a requested max_tokens to what the balance pays for, with the warning', () => {
    const decided = fit('0.0001', 10, 1000)
    if (decided.value.kind !== 'admit') throw new Error('expected an admission')
    const applied = decided.value.maxTokens
    expect(applied).toBeLessThan(1000)
    expect(decided.warnings[0]).toMatchObject({ code: 'max_tokens_lowered', details: { requested: 1000, applied } })
  })

  it("without a requested max_tokens: the model's ceiling when the balance pays for it, and no warning", () => {
    const decided = fit('1000', 10)
    expect(decided.value).toMatchObject({ kind: 'admit', maxTokens: echo().max_output_tokens })
    expect(decided.warnings).toEqual([])
  })

  it('measures the input as the vendor counts it: with a correction of 1.25, 100,000 estimated tokens leave 128,000 − 125,000 of the window, less a twentieth of the input: only the least useful output, 512', () => {
    expect(echo().context_window).toBe(128_000)
    expect(correctedTokens(100_000, 1.25)).toBe(125_000)
    expect(fit('1000', 90_000, undefined, 1.25).value).toMatchObject({ maxTokens: 128_000 - 112_500 - 5_625 })
    expect(fit('1000', 100_000, undefined, 1.25).value).toEqual({ kind: 'admit', maxTokens: 512, window: { window: 128_000, longContext: false } })
  })
})
