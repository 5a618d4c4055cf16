import { describe, expect, it } from 'vitest'
import type { ContextBudget } from '../../../src/domain/config/config-types.ts'
import { ContextTooLargeError } from '../../../src/domain/errors.ts'
import { BUDGET, Ledger, TEN, model, ordinalsOf, pack, packRaw, prompt } from './context-fixtures.ts'

/** Ordinals 10, 20, 30, 40, 50 (gaps, as the ledger allows), each a 10-token prompt. */
const ledger = () => {
  const l = new Ledger()
  for (const ordinal of [10, 20, 30, 40, 50]) l.add(ordinal, prompt(TEN))
  return l
}

const SUMMARIZE_MESSAGE = 'the oldest history was dropped as under drop_oldest: summaries are not made here'

function packIn(window: number, budget: ContextBudget = BUDGET, anchorParts = 0) {
  return pack({ history: ledger().history, model: model(window), budget, rules: { version: 1, anchor_parts: anchorParts } })
}

describe('history_dropped', () => {
  it('nothing dropped: dropped is null and there is no warning', () => {
    const packed = packIn(50) // 5 × 10 fits exactly
    expect(packed.context.dropped).toBeNull()
    expect(packed.warnings).toEqual({ config: [], translation: [] })
    expect(ordinalsOf(packed)).toEqual([10, 20, 30, 40, 50])
    expect(packed.context.tokens.history).toBe(50)
  })

  it('one token short drops the oldest part', () => {
    const packed = packIn(49)
    expect(packed.context.dropped).toEqual({ dropped: 1, start_ordinal: 10, end_ordinal: 10 })
    expect(packed.warnings.config).toEqual([{ code: 'history_dropped', dropped: 1, start_ordinal: 10, end_ordinal: 10 }])
  })

  it('drop_oldest: the count and the first and last ordinal omitted, in the config warnings', () => {
    const packed = packIn(25)
    expect(ordinalsOf(packed)).toEqual([40, 50])
    expect(packed.context.dropped).toEqual({ dropped: 3, start_ordinal: 10, end_ordinal: 30 })
    expect(packed.warnings.config).toEqual([{ code: 'history_dropped', dropped: 3, start_ordinal: 10, end_ordinal: 30 }])
    expect(packed.warnings.translation).toEqual([])
    expect(packed.context.tokens).toMatchObject({ history: 20, total: 20 })
  })

  it('summarize drops the same parts, and the warning says summaries were not made', () => {
    const packed = packIn(25, { ...BUDGET, history_mode: 'summarize' })
    expect(packed.context.dropped).toEqual({ dropped: 3, start_ordinal: 10, end_ordinal: 30 })
    expect(packed.warnings.config).toEqual([
      { code: 'history_dropped', dropped: 3, start_ordinal: 10, end_ordinal: 30, history_mode: 'summarize', message: SUMMARIZE_MESSAGE },
    ])
  })

  it('a budget without history_mode is summarize (the platform default)', () => {
    const packed = packIn(25, { version: 3, headroom: 0 })
    expect(packed.warnings.config).toEqual([
      { code: 'history_dropped', dropped: 3, start_ordinal: 10, end_ordinal: 30, history_mode: 'summarize', message: SUMMARIZE_MESSAGE },
    ])
  })

  it('everything droppable dropped when not even the newest part fits', () => {
    const packed = packIn(9)
    expect(ordinalsOf(packed)).toEqual([])
    expect(packed.context.dropped).toEqual({ dropped: 5, start_ordinal: 10, end_ordinal: 50 })
    expect(packed.context.tokens.history).toBe(0)
    expect(packed.context.segments).toEqual([{ first_ordinal: 10, last_ordinal: 50, parts: 5, treatment: 'dropped', tokens: 0 }])
  })

  it('anchors are never dropped: with a history budget of 0 everything after them is', () => {
    const packed = packIn(20, BUDGET, 2)
    expect(packed.context.history_budget).toBe(0)
    expect(ordinalsOf(packed)).toEqual([10, 20])
    expect(packed.context.dropped).toEqual({ dropped: 3, start_ordinal: 30, end_ordinal: 50 })
    expect(packed.context.tokens).toMatchObject({ anchors: 20, history: 0, total: 20 })
    // One token less and the anchors alone do not fit: context_too_large, not a dropped anchor.
    expect(() => packRaw({ history: ledger().history, model: model(19), budget: BUDGET, rules: { version: 1, anchor_parts: 2 } })).toThrow(ContextTooLargeError)
  })

  it('drops a contiguous oldest range: an older part that would fit is dropped with the newer one that did not', () => {
    const history = new Ledger().add(1, prompt('x')).add(2, prompt(TEN)).add(3, prompt(TEN)).history
    const packed = pack({ history, model: model(15) })
    // 3 takes 10; 2 would make 20 > 15; 1 (1 token) would fit alone but lies beyond the gap.
    expect(ordinalsOf(packed)).toEqual([3])
    expect(packed.context.dropped).toEqual({ dropped: 2, start_ordinal: 1, end_ordinal: 2 })
  })

  it('an empty history drops nothing', () => {
    const packed = pack({ history: new Ledger().history, model: model(0) })
    expect(packed.context.dropped).toBeNull()
    expect(packed.warnings.config).toEqual([])
    expect(packed.context.segments).toEqual([])
  })
})
