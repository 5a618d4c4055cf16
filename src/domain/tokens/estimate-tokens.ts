import { countTokens, encode } from 'gpt-tokenizer'
import { O200K_TOKEN_SPLIT_REGEX } from 'gpt-tokenizer/esm/encodingParams/constants'
import { isHighSurrogate, isLowSurrogate } from '../utf16.ts'

/** TokenEstimate is a saturating int32 (docs/guide/chats-and-ledger.md). */
export const TOKEN_ESTIMATE_MAX = 2_147_483_647

/** UTF-8 bytes (a lone surrogate as the 3 bytes of U+FFFD), natively: about 0.3 ms a MiB. */
const utf8Length = (text: string) => Buffer.byteLength(text, 'utf8')

const NO_SPECIAL_TOKENS = { disallowedSpecial: new Set<string>() }

/**
 * The project's one token estimator (docs/guide/context.md): o200k_base BPE counts, used alike for
 * budgets, `estimated_tokens` and the sandbox's usage. Special-token text counts as plain text.
 *
 * Up to `EXACT_MAX_CHARS` UTF-16 units this is the exact count of `encodeBounded(text)`; past it,
 * an estimate from `SAMPLE_COUNT` evenly spaced windows counted exactly, scaled by length, so one
 * call never blocks the event loop for more than a few tens of milliseconds (decision 016).
 */
export function estimateTokens(text: string): number {
  if (text.length === 0) return 0
  if (text.length < MEMO_MIN_LENGTH) {
    // Short texts are mostly words and deltas, which repeat: a plain bounded map, emptied when full.
    let known = shortMemo.get(text)
    if (known === undefined) {
      if (shortMemo.size >= SHORT_MEMO_MAX_ENTRIES) shortMemo.clear()
      known = count(text)
      shortMemo.set(text, known)
    }
    return known
  }
  // Every turn re-estimates the same history: remember long texts (bounded, least recently used out).
  const known = memo.get(text)
  if (known !== undefined) {
    memo.delete(text)
    memo.set(text, known)
    return known
  }
  const counted = count(text)
  if (text.length > MEMO_MAX_CHARS / 8) return counted
  memo.set(text, counted)
  memoChars += text.length
  while (memo.size > MEMO_MAX_ENTRIES || memoChars > MEMO_MAX_CHARS) {
    const oldest = memo.keys().next().value!
    memo.delete(oldest)
    memoChars -= oldest.length
  }
  return counted
}

// Shorter texts (single words, deltas) go to the plain short memo; from this length on, every history
// part (a reply of a few words included) goes to the least-recently-used one. Its entry bound must hold
// the parts of the chats in use, or a least-recently-used memo read in the same order never hits.
const MEMO_MIN_LENGTH = 32
const MEMO_MAX_ENTRIES = 65_536
const MEMO_MAX_CHARS = 16 * 1024 * 1024
const memo = new Map<string, number>()
const SHORT_MEMO_MAX_ENTRIES = 65_536
const shortMemo = new Map<string, number>()
let memoChars = 0
const count = (text: string) => Math.min(TOKEN_ESTIMATE_MAX, text.length <= EXACT_MAX_CHARS ? countExactly(text) : countLong(text))

/*
 * Past EXACT_MAX_CHARS (decision 042), base64 runs, which cost about 0.69 o200k tokens a character where
 * prose costs 0.24 and which a sample misses when they fall between its windows, are taken out and
 * counted by their length at the measured worst rate; the rest is sampled, and the sampled stretch is
 * raised by a margin (SAMPLED_MARGIN_SHARE, and SAMPLED_MARGIN_SE standard errors of the windows'
 * rates), sized on the classes measured (bench/estimator-error.ts: prose, code, JSON, base64, CJK), so
 * the estimate is at least the exact o200k count on each. CJK needs no class of its own: its windows
 * differ from the others' in tokens a byte, which the margin's second term sees. Texts up to
 * EXACT_MAX_CHARS stay exact: they need no margin.
 */

/** A run of base64 characters at least this long (with upper and lower case and a digit) is counted by length. */
export const BASE64_MIN_RUN = 64
/**
 * o200k tokens of `runs` base64 runs of `chars` characters in all, of random bytes (a file's base64 is
 * near random), in context: 0.69 a character (the mean measured rate is 0.683), plus a spread of
 * 1.6 √chars, which covers the worst of 200 runs of each length from 64 to 10,000 characters (0.78 a
 * character at 64, 0.692 at 10,000) and, summed over many runs, grows only as their deviations do,
 * plus a token a run for its edges. Low-entropy base64 (`AAAA…`) costs less: then this is an
 * overestimate, the safe side.
 */
