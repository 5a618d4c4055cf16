import { describe, expect, it } from 'vitest'
import type { RetentionRules } from '../../../src/domain/config/config-types.ts'
import { estimateTokens } from '../../../src/domain/tokens/estimate-tokens.ts'
import { BUDGET, Ledger, TEN, media, model, ordinalsOf, pack, partAt, prompt, reasoning } from './context-fixtures.ts'

/**
 * Recency (decisions §5.2): the whole estimates of the history parts newer than a part, against the
 * history budget; within t iff newer ≤ floor(t × history budget). Chosen estimates, oldest first:
 * ord 1 (1; 30 newer), ord 2 (1; 29 newer), ord 3 (28; 1 newer), ord 4 (1; 0 newer). Every body is TEN.
 */
function ledger(first: 'prompt' | 'reasoning' = 'prompt', attach = false) {
  const body = first === 'prompt' ? prompt(TEN) : reasoning(TEN)
  const m = attach ? [media('cat.png', 'image/png', 2_048)] : []
  return new Ledger()
    .add(1, body, { tokens: 1, media: m })
    .add(2, body, { tokens: 1, media: m })
    .add(3, prompt(TEN), { tokens: 28 })
    .add(4, prompt(TEN), { tokens: 1 })
}

const CUT_PROMPTS: RetentionRules = { version: 1, text: { prompt: { mode: 'always', to: 1 } } }
const CUT = ' one [… 9 tokens truncated …]'

describe('verbatim_within boundaries', () => {
  it('a part with exactly floor(t × budget) newer is within; one more token is outside', () => {
    // Budget 100, t 0.29: floor(29) = 29 exactly (binary floats would say 28.999…).
    const packed = pack({ history: ledger().history, rules: { ...CUT_PROMPTS, verbatim_within: 0.29 }, model: model(100) })
    expect(packed.context.history_budget).toBe(100)
    expect(packed.parts.map((p) => [p.ordinal, p.treatment])).toEqual([
      [1, 'truncated'],
      [2, 'verbatim'],
      [3, 'verbatim'],
      [4, 'verbatim'],
    ])
    expect(partAt(packed, 1).content).toMatchObject({ text: CUT })
    expect(partAt(packed, 2).content).toMatchObject({ text: TEN })
  })

  it('floors the limit: with budget 999 and t 0.25 the limit is 249, so 250 newer is outside', () => {
    const history = new Ledger()
      .add(1, prompt(TEN), { tokens: 1 }) // 250 newer
      .add(2, prompt(TEN), { tokens: 1 }) // 249 newer
      .add(3, prompt(TEN), { tokens: 249 }).history // 0 newer
    const packed = pack({ history, rules: { ...CUT_PROMPTS, verbatim_within: 0.25 }, model: model(999) })
    expect(packed.parts.map((p) => p.treatment)).toEqual(['truncated', 'verbatim', 'verbatim'])
  })

  it('measures against the history budget: fixed parts shrink it, and are not counted as newer', () => {
    const rules = { ...CUT_PROMPTS, verbatim_within: 0.29 }
    // Window 150 less instructions 40 and a 10-token new prompt: the same 100 as above, the same cut.
    const fixed = pack({ history: ledger().history, rules, model: model(150), instructionsTokens: 40, newParts: [{ body: prompt(TEN), media: [] }] })
    expect(fixed.context.history_budget).toBe(100)
    expect(fixed.parts.map((p) => p.treatment)).toEqual(['truncated', 'verbatim', 'verbatim', 'verbatim', 'verbatim'])
    // Window 200 with nothing fixed: limit floor(200 × 0.29) = 58, and ordinal 1 (30 newer) is within.
    const wide = pack({ history: ledger().history, rules, model: model(200) })
    expect(wide.parts.map((p) => p.treatment)).toEqual(['verbatim', 'verbatim', 'verbatim', 'verbatim'])
  })

  it('measures against the capped budget when max_history_tokens caps it', () => {
    const packed = pack({
      history: ledger().history,
      rules: { ...CUT_PROMPTS, verbatim_within: 0.29 },
      model: model(1_000),
      budget: { ...BUDGET, max_history_tokens: 100 },
    })
    expect(packed.context.history_budget).toBe(100)
    expect(packed.parts.map((p) => p.treatment)).toEqual(['truncated', 'verbatim', 'verbatim', 'verbatim'])
  })

  it('t = 0 keeps only the newest history part whole; t = 1 keeps every part that fits', () => {
    const none = pack({ history: ledger().history, rules: { ...CUT_PROMPTS, verbatim_within: 0 }, model: model(100) })
    expect(none.parts.map((p) => p.treatment)).toEqual(['truncated', 'truncated', 'truncated', 'verbatim'])
    const all = pack({ history: ledger().history, rules: { ...CUT_PROMPTS, verbatim_within: 1 }, model: model(100) })
    expect(all.parts.map((p) => p.treatment)).toEqual(['verbatim', 'verbatim', 'verbatim', 'verbatim'])
  })

  it('left out, it protects nothing', () => {
    const packed = pack({ history: ledger().history, rules: CUT_PROMPTS, model: model(100) })
    expect(packed.parts.map((p) => p.treatment)).toEqual(['truncated', 'truncated', 'truncated', 'truncated'])
  })
})

