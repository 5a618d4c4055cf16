/**
 * compactionSizes (decisions §5.3: "blocks, summary shares and estimates follow the window"): what
 * compaction works with on a window, and the estimate of a summary not made yet.
 */
import { describe, expect, it } from 'vitest'
import { compactionSizes, summaryBound, unmadeSummaryEstimate } from '../../../src/domain/context/compaction-sizes.ts'
import { summaryTokens } from '../../../src/domain/context/render-summary.ts'

describe('compactionSizes', () => {
  it('a 128k model at the default headroom cuts 1,024-token blocks summarised in at most 400 tokens, as before', () => {
    expect(compactionSizes(115_200)).toEqual({ blockTokens: 1024, summaryMaxTokens: 400, mergedMaxTokens: 1600, mergeInputTokens: 115_200 })
  })

  it('sandbox/echo-8k at headroom 0.88 (983 tokens) cuts blocks of an eighth of it, with summaries shorter than their blocks', () => {
    const sizes = compactionSizes(983)
    expect(sizes).toEqual({ blockTokens: 122, summaryMaxTokens: 48, mergedMaxTokens: 122, mergeInputTokens: 983 })
    // Several blocks fit the budget: eager compaction finds sealed ones while the history still fits.
    expect(sizes.blockTokens * 4).toBeLessThan(983)
  })

  it('tiny budgets keep a floor: a block is never under 64 tokens, a summary under 32', () => {
    expect(compactionSizes(0)).toMatchObject({ blockTokens: 64, summaryMaxTokens: 32, mergedMaxTokens: 32, mergeInputTokens: 64 })
  })
})

describe('the estimate of a summary not made yet', () => {
  it('is the bound until the chat has made one, then the largest of its recent ones', () => {
    const bound = summaryBound(48)
    expect(bound).toBe(48 + summaryTokens(1_000_000, 1_000_000, ''))
    expect(unmadeSummaryEstimate([], 48)).toBe(bound)
    expect(unmadeSummaryEstimate([30, 41, 36], 48)).toBe(41)
    // Never above what a summary can be.
    expect(unmadeSummaryEstimate([500], 48)).toBe(bound)
  })
})