export const base64Tokens = (chars: number, runs: number): number => (chars === 0 ? 0 : Math.ceil(0.69 * chars + 1.6 * Math.sqrt(chars)) + runs)
/**
 * A sampled estimate is raised by this share of itself, whatever its windows say: a stretch unlike
 * every window (a dense record between two windows) is invisible to their disagreement. With
 * SAMPLED_MARGIN_SE, the least that kept every text measured at or above its exact count (the lowest
 * measured without either: 0.923 on JSON, 0.939 on prose).
 */
export const SAMPLED_MARGIN_SHARE = 0.08
/** …and by this many standard errors of its windows' mean rate (tokens a UTF-8 byte), over the stretch it scales. */
export const SAMPLED_MARGIN_SE = 3

/** The estimate of a text longer than EXACT_MAX_CHARS: its base64 runs by length, the rest sampled with its margin. */
function countLong(text: string): number {
  const parts = withoutBase64(text)
  if (parts === null) return countBySamples(text)
  const rest = parts.rest.length <= EXACT_MAX_CHARS ? countExactly(parts.rest) : countBySamples(parts.rest)
  return saturatingAdd(rest, base64Tokens(parts.base64Chars, parts.base64Runs))
}

const UPPER = 1
const LOWER = 2
const DIGIT = 4
/** 0 for a character outside the base64 alphabet; else which of upper, lower, digit it is (8 for `+`, `/`, `=`). */
const base64Kind = (unit: number) =>
  unit >= 0x41 && unit <= 0x5a ? UPPER : unit >= 0x61 && unit <= 0x7a ? LOWER : unit >= 0x30 && unit <= 0x39 ? DIGIT : unit === 0x2b || unit === 0x2f || unit === 0x3d ? 8 : 0

/**
 * `text` without its base64 runs (at least BASE64_MIN_RUN characters of the alphabet, with upper case,
 * lower case and a digit, so a long word or a row of digits is not one), found in one pass; null when
 * it has none, so the common case builds no string.
 */
function withoutBase64(text: string): { rest: string; base64Chars: number; base64Runs: number } | null {
  const rest: string[] = []
  let base64Chars = 0
  let base64Runs = 0
  let restFrom = 0
  let runStart = -1
  let runKinds = 0
  const close = (end: number) => {
    if (runStart !== -1 && end - runStart >= BASE64_MIN_RUN && (runKinds & 7) === 7) {
      if (runStart > restFrom) rest.push(text.slice(restFrom, runStart))
      base64Chars += end - runStart
      base64Runs++
      restFrom = end
    }
    runStart = -1
    runKinds = 0
  }
  for (let i = 0; i < text.length; i++) {
    const kind = base64Kind(text.charCodeAt(i))
    if (kind === 0) close(i)
    else {
      if (runStart === -1) runStart = i
      runKinds |= kind
    }
  }
  close(text.length)
  if (base64Runs === 0) return null
  if (restFrom < text.length) rest.push(text.slice(restFrom))
  return { rest: rest.join(''), base64Chars, base64Runs }
}

/**
 * The length of `encodeBounded(text)`, in work linear in `text`'s length but at up to about 5 µs a
 * character (random letters, CJK): `estimateTokens` counts this way only up to `EXACT_MAX_CHARS`.
 */
export function countExactly(text: string): number {
  let tokens = 0
  for (const segment of boundedSegments(text)) tokens += countTokens(segment, NO_SPECIAL_TOKENS)
  return tokens
}

/**
 * Texts up to this many UTF-16 units are counted exactly (`countExactly`); longer ones are estimated
 * from samples. gpt-tokenizer costs from about 0.05 µs a character (prose whose words it has seen)
 * to about 5 µs (random letters, CJK, emoji: every piece new), so this bounds one exact count at
 * a few tens of milliseconds whatever the text (docs/decisions/016-bounded-token-estimation.md).
 */
export const EXACT_MAX_CHARS = 4_096
/** A longer text is estimated from this many windows, evenly spaced from its start to its end… */
export const SAMPLE_COUNT = 16
/** …of about this many UTF-16 units each: a sampled estimate tokenizes at most SAMPLE_COUNT × (SAMPLE_CHARS + 2 × SAMPLE_ALIGN_CHARS + 2) units. */
export const SAMPLE_CHARS = 256
/** A window's edges move forward to the next whitespace within this many units, so windows start and end on word boundaries. */
export const SAMPLE_ALIGN_CHARS = 32

