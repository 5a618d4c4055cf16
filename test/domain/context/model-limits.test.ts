import { describe, expect, test } from 'vitest'
import { correctedTokens, estimateBudget, minUsefulOutput, vendorInputBudget, windowInForce } from '../../../src/domain/context/model-limits.ts'

// Limits as catalogue/models.json lists them.
const gpt5 = { context_window: 400_000, max_input_tokens: 272_000, max_output_tokens: 128_000 }
const haiku = { context_window: 200_000, max_input_tokens: null, max_output_tokens: 64_000 }
const sonnet = { ...haiku, context_window: 1_000_000, long_context: { standard_window: 200_000, header: 'anthropic-beta', value: 'context-1m-2025-08-07' } }

describe('what a request may hold under a model’s limits (docs/decisions/027-model-limits.md)', () => {
  test('the input budget is floor(window × (1 − headroom)) within the input limit: gpt-5 packs 272,000, not 360,000', () => {
    expect(vendorInputBudget(gpt5, { headroom: 0.1 })).toBe(272_000)
    expect(vendorInputBudget(haiku, { headroom: 0.1 })).toBe(180_000)
  })

  test('whatever the headroom, the window keeps the least useful output free', () => {
    expect(minUsefulOutput(haiku)).toBe(512)
    expect(vendorInputBudget(haiku, { headroom: 0 })).toBe(200_000 - 512)
    // A model whose own ceiling is lower keeps only that.
    expect(vendorInputBudget({ context_window: 8_192, max_output_tokens: 100 }, { headroom: 0 })).toBe(8_092)
  })

  test('packing measures our estimates against the budget over the correction; the vendor count is the estimate times it', () => {
    expect(estimateBudget(180_000, 1.25)).toBe(144_000)
    expect(estimateBudget(180_001, 1)).toBe(180_001)
    expect(correctedTokens(144_000, 1.25)).toBe(180_000)
    expect(correctedTokens(3, 1.25)).toBe(4)
  })

  test('a long-context model stays in its standard window while the input and the least output fit it', () => {
    expect(windowInForce(sonnet, 150_000)).toEqual({ window: 200_000, longContext: false })
    expect(windowInForce(sonnet, 199_488)).toEqual({ window: 200_000, longContext: false })
    expect(windowInForce(sonnet, 199_489)).toEqual({ window: 1_000_000, longContext: true })
    expect(windowInForce(haiku, 199_000)).toEqual({ window: 200_000, longContext: false })
  })
})
