import fc from 'fast-check'
import { decode, encode } from 'gpt-tokenizer'
import { describe, expect, it, vi } from 'vitest'
import { truncateText } from '../../../src/domain/context/truncate-text.ts'
import {
  countExactly,
  encodeBounded,
  estimateTokens,
  EXACT_MAX_CHARS,
  LONG_PIECE_CHARS,
  PIECE_CHUNK_CHARS,
  SAMPLE_ALIGN_CHARS,
  SAMPLE_CHARS,
  SAMPLE_COUNT,
} from '../../../src/domain/tokens/estimate-tokens.ts'
import { bpeWorkOf } from '../../helpers/bpe-work.ts'

// What the estimator hands gpt-tokenizer's BPE is counted (test/helpers/bpe-work.ts): its work, without a clock.
vi.mock('gpt-tokenizer', async (importOriginal) => (await import('../../helpers/bpe-work.ts')).countingTokenizer(await importOriginal()))

const NO_SPECIAL_TOKENS = { disallowedSpecial: new Set<string>() }
const plain = (text: string) => encode(text, NO_SPECIAL_TOKENS)

/** A deterministic string of `length` characters drawn from `alphabet` (a linear congruential generator). */
function seeded(alphabet: string, length: number, seed: number): string {
  let state = seed
  let out = ''
  for (let i = 0; i < length; i++) {
    state = (Math.imul(state, 1103515245) + 12345) & 0x7fffffff
    out += alphabet[state % alphabet.length]
  }
  return out
}

/** The chunks of `text` (a single unbroken run of ASCII) as the estimator cuts a long piece. */
const chunksOf = (text: string) => {
  const chunks: string[] = []
  for (let at = 0; at < text.length; at += PIECE_CHUNK_CHARS) chunks.push(text.slice(at, at + PIECE_CHUNK_CHARS))
  return chunks
}

const prose = 'The quick brown fox jumps over the lazy dog. It\'s 3.14159 o\'clock, and we\'ll see.\n\n'
const json = JSON.stringify({ id: 'chat_01J9ZK', parts: [{ type: 'text', text: 'hello' }, { type: 'tool_use', input: { q: 'x', n: [1, 2, 3] } }], meta: { nested: { deeper: true } } })
const code = 'export function add(a: number, b: number): number {\n\treturn a + b // sum\n}\n\nconst xs = [1, 2, 3].map((x) => x * 2)\n'
const cjk = '日本語のテキストと中文文本，还有한국어 텍스트。'
const emoji = 'Family: 👨‍👩‍👧‍👦, flags 🇫🇷🇯🇵, skin tones 👍🏽 and a lone 😀. '

describe('estimateTokens and encodeBounded on ordinary text', () => {
  const texts = {
    words: prose,
    'long prose': prose.repeat(200),
    json,
    'long minified JSON': JSON.stringify(Array.from({ length: 200 }, (_, i) => ({ i, name: `item${i}`, ok: i % 2 === 0 }))),
    code,
    'long code': code.repeat(100),
    cjk,
    'long CJK without spaces': cjk.replaceAll(' ', '').repeat(100),
    emoji,
    'long emoji': emoji.repeat(100),
    'special-token text': 'before <|endoftext|> after <|im_start|>',
    'a line of 300 dashes': `${'-'.repeat(300)}\n${prose}`,
  }
  for (const [name, text] of Object.entries(texts)) {
    it(`are exactly encode(text) for ${name}`, () => {
      expect(encodeBounded(text)).toEqual(plain(text))
      expect(countExactly(text)).toBe(plain(text).length)
      // Past EXACT_MAX_CHARS the estimate is sampled with its margin (test/domain/tokens/bounded-estimate.test.ts bounds it).
      if (text.length <= EXACT_MAX_CHARS) expect(estimateTokens(text)).toBe(plain(text).length)
      else {
        expect(estimateTokens(text)).toBeGreaterThanOrEqual(plain(text).length)
        expect(estimateTokens(text)).toBeLessThanOrEqual(plain(text).length * 1.25)
      }
    })
  }
})

