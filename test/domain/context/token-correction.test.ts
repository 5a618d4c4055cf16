import { describe, expect, test } from 'vitest'
import fc from 'fast-check'
import { CORRECTION, NO_SAMPLES, correctionOf, sampleRatio, withSample, type CorrectionSamples } from '../../../src/domain/context/token-correction.ts'

const learned = (...ratios: number[]): CorrectionSamples => ratios.reduce(withSample, NO_SAMPLES)

describe('the per-model token correction (docs/decisions/027-model-limits.md)', () => {
  test('a run teaches the ratio of the vendor count to our estimate; a short prompt or no count teaches nothing', () => {
    expect(sampleRatio(10_000, 12_500)).toBe(1.25)
    expect(sampleRatio(1_023, 5_000)).toBeNull()
    expect(sampleRatio(10_000, 0)).toBeNull()
  })

  test('each ratio is bounded to [0.5, 2]', () => {
    expect(sampleRatio(2_000, 60_000)).toBe(CORRECTION.most)
    expect(sampleRatio(2_000, 10)).toBe(CORRECTION.least)
  })

  test('without runs the estimate stands; a vendor counting more corrects it from its first run', () => {
    expect(correctionOf(NO_SAMPLES)).toBe(1)
    expect(correctionOf(learned(1.25))).toBe(1.25)
  })

  test('conservative until enough runs: a vendor counting less lowers the correction only from the eighth run on', () => {
    const seven = learned(0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8)
    expect(correctionOf(seven)).toBe(1)
    expect(correctionOf(withSample(seven, 0.8))).toBe(0.8)
  })

  test('the highest recent ratio, rounded up to a step of 0.025, so noise does not move packing turn after turn', () => {
    expect(correctionOf(learned(1.201, 1.19, 1.21))).toBe(1.225)
    expect(correctionOf(learned(1.2, 1.2))).toBe(1.2)
  })

  test('only the last 16 ratios count: an old outlier is forgotten', () => {
    let samples = learned(1.9)
    for (let i = 0; i < CORRECTION.kept; i++) samples = withSample(samples, 1.1)
    expect(samples.ratios).toHaveLength(CORRECTION.kept)
    expect(samples.runs).toBe(CORRECTION.kept + 1)
    expect(correctionOf(samples)).toBe(1.1)
  })

  test('property: the correction is never below any kept ratio, within [0.5, 2], and a whole number of steps', () => {
    fc.assert(
      fc.property(fc.array(fc.double({ min: 0.5, max: 2, noNaN: true }), { minLength: 1, maxLength: 40 }), (ratios) => {
        const samples = learned(...ratios)
        const c = correctionOf(samples)
        for (const r of samples.ratios) expect(c).toBeGreaterThanOrEqual(r - 1e-9)
        expect(c).toBeGreaterThanOrEqual(0.5)
        expect(c).toBeLessThanOrEqual(2)
        expect(Math.abs(c / CORRECTION.step - Math.round(c / CORRECTION.step))).toBeLessThan(1e-9)
        if (samples.runs < CORRECTION.runsBeforeLowering) expect(c).toBeGreaterThanOrEqual(1)
      }),
    )
  })
})
