import { describe, expect, it } from 'vitest'
import { compactionEstimateLimit, compactionFits, compactionInputLimit, compactionMaxTokens, textShares } from '../../../src/domain/context/fit-compaction-input.ts'

/** Decision 043: what a compaction run may send to its model. */
describe('compaction inside the window: the rules', () => {
  const echo8k = { context_window: 8_192, max_output_tokens: 2_048, max_input_tokens: null, long_context: null }
  const gpt5 = { context_window: 400_000, max_output_tokens: 128_000, max_input_tokens: 272_000, long_context: null }
  const sonnet = { context_window: 1_000_000, max_output_tokens: 64_000, max_input_tokens: null, long_context: { standard_window: 200_000, header: 'anthropic-beta: context-1m-2025-08-07' } }

  it('max_tokens: the plan within the output ceiling and half the standard window', () => {
    expect(compactionMaxTokens(echo8k, 400)).toBe(400)
    expect(compactionMaxTokens({ ...echo8k, max_output_tokens: 300 }, 400)).toBe(300)
    expect(compactionMaxTokens({ context_window: 600 }, 400)).toBe(300)
    expect(compactionMaxTokens(sonnet as never, 1_600)).toBe(1_600)
  })

  it('the input limit: the standard window less max_tokens, within the input limit', () => {
    expect(compactionInputLimit(echo8k, 384)).toBe(7_808)
    expect(compactionInputLimit(gpt5, 400)).toBe(272_000)
    // No long-context opt-in for a compaction run: the standard window is its window.
    expect(compactionInputLimit(sonnet as never, 400)).toBe(199_600)
    expect(compactionInputLimit({ context_window: 100 }, 400)).toBe(0)
  })

  it('in estimate units: the limit over the correction; a run fits when its corrected input is within it', () => {
    expect(compactionEstimateLimit(echo8k, 384, 1)).toBe(7_808)
    expect(compactionEstimateLimit(echo8k, 384, 1.25)).toBe(6_246)
    expect(compactionFits(echo8k, 6_246, 384, 1.25)).toBe(true)
    expect(compactionFits(echo8k, 6_247, 384, 1.25)).toBe(false)
    expect(compactionFits(echo8k, 7_808, 384, 1)).toBe(true)
    expect(compactionFits(echo8k, 7_809, 384, 1)).toBe(false)
  })

  it('shares: all whole when they fit; else the shortest whole, the rest cut to equal shares within the room', () => {
    expect(textShares([10, 20, 30], 60)).toEqual([null, null, null])
    expect(textShares([10, 2_000, 30, 5_000], 1_040)).toEqual([null, 500, null, 500])
    // 100 is under its share (300 = 900 / 3) and stays whole; 400 is just within half the 800 left,
    // whole too; 1,000 gets the 400 left.
    expect(textShares([1_000, 100, 400], 900)).toEqual([400, null, null])
    expect(textShares([1_000, 100, 401], 900)).toEqual([400, null, 400])
    expect(textShares([50, 60], 0)).toEqual([0, 0])
    expect(textShares([], 10)).toEqual([])
  })

  it('shares never exceed the room, and never cut a text kept whole', () => {
    for (let seed = 1; seed < 200; seed++) {
      const tokens = Array.from({ length: 1 + (seed % 9) }, (_, i) => ((seed * 7919 + i * 104_729) % 3_000) + 1)
      const room = (seed * 131) % 6_000
      const shares = textShares(tokens, room)
      const sent = tokens.reduce((n, t, i) => n + (shares[i] ?? t), 0)
      const total = tokens.reduce((n, t) => n + t, 0)
      if (total <= room) expect(shares.every((x) => x === null)).toBe(true)
      else expect(sent).toBeLessThanOrEqual(room)
      shares.forEach((s, i) => {
        if (s !== null) expect(s).toBeLessThan(tokens[i]!)
      })
    }
  })
})
