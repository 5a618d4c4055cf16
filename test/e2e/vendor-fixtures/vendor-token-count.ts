import { countTokens as countCl100k } from 'gpt-tokenizer/encoding/cl100k_base'
import { countTokens as countO200k } from 'gpt-tokenizer/encoding/o200k_base'
import { imageSize, pdfPageCount, type InlineFile } from './request-media.ts'
import type { Vendor } from './wire.ts'

/**
 * TEST DOUBLE: the replay server's stand-in for each vendor's own token counter (issue 33).
 *
 * It must stay independent of Parley's estimator (src/domain/tokens): it imports nothing from it,
 * samples nothing, and counts every text whole. Were it the estimator again, "within the window to the
 * token" would hold by construction and no test could see the estimator's error. Where a vendor's
 * tokenizer is public it is used exactly (OpenAI: o200k_base); where it is not, the vendor's own
 * documented ratio or figure is used, and where a vendor documents none for a kind of text, a public
 * BPE of the same generation (cl100k_base) stands in. Every figure below names its source and the date
 * it was read (2026-11-28 unless stated). A figure that is a reading of a range takes the end that
 * counts more: a double that counts less than the vendor would let through what the vendor refuses.
 *
 * Not counted: the few framing tokens vendors add per message and per tool (they are not documented
 * per vendor, and tests that need a margin for them can raise the replay server's token factor).
 */

const NO_SPECIAL = { disallowedSpecial: new Set<string>() }

/** How a vendor model's texts are counted. */
export type TextScheme =
  /** OpenAI: o200k_base, exactly. */
  | 'o200k'
  /** Claude before Opus 4.7, Mistral (Tekken), xAI: cl100k_base, exactly. */
  | 'cl100k'
  /** Claude from Opus 4.7 on: cl100k_base, Latin-script and code text raised by the documented 1.35. */
  | 'claude-newer'
  /** Gemini: a token per 4 characters of language text. */
  | 'gemini-ratio'
  /** DeepSeek: 0.3 a character of English text, 0.6 a Chinese character. */
  | 'deepseek-ratio'

/**
 * Anthropic, "What's new in Claude Opus 4.7" / migration guide (https://platform.claude.com/docs/en/about-claude/models/whats-new-claude-4-7,
 * quoted 2026-04-17 at https://sol.ava.dev/writings/2026-04-17-opus-4-7-tokenizer.html): the new tokenizer
 * "may use roughly 1× to 1.35× as many tokens when processing text compared to previous models (up to
 * ~35% more, varying by content)". The double takes the top of the range. Measurements with Anthropic's
 * count_tokens endpoint (same page, and https://www.claudecodecamp.com/p/i-measured-claude-4-7-s-new-tokenizer-here-s-what-it-costs-you)
 * found CJK unchanged (1.00×) while English rose 1.45×: so CJK is not raised, and the double is
 * knowingly below the measured 1.45× on English prose (the documented figure is what a vendor stands by).
 */
export const CLAUDE_NEWER_TOKENIZER_FACTOR = 1.35

/**
 * Gemini API, "Understand and count tokens" (https://ai.google.dev/gemini-api/docs/tokens, read 2026-11-28):
 * "For Gemini models, a token is equivalent to about 4 characters. 100 tokens is equal to about 60-80
 * English words." A figure for language; the page gives none for CJK or for encoded data.
 */
export const GEMINI_CHARS_PER_TOKEN = 4

/**
 * DeepSeek API docs, "Token & Token Usage" (https://api-docs.deepseek.com/quick_start/token_usage, read
 * 2026-11-28): "1 English character ≈ 0.3 token. 1 Chinese character ≈ 0.6 token." The double applies
 * the English figure to every character of non-CJK language text (code and JSON included).
 */
export const DEEPSEEK_TOKENS_PER_ENGLISH_CHAR = 0.3
export const DEEPSEEK_TOKENS_PER_CHINESE_CHAR = 0.6

/** Which models have Anthropic's newer tokenizer: Opus 4.7 and later 4.x, and every Claude 5 (Sonnet 5.5). */
const CLAUDE_NEWER = /^claude-(?:opus|sonnet|haiku)-(?:4-[7-9]|[5-9])(?:\b|-)/

