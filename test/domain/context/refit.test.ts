import { describe, expect, it } from 'vitest'
import { CORRECTION, correctionOf, withSample, NO_SAMPLES } from '../../../src/domain/context/token-correction.ts'
import { contextRefusedMessage, mayRefit, refitCorrection, refusalRatio, type ContextRefusal, type RefusedRequest } from '../../../src/domain/context/refit.ts'

// docs/decisions/044-context-refusal-refit.md
const sent: RefusedRequest = { estimatedInputTokens: 190_000, correction: 1, maxTokens: 9_488, window: 200_000, inputLimit: null }
const refusal = (over: Partial<ContextRefusal> = {}): ContextRefusal => ({ wording: 'anthropic-prompt-too-long', vendorCount: null, window: null, maxTokens: null, ...over })

describe('refusalRatio: what a context refusal teaches the correction', () => {
  it("the vendor's own count over the estimate it refused, exactly", () => {
    expect(refusalRatio(sent, refusal({ vendorCount: 209_000, window: 200_000 }))).toBeCloseTo(1.1, 10)
  })

  it('without a count: at least the limit the request broke over the estimate (here the window less max_tokens it was sent with)', () => {
    const ratio = refusalRatio({ ...sent, correction: 1 }, refusal({ wording: 'openai-context-length-exceeded' }))
    // The input was over 200,000 − 9,488 in the vendor's count, and the correction must move by a tenth at least.
    expect(ratio * sent.estimatedInputTokens).toBeGreaterThan(200_000 - 9_488)
    expect(ratio).toBeGreaterThanOrEqual(1.1)
  })

  it('without a count, a correction already high still moves: the next packing is smaller than the refused one', () => {
    expect(refusalRatio({ ...sent, correction: 1.4 }, refusal())).toBeCloseTo(1.54, 10)
  })

  it('clamped as every sample is', () => {
    expect(refusalRatio(sent, refusal({ vendorCount: 10 * sent.estimatedInputTokens }))).toBe(CORRECTION.most)
  })

  it('the correction in force right after one refusal is at least its ratio, from a cold start', () => {
    const ratio = refusalRatio(sent, refusal({ vendorCount: 230_000 }))
    expect(correctionOf(withSample(NO_SAMPLES, ratio))).toBeGreaterThanOrEqual(ratio)
  })
})

describe('refitCorrection: the packing after a refusal leaves a margin', () => {
  it('one step (CORRECTION.step) above what the refusal taught, so a repack whose ratio sits a little above the refused one still fits', () => {
    expect(refitCorrection(1.175)).toBe(1.2)
    expect(refitCorrection(1)).toBe(1.025)
    // A refused ratio a hair under a step boundary: the learned correction leaves almost nothing.
    const learned = correctionOf(withSample(NO_SAMPLES, 1.17499))
    expect(learned).toBe(1.175)
    expect(refitCorrection(learned) / 1.17499).toBeGreaterThan(1.02)
  })
})

describe('mayRefit: one refit a run', () => {
  it('a refusal on the first request may be refitted; on the second, not; no refusal, never', () => {
    expect(mayRefit(0, refusal())).toBe(true)
    expect(mayRefit(1, refusal())).toBe(false)
    expect(mayRefit(0, null)).toBe(false)
  })
})

describe('contextRefusedMessage', () => {
  it('names the context, the vendor’s count and whether the turn was packed again', () => {
    expect(contextRefusedMessage(refusal({ vendorCount: 210_000, window: 200_000 }), 1)).toBe(
      'the vendor refused the request for its context size (it counted 210000 input tokens against 200000) after the context was packed again with the correction its refusal taught',
    )
    expect(contextRefusedMessage(refusal(), 0)).toBe('the vendor refused the request for its context size')
  })
})
