import { describe, expect, it } from 'vitest'
import { addSegment, type Segment } from '../../../src/domain/context/context-manifest.ts'
import { estimateTokens } from '../../../src/domain/tokens/estimate-tokens.ts'
import { Ledger, TEN, call, message, model, pack, prompt, reasoning, result } from './context-fixtures.ts'

/** Each segment consumes its `parts` ordinals of the ledger, in order, first and last matching; all are consumed. */
function expectCoverage(segments: Segment[], ledgerOrdinals: number[]) {
  let at = 0
  for (const s of segments) {
    expect(s.parts).toBeGreaterThan(0)
    expect(s.first_ordinal).toBe(ledgerOrdinals[at])
    expect(s.last_ordinal).toBe(ledgerOrdinals[at + s.parts - 1])
    at += s.parts
  }
  expect(at).toBe(ledgerOrdinals.length)
  segments.slice(1).forEach((s, i) => expect(s.treatment).not.toBe(segments[i]!.treatment))
}

describe('addSegment', () => {
  it('merges consecutive parts of the same treatment, summing parts and tokens', () => {
    const segments: Segment[] = []
    addSegment(segments, 1, 1, 1, 'verbatim', 10)
    addSegment(segments, 5, 7, 2, 'verbatim', 20) // ordinals 5 and 7: gaps allowed
    addSegment(segments, 8, 8, 1, 'omitted', 0)
    addSegment(segments, 9, 9, 1, 'verbatim', 3)
    expect(segments).toEqual([
      { first_ordinal: 1, last_ordinal: 7, parts: 3, treatment: 'verbatim', tokens: 30 },
      { first_ordinal: 8, last_ordinal: 8, parts: 1, treatment: 'omitted', tokens: 0 },
      { first_ordinal: 9, last_ordinal: 9, parts: 1, treatment: 'verbatim', tokens: 3 },
    ])
  })

  it('ignores an empty range', () => {
    const segments: Segment[] = []
    addSegment(segments, 1, 0, 0, 'dropped', 0)
    expect(segments).toEqual([])
  })
})