/** The text scheme of a vendor's model. */
export function textSchemeOf(vendor: Vendor, vendorModelId: string): TextScheme {
  switch (vendor) {
    case 'openai':
      return 'o200k'
    case 'anthropic':
      // Claude's tokenizer is not public. Before 4.7 the double takes cl100k_base for it: a public BPE
      // of its generation whose English counts are near Claude's (4.33 characters a token on English,
      // claudecodecamp above) and whose CJK counts are heavier than o200k's, as Claude's are reported to be.
      return CLAUDE_NEWER.test(vendorModelId) ? 'claude-newer' : 'cl100k'
    case 'mistral':
      // Tekken (Mistral NeMo and later, https://mistral.ai/news/mistral-nemo, 2024-07-18) is a tiktoken
      // BPE of 131k entries, "more proficient in compressing text [than Llama 3's] for approximately 85%
      // of all languages". Llama 3's tokenizer extends cl100k_base; Tekken's table is not bundled here,
      // so cl100k_base stands in (it counts at least as much as Tekken on most text, by that statement).
      return 'cl100k'
    case 'xai':
      // xAI publishes neither its tokenizer for Grok 4 nor a ratio (docs.x.ai offers a tokenize endpoint
      // only). cl100k_base stands in: not o200k, so the double does not agree with Parley by construction.
      return 'cl100k'
    case 'google':
      return 'gemini-ratio'
    case 'deepseek':
      return 'deepseek-ratio'
    default: {
      const unknown: never = vendor
      throw new Error(`unknown vendor ${String(unknown)}`)
    }
  }
}

/** Han, kana, hangul, and CJK punctuation and full-width forms: what DeepSeek calls a Chinese character. */
const CJK = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\u3000-\u303f\uff00-\uffef]+/gu
/**
 * A base64 run: 64 or more characters of the alphabet with upper case, lower case and a digit (so a long
 * word or number is not one). Vendors' ratios are for language; encoded bytes are not language, so these
 * runs are counted by a BPE (cl100k_base) under every ratio scheme.
 */
const BASE64_RUN = /[A-Za-z0-9+/]{64,}={0,2}/g
const isBase64Run = (run: string) => /[A-Z]/.test(run) && /[a-z]/.test(run) && /\d/.test(run)

/** Code points, not UTF-16 units: a vendor's "character" is a character. */
const characters = (text: string) => {
  let n = 0
  for (const _ of text) n++
  return n
}

/** Splits `text` into its base64 runs, its CJK runs, and the rest (language text). */
function segments(text: string): { base64: string[]; cjk: string[]; language: string[] } {
  const base64: string[] = []
  const rest: string[] = []
  let at = 0
  for (const m of text.matchAll(BASE64_RUN)) {
    if (!isBase64Run(m[0])) continue
    rest.push(text.slice(at, m.index))
    base64.push(m[0])
    at = m.index + m[0].length
  }
  rest.push(text.slice(at))
  const cjk: string[] = []
  const language: string[] = []
  for (const part of rest) {
    let from = 0
    for (const m of part.matchAll(CJK)) {
      language.push(part.slice(from, m.index))
      cjk.push(m[0])
      from = m.index + m[0].length
    }
    language.push(part.slice(from))
  }
  return { base64, cjk, language: language.filter((s) => s.length > 0) }
}

const sum = (texts: string[], count: (t: string) => number) => texts.reduce((n, t) => n + count(t), 0)
const cl100k = (text: string) => countCl100k(text, NO_SPECIAL)