/**
 * The windows `[start, end)` a text longer than `EXACT_MAX_CHARS` is estimated from: `SAMPLE_COUNT`
 * windows, the first at the start, the last at the end, the others evenly spaced between, each
 * moved onto whitespace where there is some near, never splitting a surrogate pair. Depends only on
 * the text, so the estimate is deterministic.
 */
export function sampleWindows(text: string): [number, number][] {
  const windows: [number, number][] = []
  const last = text.length - SAMPLE_CHARS
  for (let i = 0; i < SAMPLE_COUNT; i++) {
    const nominal = Math.round((i * last) / (SAMPLE_COUNT - 1))
    let start = i === 0 ? 0 : alignForward(text, nominal)
    if (start > 0 && isLowSurrogate(text.charCodeAt(start))) start++
    let end = i === SAMPLE_COUNT - 1 ? text.length : alignForward(text, Math.min(text.length, start + SAMPLE_CHARS))
    if (end < text.length && isLowSurrogate(text.charCodeAt(end))) end++
    windows.push([start, end])
  }
  return windows
}

const alignForward = (text: string, at: number) => {
  const limit = Math.min(text.length, at + SAMPLE_ALIGN_CHARS)
  for (let i = at; i < limit; i++) if (isWhitespace(text.charCodeAt(i))) return i
  return at
}

/**
 * A long text's estimate: its first and last windows counted exactly, as they are its start and end;
 * the text between them from the other windows, counted exactly and scaled by the UTF-8 length of
 * that stretch over theirs. Scaling by UTF-8 bytes rather than characters keeps a text mixing scripts
 * (ASCII JSON with CJK strings) close, as tokens a byte vary less than tokens a character; keeping the
 * ends out of the scaling keeps a text whose start differs from the rest (a first word without its
 * space, a heading) exact where it can be: `word${' word'.repeat(n)}` is n + 1 tokens, as counted.
 * Linear in the length (one native length of the middle) plus a bounded exact count.
 */
function countBySamples(text: string): number {
  const windows = sampleWindows(text)
  const headEnd = windows[0]![1]
  const tailStart = windows[windows.length - 1]![0]
  const ends = countExactly(text.slice(0, headEnd)) + countExactly(text.slice(tailStart))
  if (tailStart <= headEnd) return ends
  let sampleTokens = 0
  let sampleBytes = 0
  const rates: number[] = []
  for (const [start, end] of windows.slice(1, -1)) {
    const window = text.slice(start, end)
    const tokens = countExactly(window)
    const bytes = utf8Length(window)
    sampleTokens += tokens
    sampleBytes += bytes
    rates.push(tokens / bytes)
  }
  const middleBytes = utf8Length(text.slice(headEnd, tailStart))
  const rate = sampleTokens / sampleBytes
  // The margin (decision 042): SAMPLED_MARGIN_SE standard errors of the windows' mean rate, over the
  // stretch. Windows that agree (a repeated unit, one alphabet) leave almost none; windows that differ
  // (prose with lists and code, JSON of varied records) say the stretch between them may differ too.
  let squares = 0
  for (const r of rates) squares += (r - rate) ** 2
  const standardError = Math.sqrt(squares / (rates.length - 1) / rates.length)
  return Math.max(1, ends + Math.ceil(middleBytes * (rate * (1 + SAMPLED_MARGIN_SHARE) + SAMPLED_MARGIN_SE * standardError)))
}

/**
 * A pre-tokenizer piece longer than this is cut into chunks before BPE. gpt-tokenizer's BPE merge is
 * quadratic in the length of one piece (its `isWithinTokenLimit` and generators still merge a whole
 * piece at once, and it has no chunked API), so one unbroken run (`"xxxx…"`, DNA, 100k lowercase
 * letters, 100k spaces) of n characters costs n² without this: 11 s for 120,000 characters.
 */
export const LONG_PIECE_CHARS = 400
/** The length, in UTF-16 units, of the chunks a long piece is cut into (one less where a pair would split). */
export const PIECE_CHUNK_CHARS = 256

