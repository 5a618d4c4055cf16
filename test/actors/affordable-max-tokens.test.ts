import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { affordableMaxTokens } from '../../src/actors/affordable-max-tokens.ts'
import type { RunDeps } from '../../src/actors/run-deps.ts'
import type { Submission } from '../../src/actors/turn-types.ts'
import { PLATFORM_MARKUP_PERCENT } from '../../src/domain/catalogue/apply-markup.ts'
import { InsufficientBalanceError } from '../../src/domain/errors.ts'
import type { TranslationWarning } from '../../src/domain/turns/coerce-reasoning-effort.ts'
import { decideMaxTokens } from '../../src/domain/turns/decide-admission.ts'
import { echo } from '../helpers/turns.ts'
import { openTempStore } from '../helpers/temp-store.ts'

// The repacking after compaction budgets max_tokens by decideMaxTokens, the one place of the rule
// (decisions §4); affordableMaxTokens only reads the balance and throws a refusal.
let temp: ReturnType<typeof openTempStore>
let orgId: string
beforeEach(() => {
  temp = openTempStore()
  orgId = temp.store.organisations.create('Acme', 'acme').id
})
afterEach(() => temp.close())

const deps = () => ({ store: temp.store }) as unknown as RunDeps
const submission = (maxTokens?: number) => ({ orgId, model: echo(), request: { max_tokens: maxTokens } }) as unknown as Submission

describe('affordableMaxTokens is decideMaxTokens over the balance read now', () => {
  it('402 as InsufficientBalanceError when the balance cannot pay the input and one output token', () => {
    temp.store.balance.add(orgId, 'topup', '0.0000001')
    const warnings: TranslationWarning[] = []
    let thrown: unknown
    try {
      affordableMaxTokens(deps(), submission(100), 1000, PLATFORM_MARKUP_PERCENT, warnings)
    } catch (error) {
      thrown = error
    }
    expect(thrown).toBeInstanceOf(InsufficientBalanceError)
    expect(thrown).toMatchObject({
      message: "the balance of 0.00 USD cannot pay for this turn's input (about 1000 tokens) and one output token",
      details: { balance: '0.0000001', estimated_input_tokens: 1000 },
      hint: 'add credit to the organisation',
    })
    expect(warnings).toEqual([])
  })

  it('lowers a requested max_tokens to what the balance pays for, adding the warning to those given', () => {
    temp.store.balance.add(orgId, 'topup', '0.0001')
    const given: TranslationWarning = { code: 'reasoning_effort_coerced', message: 'before', details: {} } as TranslationWarning
    const warnings = [given]
    const { maxTokens: applied, window } = affordableMaxTokens(deps(), submission(1000), 10, PLATFORM_MARKUP_PERCENT, warnings)
    const decided = decideMaxTokens({ balance: '0.0001', model: echo(), markupPercent: PLATFORM_MARKUP_PERCENT, inputTokens: 10, requestedMaxTokens: 1000 })
    expect(decided.value).toEqual({ kind: 'admit', maxTokens: applied, window })
    expect(applied).toBeLessThan(1000)
    expect(warnings).toEqual([given, ...decided.warnings])
    expect(warnings[1]).toMatchObject({ code: 'max_tokens_lowered', details: { requested: 1000, applied } })
  })

  it("without a requested max_tokens: the model's ceiling when the balance pays for it, and no warning", () => {
    temp.store.balance.add(orgId, 'topup', '1000')
    const warnings: TranslationWarning[] = []
    expect(affordableMaxTokens(deps(), submission(), 10, PLATFORM_MARKUP_PERCENT, warnings).maxTokens).toBe(echo().max_output_tokens)
    expect(warnings).toEqual([])
  })

  it('measures the input as the vendor counts it: with a correction of 1.25, 100,000 estimated tokens leave 128,000 − 125,000 of the window', () => {
    temp.store.balance.add(orgId, 'topup', '1000')
    const warnings: TranslationWarning[] = []
    const fit = affordableMaxTokens(deps(), submission(), 100_000, PLATFORM_MARKUP_PERCENT, warnings, 1.25)
    expect(echo().context_window).toBe(128_000)
    expect(fit).toEqual({ maxTokens: 3_000, window: { window: 128_000, longContext: false }, correctedInputTokens: 125_000 })
  })
})