function countWith(scheme: TextScheme, text: string): number {
  switch (scheme) {
    case 'o200k':
      return countO200k(text, NO_SPECIAL)
    case 'cl100k':
      return cl100k(text)
    case 'claude-newer': {
      const s = segments(text)
      return sum(s.cjk, cl100k) + Math.ceil(CLAUDE_NEWER_TOKENIZER_FACTOR * (sum(s.language, cl100k) + sum(s.base64, cl100k)))
    }
    case 'gemini-ratio': {
      const s = segments(text)
      // The 4-characters figure is for language; CJK and encoded data are counted by cl100k_base.
      return Math.ceil(sum(s.language, characters) / GEMINI_CHARS_PER_TOKEN) + sum(s.cjk, cl100k) + sum(s.base64, cl100k)
    }
    case 'deepseek-ratio': {
      const s = segments(text)
      return (
        Math.ceil(sum(s.language, characters) * DEEPSEEK_TOKENS_PER_ENGLISH_CHAR + sum(s.cjk, characters) * DEEPSEEK_TOKENS_PER_CHINESE_CHAR) +
        sum(s.base64, cl100k)
      )
    }
    default: {
      const unknown: never = scheme
      throw new Error(`unknown text scheme ${String(unknown)}`)
    }
  }
}

/*
 * Long chats send the same history texts on every request (a 1M-token request is about 4 MB of text),
 * so counts are remembered per scheme and text, bounded by the characters held.
 */
const MEMO_MAX_CHARS = 64 * 1024 * 1024
const memos = new Map<TextScheme, Map<string, number>>()
let memoChars = 0

/** The tokens the vendor's tokenizer counts for `text`, whole (never sampled). */
export function vendorTextTokens(scheme: TextScheme, text: string): number {
  if (text.length === 0) return 0
  let memo = memos.get(scheme)
  if (!memo) memos.set(scheme, (memo = new Map()))
  const known = memo.get(text)
  if (known !== undefined) return known
  const counted = countWith(scheme, text)
  if (memoChars + text.length > MEMO_MAX_CHARS) {
    memos.clear()
    memoChars = 0
    memos.set(scheme, (memo = new Map()))
  }
  memo.set(text, counted)
  memoChars += text.length
  return counted
}

/*
 * Files. Each vendor's documented cost of an inline image or PDF; a text file is counted as its text.
 */

/**
 * Anthropic, "Vision" (https://platform.claude.com/docs/en/build-with-claude/vision, read 2026-11-28):
 * tokens = (width px × height px) / 750; an image whose long edge is over 1568 px, or of more than about
 * 1,600 tokens, is first scaled down (aspect kept) until it is within both.
 */
export function anthropicImageTokens(width: number, height: number): number {
  const LONG_EDGE = 1568
  const MAX_TOKENS = 1600
  const scale = Math.min(1, LONG_EDGE / Math.max(width, height), Math.sqrt((MAX_TOKENS * 750) / (width * height)))
  return Math.min(MAX_TOKENS, Math.ceil((Math.floor(width * scale) * Math.floor(height * scale)) / 750))
}

/**
 * Anthropic, "PDF support" (https://platform.claude.com/docs/en/build-with-claude/pdf-support, read
 * 2026-11-28): text "typically 1,500-3,000 tokens per page", plus each page as an image. The double takes
 * 3,000 a page, the top of the range, with the image inside it (a measured 2,347 a text page on Claude
 * 5.5: https://huggingface.co/datasets/JOHNISKING/pdf-token-cost, 2026-10-18).
 */
export const ANTHROPIC_PDF_PAGE_TOKENS = 3000

/**
 * OpenAI, "Images and vision", calculating costs (https://platform.openai.com/docs/guides/images-vision,
 * read 2026-11-28): at detail high (the default "auto" may choose it), the image is scaled to fit
 * 2048 × 2048, then its shortest side to 768 px; it costs 85 tokens plus 170 per 512 px tile. GPT-5's
 * own figures (70 + 140) are lower: the double takes the higher.
 */
export function openaiImageTokens(width: number, height: number): number {
  let w = width
  let h = height
  const fit = Math.min(1, 2048 / Math.max(w, h))
  w *= fit
  h *= fit
  const shortest = Math.min(1, 768 / Math.min(w, h))
  w *= shortest
  h *= shortest
  return 85 + 170 * Math.ceil(w / 512) * Math.ceil(h / 512)
}

/**
 * OpenAI, "File inputs" (https://platform.openai.com/docs/guides/pdf-files, read 2026-11-28): a PDF puts
 * "both the extracted text and an image of each page" in context; no per-page figure is given. The
 * double takes a page as an image of 1536 × 2048 px (openaiImageTokens: 765)
 * plus 1,000 tokens of text, a dense page's worth.
 */