/**
 * The estimator's tokens for `text` (o200k_base, special-token text as plain text), in work linear in
 * its length: `estimateTokens` counts these tokens and cuts keep a prefix or suffix of them, so counts
 * and cuts agree. `decode` of them gives back `text` exactly (for well-formed UTF-16).
 *
 * For text whose pre-tokenizer pieces are at most `LONG_PIECE_CHARS` long (prose, code, JSON, CJK,
 * emoji: nearly everything), this is exactly `encode(text)`. A longer piece, which only an unbroken
 * run of letters, of punctuation or of whitespace makes, is encoded chunk by chunk, so for such runs
 * the estimate is that of the chunked text: close to the real count and normally a little above it
 * (at most about one token per chunk more, as BPE cannot merge across a chunk's edge).
 *
 * Linear but not cheap (up to about 5 µs a unit): callers bound what they pass. `estimateTokens`
 * counts these tokens only up to `EXACT_MAX_CHARS`, and `truncateText` encodes at most a window of
 * that many units at either end of a longer text.
 */
export function encodeBounded(text: string): number[] {
  const tokens: number[] = []
  for (const segment of boundedSegments(text)) for (const token of encode(segment, NO_SPECIAL_TOKENS)) tokens.push(token)
  return tokens
}

/**
 * `text` as consecutive segments to encode one by one: the whole text when it has no long piece;
 * otherwise the text between long pieces, and each long piece in chunks.
 *
 * A segment between long pieces tokenizes alone as it does in context, because it starts and ends on
 * piece boundaries and the pre-tokenizer has no look-behind; its only look-ahead is `\s+(?!\S)`, which can
 * see past a segment's end only when the segment ends with whitespace. So a segment is encoded whole up
 * to its last piece that ends with a non-whitespace character, and each piece after that alone (a
 * single piece always tokenizes to itself).
 */
function* boundedSegments(text: string): Generator<string> {
  if (!mayHaveLongPiece(text)) {
    if (text.length > 0) yield text
    return
  }
  let segmentStart = 0
  let wholeEnd = 0
  let pieceStarts: number[] = []
  for (const match of text.matchAll(PIECES)) {
    const start = match.index
    const end = start + match[0].length
    if (end - start <= LONG_PIECE_CHARS) {
      if (isWhitespace(text.charCodeAt(end - 1))) pieceStarts.push(start)
      else {
        wholeEnd = end
        pieceStarts = []
      }
      continue
    }
    if (wholeEnd > segmentStart) yield text.slice(segmentStart, wholeEnd)
    pieceStarts.push(start)
    for (let i = 0; i < pieceStarts.length - 1; i++) yield text.slice(pieceStarts[i], pieceStarts[i + 1])
    for (let at = start; at < end; ) {
      let to = Math.min(end, at + PIECE_CHUNK_CHARS)
      if (to < end && isHighSurrogate(text.charCodeAt(to - 1))) to--
      yield text.slice(at, to)
      at = to
    }
    segmentStart = wholeEnd = end
    pieceStarts = []
  }
  if (segmentStart < text.length) yield segmentStart === 0 ? text : text.slice(segmentStart)
}

/**
 * False only when no pre-tokenizer piece of `text` is longer than `LONG_PIECE_CHARS`, found by one cheap
 * pass instead of running the pre-tokenizer twice. A piece is a run of letters and marks with one
 * character before and a contraction after, a run of whitespace, or ` ?[^\s\p{L}\p{N}]+[\r\n/]*`; so a
 * long one holds `LONG_PIECE_CHARS - 4` characters in a row that are all whitespace, or all not
 * whitespace but for \r and \n. Minified JSON or CJK without spaces can pass this test: then the
 * pre-tokenizer decides.
 */
function mayHaveLongPiece(text: string): boolean {
  if (text.length <= LONG_PIECE_CHARS) return false
  const limit = LONG_PIECE_CHARS - 4
  let solid = 0
  let blank = 0
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i)
    if (isWhitespace(unit)) {
      blank++
      solid = unit === 0x0a || unit === 0x0d ? solid + 1 : 0
    } else {
      blank = 0
      solid++
    }
    if (solid >= limit || blank >= limit) return true
  }
  return false
}

// Exactly the characters of `\s` in a regular expression.
const isWhitespace = (unit: number) =>
  unit <= 0x20
    ? unit === 0x20 || (unit >= 0x09 && unit <= 0x0d)
    : unit >= 0xa0 &&
      (unit === 0xa0 || unit === 0x1680 || (unit >= 0x2000 && unit <= 0x200a) || unit === 0x2028 || unit === 0x2029 || unit === 0x202f || unit === 0x205f || unit === 0x3000 || unit === 0xfeff)

// The pre-tokenizer of the encoding `gpt-tokenizer`'s default export uses (o200k_base).
const PIECES = O200K_TOKEN_SPLIT_REGEX

export function saturatingAdd(...estimates: number[]): number {
  return Math.min(TOKEN_ESTIMATE_MAX, estimates.reduce((sum, n) => sum + n, 0))
}