describe('reasoning threshold boundaries', () => {
  it('replays reasoning just within and omits reasoning just outside', () => {
    const packed = pack({ history: ledger('reasoning').history, rules: { version: 1, reasoning: 0.29 }, model: model(100) })
    expect(ordinalsOf(packed)).toEqual([2, 3, 4])
    expect(partAt(packed, 2)).toMatchObject({ treatment: 'verbatim', content: { type: 'reasoning', text: TEN } })
    expect(packed.context.segments[0]).toEqual({ first_ordinal: 1, last_ordinal: 1, parts: 1, treatment: 'omitted', tokens: 0 })
  })

  it('left out, it replays all reasoning', () => {
    const packed = pack({ history: ledger('reasoning').history, rules: { version: 1 }, model: model(100) })
    expect(ordinalsOf(packed)).toEqual([1, 2, 3, 4])
  })
})

describe('media threshold boundaries', () => {
  it('sends the attachment just within and marks the one just outside', () => {
    const packed = pack({ history: ledger('prompt', true).history, rules: { version: 1, media: { default: 0.29 } }, model: model(100) })
    expect(partAt(packed, 1)).toMatchObject({ treatment: 'truncated', content: { text: TEN, attachments: [{ kind: 'marker' }] } })
    expect(partAt(packed, 2)).toMatchObject({ treatment: 'verbatim', content: { text: TEN, attachments: [{ kind: 'file' }] } })
  })
})

describe('recency counts whole estimates, not what newer parts became', () => {
  it('a cut newer prompt still counts its whole estimate', () => {
    // Real estimates: every part 10 tokens. Prompts are cut to their marker alone.
    const history = new Ledger().add(1, reasoning(TEN)).add(2, prompt(TEN)).add(3, reasoning(TEN)).add(4, prompt(TEN)).history
    const rules: RetentionRules = { version: 1, reasoning: 0.25, text: { prompt: { mode: 'always', to: 0 } } }
    const packed = pack({ history, rules, model: model(100) })
    const marker = estimateTokens('[… 10 tokens truncated …]')
    expect(partAt(packed, 2).tokens).toBe(marker)
    // Counted as sent, ordinal 1 would have marker + 10 + marker newer, within floor(100 × 0.25) = 25:
    expect(marker + 10 + marker).toBeLessThanOrEqual(25)
    // counted whole it has 30 newer, and is omitted; ordinal 3 (10 newer) is replayed.
    expect(ordinalsOf(packed)).toEqual([2, 3, 4])
  })
})
