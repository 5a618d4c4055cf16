/**
 * The token estimator's work, counted rather than timed (issue 36: no test asserts wall-clock time).
 * What costs in an estimate is the BPE of gpt-tokenizer: linear in what it is handed, but up to about
 * 5 µs a unit, and quadratic in the length of one unbroken pre-tokenizer piece. So a test counts what
 * the BPE is handed: calls, UTF-16 units in all, and the longest string in one call.
 *
 * A test file swaps the module for counting wrappers of its own functions:
 *
 *   vi.mock('gpt-tokenizer', async (importOriginal) => (await import('../../helpers/bpe-work.ts')).countingTokenizer(await importOriginal()))
 *
 * and measures a call with `bpeWorkOf`. With limits, a call over them throws at once, before the BPE
 * runs on it, so broken bounds fail the test in milliseconds instead of running for minutes.
 */

export type BpeWork = { calls: number; units: number; longest: number }
export type BpeLimits = { maxUnits?: number; maxLongest?: number }

const tally: BpeWork = { calls: 0, units: 0, longest: 0 }
let limits: BpeLimits | null = null

function note(text: string): void {
  if (limits?.maxLongest !== undefined && text.length > limits.maxLongest) {
    throw new Error(`the BPE was handed ${text.length} units at once, over the bound of ${limits.maxLongest}`)
  }
  tally.calls++
  tally.units += text.length
  tally.longest = Math.max(tally.longest, text.length)
  if (limits?.maxUnits !== undefined && tally.units > limits.maxUnits) {
    throw new Error(`the BPE was handed ${tally.units} units in all, over the bound of ${limits.maxUnits}`)
  }
}

type Tokenizer = { countTokens: (text: string, ...rest: never[]) => number; encode: (text: string, ...rest: never[]) => number[] }

/** gpt-tokenizer's module with its `countTokens` and `encode` counted (everything else as it is). */
export function countingTokenizer<T extends Tokenizer>(real: T): T {
  return {
    ...real,
    countTokens: (text: string, ...rest: never[]) => {
      note(text)
      return real.countTokens(text, ...rest)
    },
    encode: (text: string, ...rest: never[]) => {
      note(text)
      return real.encode(text, ...rest)
    },
  }
}

/** What the BPE was handed while `run` ran; with `bounds`, `run` throws as soon as it hands the BPE more. */
export function bpeWorkOf(run: () => void, bounds: BpeLimits = {}): BpeWork {
  Object.assign(tally, { calls: 0, units: 0, longest: 0 })
  limits = bounds
  try {
    run()
  } finally {
    limits = null
  }
  return { ...tally }
}