describe('encodeBounded on unbroken runs', () => {
  const inputs = {
    "120,000 'x'": 'x'.repeat(120_000),
    '100,000 random lowercase letters': seeded('abcdefghijklmnopqrstuvwxyz', 100_000, 7),
    '100,000 DNA bases': seeded('ACGT', 100_000, 11),
    '900,000 unbroken characters': 'y'.repeat(900_000),
  }
  for (const [name, text] of Object.entries(inputs)) {
    it(`encodes ${name} chunk by chunk, each chunk at most ${PIECE_CHUNK_CHARS} characters`, () => {
      // The BPE never sees more than one chunk at once: the tokens are those of the chunks, one after the other.
      const tokens = encodeBounded(text)
      expect(tokens).toEqual(chunksOf(text).flatMap(plain))
      expect(decode(tokens)).toBe(text)
      expect(countExactly(text)).toBe(tokens.length)
      // The estimate is of these tokens, with the sampled margin (decision 042).
      expect(estimateTokens(text)).toBeGreaterThanOrEqual(tokens.length)
      expect(estimateTokens(text)).toBeLessThanOrEqual(tokens.length * 1.25)
    })
  }

  it('estimates a run close to its real count', () => {
    const run = 'x'.repeat(4 * PIECE_CHUNK_CHARS)
    const dna = seeded('ACGT', 8 * PIECE_CHUNK_CHARS, 3)
    expect(estimateTokens(run)).toBe(plain(run).length)
    // At most about one token more a chunk, as BPE cannot merge across a chunk's edge.
    expect(estimateTokens(dna)).toBeGreaterThanOrEqual(plain(dna).length - 8)
    expect(estimateTokens(dna)).toBeLessThanOrEqual(plain(dna).length + 8)
  })

  it('estimates 900,000 unbroken characters in bounded work: the BPE is handed a few windows, none longer than LONG_PIECE_CHARS (once took about 11 minutes)', () => {
    // The BPE is quadratic in one unbroken piece and about linear in the rest: bounded here are both
    // what it is handed in all (the sampled windows) and the longest run in one call. Over either
    // bound the estimate throws at once (bpeWorkOf). The time of an unbroken 1 MiB is in bench/token-estimation.ts.
    const text = 'z'.repeat(899_999) + 'q'
    let tokens = 0
    const sampledUnits = SAMPLE_COUNT * (SAMPLE_CHARS + 2 * SAMPLE_ALIGN_CHARS + 2)
    const work = bpeWorkOf(() => (tokens = estimateTokens(text)), { maxUnits: sampledUnits, maxLongest: LONG_PIECE_CHARS })
    expect(work.calls).toBeGreaterThan(0)
    expect(work.units).toBeLessThanOrEqual(sampledUnits)
    expect(work.longest).toBeLessThanOrEqual(LONG_PIECE_CHARS)
    expect(tokens).toBeGreaterThan(0)
    expect(tokens).toBeLessThanOrEqual(text.length)
  })

  it('leaves the text around a long run as encode makes it', () => {
    const before = `${prose}a\t\t`
    const after = ` ${prose}`
    const text = `${before}${'!'.repeat(1_000)}${after}`
    const tokens = encodeBounded(text)
    expect(decode(tokens)).toBe(text)
    // The run's chunks stay inside the run: the text before and after it keeps the tokens encode gives it
    // in context (here a tab and a tab, not the tab pair encode(before) alone would give).
    const whole = plain(text)
    const head = whole.findIndex((_, i) => decode(whole.slice(0, i)) === before)
    const tail = whole.findIndex((_, i) => decode(whole.slice(i)) === after)
    expect(head).toBeGreaterThan(0)
    expect(tail).toBeGreaterThan(head)
    expect(tokens.slice(0, head)).toEqual(whole.slice(0, head))
    expect(tokens.slice(tokens.length - (whole.length - tail))).toEqual(whole.slice(tail))
    expect(plain(before)).not.toEqual(whole.slice(0, head))
  })

  it('cuts with the same tokens it counts', () => {
    const text = 'x'.repeat(120_000)
    const cut = truncateText(text, { mode: 'always', to: 100, keep: 'head' }, false)
    expect(cut).toEqual({ text: 'x'.repeat(800), cut: true })
  })
})

describe('decode(encodeBounded(text))', () => {
  const anyText = fc.string({ unit: 'binary', maxLength: 300 })
  const run = fc
    .tuple(fc.constantFrom('x', 'A', 'é', '漢', '😀', '!', ' ', '\t', '\n', '\n/', 'ACGT', 'aé'), fc.integer({ min: 1, max: 3 * LONG_PIECE_CHARS }))
    .map(([unit, times]) => unit.repeat(times))
  const withRuns = fc.array(fc.oneof(anyText, run), { maxLength: 6 }).map((parts) => parts.join(''))

  it('gives back any text', () => {
    fc.assert(
      fc.property(fc.oneof(anyText, withRuns), (text) => {
        const tokens = encodeBounded(text)
        expect(decode(tokens)).toBe(text)
        expect(countExactly(text)).toBe(tokens.length)
        if (text.length <= EXACT_MAX_CHARS) expect(estimateTokens(text)).toBe(tokens.length)
      }),
      { numRuns: 500 },
    )
  })

  it('is encode(text) for text without a long run', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 2_000 }), (text) => {
        expect(encodeBounded(text)).toEqual(plain(text))
      }),
      { numRuns: 200 },
    )
  })
})
