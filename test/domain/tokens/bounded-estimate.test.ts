import fc from 'fast-check'
import { describe, expect, it, vi } from 'vitest'
import { truncateText } from '../../../src/domain/context/truncate-text.ts'
import {
  countExactly,
  estimateTokens,
  EXACT_MAX_CHARS,
  SAMPLE_ALIGN_CHARS,
  SAMPLE_CHARS,
  SAMPLE_COUNT,
  sampleWindows,
} from '../../../src/domain/tokens/estimate-tokens.ts'
import { bpeWorkOf } from '../../helpers/bpe-work.ts'

// What the estimator hands gpt-tokenizer's BPE is counted (test/helpers/bpe-work.ts): its work, without a clock.
vi.mock('gpt-tokenizer', async (importOriginal) => (await import('../../helpers/bpe-work.ts')).countingTokenizer(await importOriginal()))

/**
 * The bounds of decision 016: up to EXACT_MAX_CHARS the estimate is the exact count; past it, an
 * estimate from SAMPLE_COUNT windows, deterministic, tokenizing a bounded number of characters
 * whatever the length, and close to the exact count.
 *
 * Tolerance, on texts that look alike from one window to the next (text drawn from one alphabet or
 * word list, a repeated unit, as in this file): |estimate − exact| ≤ 3% of the exact count, plus one
 * token per 128 characters for texts of very few tokens (a run of spaces is one token a window,
 * whatever its length). A text whose kinds differ between the windows (a block of CJK in one gap,
 * spaces elsewhere) can be further off: the estimate is of the sampled windows.
 *
 * Margin (decision 042): past EXACT_MAX_CHARS the sampled stretch is raised by SAMPLED_MARGIN_SHARE
 * plus the windows' disagreement, so the estimate is at or above the exact count and at most about a
 * quarter above it (test/domain/tokens/estimate-classes.property.test.ts holds the lower bound on real
 * text of every class).
 */
const withinTolerance = (estimate: number, exact: number, length: number) => Math.abs(estimate - exact) <= 0.03 * exact + length / 128
const withinMargin = (estimate: number, exact: number, length: number) => estimate >= exact - length / 128 && estimate <= 1.25 * exact + length / 128

/** A deterministic string of `length` units drawn from `alphabet`. */
function seeded(alphabet: readonly string[], length: number, seed: number): string {
  let state = seed
  const out: string[] = []
  let units = 0
  while (units < length) {
    state = (Math.imul(state, 1103515245) + 12345) & 0x7fffffff
    const piece = alphabet[(state >> 4) % alphabet.length]!
    out.push(piece)
    units += piece.length
  }
  return out.join('')
}