export const OPENAI_PDF_PAGE_TOKENS = openaiImageTokens(1536, 2048) + 1000

/**
 * Gemini API, "Media resolution" (https://ai.google.dev/gemini-api/docs/media-resolution, read
 * 2026-11-28) for Gemini 3: images default to high resolution, at most 1,120 tokens each; PDF pages to
 * medium, 560 tokens a page (measured 561 a page on Gemini 3.x: the pdf-token-cost data set above).
 * Older models' figure (258 an image or a 768 px tile) is lower: the double takes Gemini 3's.
 */
export const GEMINI_IMAGE_TOKENS = 1120
export const GEMINI_PDF_PAGE_TOKENS = 560

/**
 * Mistral, mistral-common "Images" (https://mistralai.github.io/mistral-common/usage/images/, read
 * 2026-11-28): an image is resized to fit `max_image_size` and cut into `image_patch_size` patches, one
 * token each, with an [IMG_BREAK] token ending each row (the last row's is [IMG_END]). Pixtral's
 * configuration (patch 16 px, max 1024 px, no spatial merge) counts the most of the published ones.
 */
export function mistralImageTokens(width: number, height: number): number {
  const PATCH = 16
  const MAX = 1024
  const fit = Math.min(1, MAX / Math.max(width, height))
  const columns = Math.ceil((width * fit) / PATCH)
  const rows = Math.ceil((height * fit) / PATCH)
  return rows * columns + rows
}

/** The tokens of one inline file for a vendor's model; `textScheme` counts a text file. */
export function vendorFileTokens(vendor: Vendor, scheme: TextScheme, file: InlineFile): number {
  if (file.mimeType.startsWith('text/')) return vendorTextTokens(scheme, file.bytes.toString('utf8'))
  if (file.mimeType === 'application/pdf') {
    const pages = pdfPageCount(file.bytes)
    switch (vendor) {
      case 'anthropic':
        return pages * ANTHROPIC_PDF_PAGE_TOKENS
      case 'openai':
      case 'xai':
        return pages * OPENAI_PDF_PAGE_TOKENS
      case 'google':
        return pages * GEMINI_PDF_PAGE_TOKENS
      case 'mistral':
      case 'deepseek':
        // Neither takes an inline PDF through these APIs; were one sent, count it as Anthropic's (the most).
        return pages * ANTHROPIC_PDF_PAGE_TOKENS
      default: {
        const unknown: never = vendor
        throw new Error(`unknown vendor ${String(unknown)}`)
      }
    }
  }
  // An image. One whose size cannot be read is taken at the largest size each formula allows.
  const size = imageSize(file.bytes) ?? { width: 8000, height: 8000 }
  switch (vendor) {
    case 'anthropic':
      return anthropicImageTokens(size.width, size.height)
    case 'openai':
      return openaiImageTokens(size.width, size.height)
    case 'xai':
      // xAI documents no image token figure (docs.x.ai image understanding gives size and type limits
      // only); its API follows OpenAI's, so OpenAI's formula stands in.
      return openaiImageTokens(size.width, size.height)
    case 'google':
      return GEMINI_IMAGE_TOKENS
    case 'mistral':
      return mistralImageTokens(size.width, size.height)
    case 'deepseek':
      // DeepSeek's chat API takes no images (text-only in the catalogue); were one sent, as OpenAI's.
      return openaiImageTokens(size.width, size.height)
    default: {
      const unknown: never = vendor
      throw new Error(`unknown vendor ${String(unknown)}`)
    }
  }
}

/**
 * A request's input tokens as the vendor's model counts them: every text (test/e2e/vendor-fixtures/request-texts.ts)
 * and every inline file, times `factor` (1 unless a test simulates a vendor that counts more), rounded up.
 */
export function vendorInputTokens(vendor: Vendor, vendorModelId: string, texts: readonly string[], files: readonly InlineFile[] = [], factor = 1): number {
  const scheme = textSchemeOf(vendor, vendorModelId)
  let counted = 0
  for (const text of texts) counted += vendorTextTokens(scheme, text)
  for (const file of files) counted += vendorFileTokens(vendor, scheme, file)
  return factor === 1 ? counted : Math.ceil(counted * factor)
}
