import { describe, expect, it } from 'vitest'
import { floorTimes, historyBudget, inputBudget } from '../../../src/domain/context/budget.ts'
import { BUDGET, Ledger, TEN, model, pack, prompt } from './context-fixtures.ts'

describe('inputBudget (decisions §5.1: floor(context_window × (1 − headroom)), exactly)', () => {
  it('is 12800 for 128000 with headroom 0.9, where binary floats give 12799.99…', () => {
    expect(128000 * (1 - 0.9)).toBeLessThan(12800) // the trap the exact computation avoids
    expect(inputBudget(128_000, { headroom: 0.9 })).toBe(12_800)
  })

  it('is 7372 for 8192 with headroom 0.1 (7372.8 floored)', () => {
    expect(inputBudget(8_192, { headroom: 0.1 })).toBe(7_372)
  })

  it('is the whole window with headroom 0, and floors the fractional rest otherwise', () => {
    expect(inputBudget(8_192, { headroom: 0 })).toBe(8_192)
    expect(inputBudget(200, { headroom: 0.85 })).toBe(30) // 200 × 0.15 = 30 exactly
    expect(inputBudget(1_000, { headroom: 0.7 })).toBe(300)
    expect(inputBudget(1_001, { headroom: 0.5 })).toBe(500) // 500.5 floored
  })

  it('is what packContext reports as the manifest input_budget', () => {
    const packed = pack({ history: new Ledger().history, model: model(128_000), budget: { ...BUDGET, headroom: 0.9 } })
    expect(packed.context.input_budget).toBe(12_800)
    expect(packed.context.history_budget).toBe(12_800)
  })
})

describe('historyBudget (input budget − fixed parts, capped by max_history_tokens)', () => {
  it('is what the fixed parts leave when there is no cap (null or left out)', () => {
    expect(historyBudget(12_800, 800, { max_history_tokens: null })).toBe(12_000)
    expect(historyBudget(12_800, 800, {})).toBe(12_000)
  })

  it('is capped by max_history_tokens when the cap is smaller', () => {
    expect(historyBudget(100_000, 800, { max_history_tokens: 32_000 })).toBe(32_000)
  })

  it('is not raised by a cap larger than what is left', () => {
    expect(historyBudget(12_800, 800, { max_history_tokens: 32_000 })).toBe(12_000)
  })

  it('is negative when the fixed parts alone exceed the input budget, and zero when they fill it', () => {
    expect(historyBudget(100, 150, {})).toBe(-50)
    expect(historyBudget(100, 100, {})).toBe(0)
  })

  it('caps the history packContext sends: max_history_tokens drops what the window would have held', () => {
    const ledger = new Ledger()
    for (let ordinal = 1; ordinal <= 4; ordinal++) ledger.add(ordinal, prompt(TEN)) // 10 tokens each
    // Window 100, no fixed parts: 100 left, capped at 25: two 10-token parts fit, the third would make 30.
    const packed = pack({ history: ledger.history, model: model(100), budget: { ...BUDGET, max_history_tokens: 25 } })
    expect(packed.context.input_budget).toBe(100)
    expect(packed.context.history_budget).toBe(25)
    expect(packed.context.tokens.history).toBe(20)
    expect(packed.context.dropped).toEqual({ dropped: 2, start_ordinal: 1, end_ordinal: 2 })
  })

  it('is the input budget less instructions, tools and the current exchange', () => {
    const packed = pack({
      history: new Ledger().history,
      model: model(1_000),
      instructionsTokens: 100,
      toolsTokens: 50,
      newParts: [{ body: prompt(TEN), media: [] }], // 10 tokens
    })
    expect(packed.context.tokens).toEqual({ instructions: 100, tools: 50, anchors: 0, history: 0, summaries: 0, current: 10, total: 160 })
    expect(packed.context.history_budget).toBe(840)
  })
})

describe('floorTimes (recency limits: floor(n × t) with t read as its decimal)', () => {
  it('is exact where binary floats fall just short', () => {
    expect(100 * 0.29).toBeLessThan(29)
    expect(floorTimes(100, 0.29)).toBe(29)
    expect(0.57 * 100).toBeLessThan(57)
    expect(floorTimes(100, 0.57)).toBe(57)
  })

  it('floors a fractional product', () => {
    expect(floorTimes(999, 0.25)).toBe(249) // 249.75
    expect(floorTimes(7, 0.5)).toBe(3)
  })

  it('is 0 for a zero threshold or a zero budget, and n for a threshold of 1', () => {
    expect(floorTimes(1_000, 0)).toBe(0)
    expect(floorTimes(0, 0.5)).toBe(0)
    expect(floorTimes(1_000, 1)).toBe(1_000)
  })
})