const ALPHABETS = {
  'lowercase letters': [...'abcdefghijklmnopqrstuvwxyz'],
  digits: [...'0123456789'],
  'base64 alphabet': [...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'],
  CJK: Array.from({ length: 2000 }, (_, i) => String.fromCharCode(0x4e00 + i * 9)),
  emoji: [...'😀😁😂🤣😃😄😅😆😉😊😋😎😍😘🥰😗🐶🐱🐭🐹🐰🦊🐻🐼'],
  words: ['the ', 'quick ', 'brown ', 'fox ', 'jumps ', 'over ', 'lazy ', 'dog. ', 'Then ', 'again, ', '42 ', 'and\n', 'über ', 'naïve '],
  'JSON fields': ['{"id":', '17,', '"name":"', 'x', '","ok":true}', ',', '[', ']', '"tags":["a","b"],', '3.14'],
  punctuation: [...'!@#$%^&*()-=+[]{};:,.<>?'],
}
const alphabet = fc.constantFrom(...(Object.keys(ALPHABETS) as (keyof typeof ALPHABETS)[]))
/** Longer than EXACT_MAX_CHARS, short enough to count exactly in a test. */
const longLength = fc.integer({ min: EXACT_MAX_CHARS + 1, max: 6 * EXACT_MAX_CHARS })
const longText = fc.tuple(alphabet, longLength, fc.nat()).map(([kind, length, seed]) => seeded(ALPHABETS[kind], length, seed))

describe('below EXACT_MAX_CHARS', () => {
  it('the estimate is the exact count', () => {
    fc.assert(
      fc.property(fc.tuple(alphabet, fc.integer({ min: 0, max: EXACT_MAX_CHARS }), fc.nat()), ([kind, length, seed]) => {
        const text = seeded(ALPHABETS[kind], length, seed).slice(0, EXACT_MAX_CHARS)
        expect(estimateTokens(text)).toBe(countExactly(text))
      }),
      { numRuns: 60 },
    )
  })
})

describe('past EXACT_MAX_CHARS', () => {
  it('the windows lie in the text, in order, the first at its start and the last at its end, each of bounded length', () => {
    fc.assert(
      fc.property(fc.oneof(longText, fc.string({ unit: 'binary', minLength: EXACT_MAX_CHARS + 1, maxLength: 3 * EXACT_MAX_CHARS })), (text) => {
        const windows = sampleWindows(text)
        expect(windows).toHaveLength(SAMPLE_COUNT)
        expect(windows[0]![0]).toBe(0)
        expect(windows.at(-1)![1]).toBe(text.length)
        let sampled = 0
        for (const [i, [start, end]] of windows.entries()) {
          expect(start).toBeLessThan(end)
          if (i > 0) expect(start).toBeGreaterThanOrEqual(windows[i - 1]![0])
          // SAMPLE_CHARS, moved by at most SAMPLE_ALIGN_CHARS units at each edge and one for a surrogate pair.
          expect(end - start).toBeLessThanOrEqual(SAMPLE_CHARS + 2 * SAMPLE_ALIGN_CHARS + 2)
          sampled += end - start
        }
        // Whatever the length, an estimate tokenizes at most this many units: the work is bounded.
        expect(sampled).toBeLessThanOrEqual(SAMPLE_COUNT * (SAMPLE_CHARS + 2 * SAMPLE_ALIGN_CHARS + 2))
      }),
      { numRuns: 100 },
    )
  })

  it('the estimate is deterministic: the same text, however it was built, gets the same number', () => {
    // Past 2 M units nothing is remembered (the estimator's memo), so each call estimates afresh.
    fc.assert(
      fc.property(fc.tuple(alphabet, fc.nat()), ([kind, seed]) => {
        const text = seeded(ALPHABETS[kind], 2_200_000, seed)
        const copy = text.split('').join('')
        expect(estimateTokens(copy)).toBe(estimateTokens(text))
      }),
      { numRuns: 5 },
    )
    fc.assert(
      fc.property(longText, (text) => {
        expect(estimateTokens([...text].join(''))).toBe(estimateTokens(text))
      }),
      { numRuns: 20 },
    )
  })

  it(`the estimate is at or above the exact count, within its margin (at most a quarter above, + 1 token per 128 units)`, () => {
    fc.assert(
      fc.property(longText, (text) => {
        const estimate = estimateTokens(text)
        const exact = countExactly(text)
        expect(withinMargin(estimate, exact, text.length), `estimate ${estimate}, exact ${exact}, ${text.length} units`).toBe(true)
      }),
      { numRuns: 60 },
    )
  })

  it('repeating a unit is estimated within the margin too (prose, code, spaces, one letter)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 200 }), fc.integer({ min: EXACT_MAX_CHARS + 1, max: 4 * EXACT_MAX_CHARS }), (unit, length) => {
        const text = unit.repeat(Math.ceil(length / unit.length))
        const estimate = estimateTokens(text)
        const exact = countExactly(text)
        expect(withinMargin(estimate, exact, text.length), `estimate ${estimate}, exact ${exact}, unit ${JSON.stringify(unit)}`).toBe(true)
      }),
      { numRuns: 60 },
    )
  })

  it('is monotone within tolerance: a text twice as long is estimated about twice as high', () => {
    fc.assert(
      fc.property(longText, (text) => {
        const once = estimateTokens(text)
        const twice = estimateTokens(text + text)
        expect(Math.abs(twice - 2 * once)).toBeLessThanOrEqual(0.03 * 2 * once + (2 * text.length) / 128)
        expect(twice).toBeGreaterThan(once)
      }),
      { numRuns: 30 },
    )
  })

  it('crossing EXACT_MAX_CHARS by one unit changes the estimate by no more than the margin', () => {
    fc.assert(
      fc.property(fc.tuple(alphabet, fc.nat()), ([kind, seed]) => {
        const text = seeded(ALPHABETS[kind], EXACT_MAX_CHARS + 8, seed)
        const below = text.slice(0, EXACT_MAX_CHARS)
        const above = text.slice(0, EXACT_MAX_CHARS + 1)
        expect(estimateTokens(above)).toBeGreaterThanOrEqual(estimateTokens(below) - EXACT_MAX_CHARS / 128)
        expect(estimateTokens(above)).toBeLessThanOrEqual(1.25 * estimateTokens(below) + EXACT_MAX_CHARS / 128)
      }),
      { numRuns: 30 },
    )
  })
})

