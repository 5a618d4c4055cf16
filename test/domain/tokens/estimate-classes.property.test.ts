import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { estimateTokens, EXACT_MAX_CHARS } from '../../../src/domain/tokens/estimate-tokens.ts'
import { base64InProse, CONTENT_CLASSES, exactO200k, seededRandom, textOfClass } from '../../helpers/content-classes.ts'

/**
 * Decision 042: the estimate is at least the exact o200k count (what OpenAI's models count) for every
 * content class measured in bench/estimator-error.ts: English prose, code, JSON, base64 alone, base64
 * thumbnails in JSON records, a base64 blob in prose, and Chinese, on real text (test/helpers/content-classes.ts)
 * cut at random places and lengths. Up to EXACT_MAX_CHARS it is the exact count; past it, sampled with its margin.
 */
const longLength = fc.integer({ min: EXACT_MAX_CHARS + 1, max: 40_000 })

describe('the estimate covers the exact o200k count, per content class', () => {
  for (const kind of CONTENT_CLASSES) {
    it(`${kind}: at least the exact count past ${EXACT_MAX_CHARS} units, and not far above it`, () => {
      fc.assert(
        fc.property(longLength, fc.nat(), (length, seed) => {
          const text = textOfClass(kind, length, seededRandom(seed + 1))
          const exact = exactO200k(text)
          const estimate = estimateTokens(text)
          expect(estimate, `${kind}, ${text.length} units: estimate ${estimate}, exact ${exact}`).toBeGreaterThanOrEqual(exact)
          // The margin is a margin, not a guess: at most about a third above (measured highest: 1.29).
          expect(estimate).toBeLessThanOrEqual(Math.ceil(exact * 1.35))
        }),
        { numRuns: 12 },
      )
    })
  }

  it('up to EXACT_MAX_CHARS units it is the exact count, for every class', () => {
    fc.assert(
      fc.property(fc.constantFrom(...CONTENT_CLASSES), fc.integer({ min: 1, max: EXACT_MAX_CHARS }), fc.nat(), (kind, length, seed) => {
        const text = textOfClass(kind, length, seededRandom(seed + 1)).slice(0, EXACT_MAX_CHARS)
        expect(estimateTokens(text)).toBe(exactO200k(text))
      }),
      { numRuns: 30 },
    )
  })

  it("the issue's case: one 3,000-character base64 blob anywhere in 60,000 characters of prose is never under the exact count", () => {
    fc.assert(
      fc.property(fc.nat(), (seed) => {
        const text = base64InProse(60_000, 3_000, seededRandom(seed + 1))
        expect(estimateTokens(text)).toBeGreaterThanOrEqual(exactO200k(text))
      }),
      { numRuns: 25 },
    )
  })
})