describe('the manifest context', () => {
  it('is one segment when anchors, history and the current exchange are all verbatim', () => {
    const history = new Ledger()
      .add(2, prompt(TEN))
      .add(4, message(TEN))
      .add(8, prompt(TEN), { runId: 'r8' })
      .add(16, message(TEN), { runId: 'r8' }).history
    const packed = pack({ history, rules: { version: 1, anchor_parts: 1 }, currentRuns: ['r8'] })
    expect(packed.context.segments).toEqual([{ first_ordinal: 2, last_ordinal: 16, parts: 4, treatment: 'verbatim', tokens: 40 }])
    expect(packed.context.tokens).toEqual({ instructions: 0, tools: 0, anchors: 10, history: 10, summaries: 0, current: 20, total: 40 })
  })

  describe('with every treatment', () => {
    const C = estimateTokens(' one [… 9 tokens truncated …]') // a TEN prompt or message cut to 1
    const CALL = estimateTokens('f') + estimateTokens('{}')
    const RESULT = estimateTokens('f') + 10
    // 1 anchor | 2–3 dropped | 4–5 truncated | 6 omitted reasoning | 7 verbatim | 8 current (its run), then the new result.
    const ordinals = [1, 2, 3, 4, 5, 6, 7, 8]
    const run = () => {
      const history = new Ledger()
        .add(1, prompt(TEN))
        .add(2, prompt(TEN))
        .add(3, message(TEN))
        .add(4, prompt(TEN))
        .add(5, message(TEN))
        .add(6, reasoning(TEN))
        .add(7, prompt(TEN))
        .add(8, call('c1', 'f', '{}'), { runId: 'r8' }).history
      return pack({
        history,
        // verbatim_within 0 and reasoning 0: only ordinal 7 (nothing newer) is within either.
        rules: { version: 1, anchor_parts: 1, verbatim_within: 0, reasoning: 0, text: { prompt: { mode: 'always', to: 1 }, message: { mode: 'always', to: 1 } } },
        newParts: [{ body: result('c1', 'f', TEN), media: [] }],
        currentRuns: ['r8'],
        instructionsTokens: 7,
        toolsTokens: 3,
        // History budget 2C + 10: ordinals 7, 6 (omitted, free), 5 and 4 fit; 3 (C more) does not.
        model: model(7 + 3 + 10 + CALL + RESULT + 2 * C + 10),
      })
    }

    it('merges consecutive treatments into segments', () => {
      const packed = run()
      expect(packed.context.segments).toEqual([
        { first_ordinal: 1, last_ordinal: 1, parts: 1, treatment: 'verbatim', tokens: 10 },
        { first_ordinal: 2, last_ordinal: 3, parts: 2, treatment: 'dropped', tokens: 0 },
        { first_ordinal: 4, last_ordinal: 5, parts: 2, treatment: 'truncated', tokens: 2 * C },
        { first_ordinal: 6, last_ordinal: 6, parts: 1, treatment: 'omitted', tokens: 0 },
        { first_ordinal: 7, last_ordinal: 8, parts: 2, treatment: 'verbatim', tokens: 10 + CALL },
      ])
    })

    it('covers every packable ordinal exactly once; the new part is not yet in it', () => {
      const packed = run()
      expectCoverage(packed.context.segments, ordinals)
      expect(packed.parts.map((p) => [p.ordinal, p.treatment])).toEqual([
        [1, 'verbatim'],
        [4, 'truncated'],
        [5, 'truncated'],
        [7, 'verbatim'],
        [8, 'verbatim'],
        [-1, 'verbatim'],
      ])
    })

    it('reports the budgets, the tokens of each kind and the dropped range', () => {
      const packed = run()
      expect(packed.context).toMatchObject({
        input_budget: 7 + 3 + 10 + CALL + RESULT + 2 * C + 10,
        history_budget: 2 * C + 10,
        tokens: { instructions: 7, tools: 3, anchors: 10, history: 2 * C + 10, summaries: 0, current: CALL + RESULT, total: 7 + 3 + 10 + 2 * C + 10 + CALL + RESULT },
        summaries: [],
        dropped: { dropped: 2, start_ordinal: 2, end_ordinal: 3 },
      })
      expect(packed.estimatedTokens).toBe(packed.context.tokens.total)
      // Segment tokens add up to what the ledger's parts were sent as.
      const segmentTokens = packed.context.segments.reduce((n, s) => n + s.tokens, 0)
      expect(segmentTokens).toBe(packed.context.tokens.anchors + packed.context.tokens.history + CALL)
    })
  })

  it('an omitted reasoning part between verbatim parts splits them into three segments', () => {
    const history = new Ledger().add(1, prompt(TEN)).add(2, reasoning(TEN)).add(3, prompt(TEN)).add(4, prompt(TEN)).history
    // reasoning 0.01 of 1000 = 10: ordinal 2 has 20 newer.
    const packed = pack({ history, rules: { version: 1, reasoning: 0.01 } })
    expect(packed.context.segments).toEqual([
      { first_ordinal: 1, last_ordinal: 1, parts: 1, treatment: 'verbatim', tokens: 10 },
      { first_ordinal: 2, last_ordinal: 2, parts: 1, treatment: 'omitted', tokens: 0 },
      { first_ordinal: 3, last_ordinal: 4, parts: 2, treatment: 'verbatim', tokens: 20 },
    ])
    expectCoverage(packed.context.segments, [1, 2, 3, 4])
  })

  it('a dropped range of many parts is one segment, omitted reasoning in it included', () => {
    const ledger = new Ledger()
    for (let ordinal = 1; ordinal <= 100; ordinal++) ledger.add(ordinal * 3, ordinal % 10 === 0 ? reasoning(TEN) : prompt(TEN))
    // Window 50: the newest five parts (ordinals 288–300, one of them reasoning 300) fit.
    const packed = pack({ history: ledger.history, model: model(50) })
    expect(packed.context.segments).toEqual([
      { first_ordinal: 3, last_ordinal: 285, parts: 95, treatment: 'dropped', tokens: 0 },
      { first_ordinal: 288, last_ordinal: 300, parts: 5, treatment: 'verbatim', tokens: 50 },
    ])
    expect(packed.context.dropped).toEqual({ dropped: 95, start_ordinal: 3, end_ordinal: 285 })
    expectCoverage(
      packed.context.segments,
      Array.from({ length: 100 }, (_, i) => (i + 1) * 3),
    )
  })
})