describe('the work is linear and bounded', () => {
  /** The most UTF-16 units one estimate past EXACT_MAX_CHARS hands the BPE: its windows, whatever the length. */
  const SAMPLED_UNITS = SAMPLE_COUNT * (SAMPLE_CHARS + 2 * SAMPLE_ALIGN_CHARS + 2)

  it('1 and 8 MiB of random letters are estimated from a bounded count scaled by length: the BPE is handed at most SAMPLED_UNITS units for either, and 8 MiB is 8 times the tokens', () => {
    // Exact BPE took about 4 s a MiB of these; what it costs now is timed in bench/token-estimation.ts.
    const [one, eight] = [1, 8].map((mib) => {
      const text = seeded(ALPHABETS['lowercase letters'], mib * 1024 * 1024, mib * 1024 * 1024)
      let tokens = 0
      // Over the bound, the estimate throws at once (bpeWorkOf), rather than tokenizing megabytes.
      const work = bpeWorkOf(() => (tokens = estimateTokens(text)), { maxUnits: SAMPLED_UNITS })
      return { tokens, work }
    })
    for (const { work } of [one!, eight!]) {
      expect(work.calls).toBeGreaterThan(0)
      expect(work.units).toBeLessThanOrEqual(SAMPLED_UNITS)
    }
    // Eight times the text, not one unit more of BPE: the rest of the work is the native length of the middle.
    expect(eight!.work.units).toBe(one!.work.units)
    expect(eight!.tokens / one!.tokens).toBeGreaterThan(7.5)
    expect(eight!.tokens / one!.tokens).toBeLessThan(8.5)
  })
})

describe('cuts of a long text', () => {
  const long = seeded(ALPHABETS.words, 200_000, 5)

  it('keep a head or tail whose estimate is the tokens asked for, within a token or two, in bounded work', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 600 }), fc.constantFrom('head' as const, 'tail' as const), (to, keep) => {
        const cut = truncateText(long, { mode: 'always', to, keep }, false)
        expect(cut.cut).toBe(true)
        expect(Math.abs(estimateTokens(cut.text) - to)).toBeLessThanOrEqual(2)
        if (keep === 'head') expect(long.startsWith(cut.text)).toBe(true)
        else expect(long.endsWith(cut.text)).toBe(true)
      }),
      { numRuns: 40 },
    )
  })

  it('keep a head longer than an exact window by length, its estimate within tolerance of what was asked', () => {
    for (const to of [5_000, 20_000]) {
      const cut = truncateText(long, { mode: 'always', to, keep: 'head_and_tail' }, true)
      const [head, tail] = cut.text.split(/ ?\[… \d+ tokens truncated …\] ?/)
      expect(long.startsWith(head!)).toBe(true)
      expect(long.endsWith(tail!)).toBe(true)
      const kept = estimateTokens(head!) + estimateTokens(tail!)
      expect(withinTolerance(kept, to, head!.length + tail!.length)).toBe(true)
      expect(cut.text).toContain(`[… ${estimateTokens(long) - to} tokens truncated …]`)
    }
  })
})
