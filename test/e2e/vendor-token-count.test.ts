import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { countTokens as countCl100k } from 'gpt-tokenizer/encoding/cl100k_base'
import { countTokens as countO200k } from 'gpt-tokenizer/encoding/o200k_base'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { estimateTokens } from '../../src/domain/tokens/estimate-tokens.ts'
import { readContextRefusal } from '../../src/providers/read-context-refusal.ts'
import { corpora, randomBase64, seededRandom, sliceOf } from '../helpers/content-classes.ts'
import { PDF_1, pngClaiming } from '../helpers/media-fixtures.ts'
import { documentedLimits, requestByteLimit } from './vendor-documented-limits.ts'
import type { Vendor } from './vendor-fixtures/index.ts'
import { limitError } from './vendor-fixtures/limit-errors.ts'
import { imageSize, inlineFiles } from './vendor-fixtures/request-media.ts'
import { textSchemeOf, vendorFileTokens, vendorInputTokens } from './vendor-fixtures/vendor-token-count.ts'
import { startReplayServer, type ReplayServer } from './vendor-replay-server.ts'

/**
 * The replay double's own token counter (issue 33): each vendor's documented tokenizer or ratio, not
 * Parley's estimator. Bounds come from the vendors' documentation (quoted in
 * vendor-fixtures/vendor-token-count.ts), checked here against texts of the content classes Parley's
 * estimator is measured on (test/helpers/content-classes.ts).
 */

const NO_SPECIAL = { disallowedSpecial: new Set<string>() }
const VENDORS: Vendor[] = ['anthropic', 'openai', 'google', 'mistral', 'xai', 'deepseek']
/** One model of each vendor (the catalogue's active ones), and Claude on both its tokenizers. */
const MODEL: Record<Vendor, string> = {
  anthropic: 'claude-haiku-4-5-20251001',
  openai: 'gpt-5',
  google: 'gemini-3.8-flash',
  mistral: 'mistral-medium-2604',
  xai: 'grok-4.3',
  deepseek: 'deepseek-v4-flash',
}
const CLAUDE_NEWER = 'claude-sonnet-5-5'

const count = (vendor: Vendor, text: string, model = MODEL[vendor]) => vendorInputTokens(vendor, model, [text])
const random = seededRandom(33)
const prose = (length: number) => sliceOf(corpora().prose, length, random)
/** Chinese only: the Han characters of the corpus, joined (its messages also hold ASCII placeholders). */
const chinese = (length: number) => (corpora().cjk.match(/\p{Script=Han}+/gu) ?? []).join('').slice(0, length)

describe('OpenAI: o200k_base, exactly, over the whole text', () => {
  test('a text past 4,096 characters counts exactly what o200k_base counts, where Parley samples it', () => {
    const text = prose(40_000)
    expect(text.length).toBeGreaterThan(4_096)
    const exact = countO200k(text, NO_SPECIAL)
    expect(count('openai', text)).toBe(exact)
    // Parley's estimator samples a text this long and raises the sample by a margin: it does not give the exact count.
    expect(estimateTokens(text)).not.toBe(exact)
  })

  test('every text and every part is counted: the sum over the request', () => {
    const texts = [prose(3_000), prose(9_000), chinese(2_000)]
    expect(vendorInputTokens('openai', 'gpt-5', texts)).toBe(texts.reduce((n, t) => n + countO200k(t, NO_SPECIAL), 0))
  })
})

describe('Anthropic: Claude before 4.7, and the newer tokenizer documented at up to 1.35× as many tokens', () => {
  test('the newer tokenizer counts English at most 1.35× the older one, and more than 1.25×', () => {
    const text = prose(20_000)
    const older = count('anthropic', text)
    const newer = count('anthropic', text, CLAUDE_NEWER)
    expect(textSchemeOf('anthropic', CLAUDE_NEWER)).toBe('claude-newer')
    expect(textSchemeOf('anthropic', MODEL.anthropic)).toBe('cl100k')
    expect(newer / older).toBeLessThanOrEqual(1.35 + 1 / older)
    expect(newer / older).toBeGreaterThan(1.25)
  })

  test('Chinese is not raised by the newer tokenizer (measured 1.00× with count_tokens)', () => {
    const text = chinese(3_000)
    expect(count('anthropic', text, CLAUDE_NEWER)).toBe(count('anthropic', text))
  })
})

describe('Google: a token for about 4 characters of language text', () => {
  test('4,000 characters of English are 1,000 tokens', () => {
    const text = prose(4_000)
    expect(count('google', text)).toBe(Math.ceil([...text].length / 4))
  })
})

describe('DeepSeek: 0.3 a token an English character, 0.6 a Chinese character', () => {
  test('1,000 English characters are 300 tokens; 1,000 Chinese characters are 600', () => {
    const english = prose(1_000)
    expect(count('deepseek', english)).toBe(Math.ceil([...english].length * 0.3))
    const text = chinese(1_000)
    expect([...text].length).toBe(1_000)
    expect(count('deepseek', text)).toBe(600)
  })
})

describe('Mistral and xAI: cl100k_base stands in for tokenizers whose tables are not bundled', () => {
  test.each(['mistral', 'xai'] as const)('%s counts cl100k_base exactly', (vendor) => {
    const text = prose(10_000)
    expect(count(vendor, text)).toBe(countCl100k(text, NO_SPECIAL))
  })
})

describe('content classes: CJK and base64 cost what each vendor says they cost', () => {
  test.each(VENDORS)('%s: Chinese costs more tokens a character than English prose', (vendor) => {
    const english = prose(3_000)
    const han = chinese(3_000)
    const perChar = (text: string) => count(vendor, text) / [...text].length
    expect(perChar(han)).toBeGreaterThan(perChar(english))
  })

  test.each(VENDORS)('%s: base64 is counted as encoded bytes (over 0.6 a character), not at a ratio for words', (vendor) => {
    const blob = randomBase64(3_000, random)
    expect(count(vendor, blob) / blob.length).toBeGreaterThan(0.6)
    // A blob inside prose is counted as a blob: the prose around it does not dilute it.
    const text = `${prose(2_000)} ${blob} ${prose(2_000)}`
    expect(count(vendor, text)).toBeGreaterThan(count(vendor, blob))
  })

  test('the double is not Parley\'s estimator: on English prose and on Chinese, some vendors count more than it estimates', () => {
    // Under 4,096 characters Parley's estimate is the exact o200k count, so a difference is the vendors'.
    const english = prose(4_000)
    const han = chinese(3_000)
    expect(count('deepseek', english)).toBeGreaterThan(estimateTokens(english))
    expect(count('anthropic', english, CLAUDE_NEWER)).toBeGreaterThan(estimateTokens(english))
    expect(count('anthropic', han)).toBeGreaterThan(estimateTokens(han))
    expect(count('mistral', han)).toBeGreaterThan(estimateTokens(han))
    // And some count less: Google's 4 characters a token on English, DeepSeek's 0.6 on Chinese.
    expect(count('deepseek', han)).toBeLessThan(estimateTokens(han))
  })
})

describe('files: images by the vendor\'s documented formula from their size, PDFs by a documented figure a page', () => {
  const png = (width: number, height: number) => ({ mimeType: 'image/png', bytes: pngClaiming(width, height) })
  const tokens = (vendor: Vendor, file: { mimeType: string; bytes: Buffer }) => vendorFileTokens(vendor, textSchemeOf(vendor, MODEL[vendor]), file)

  test('an image\'s size is read from its header', () => {
    expect(imageSize(pngClaiming(1234, 567))).toEqual({ width: 1234, height: 567 })
  })

  test('Anthropic: width × height / 750, at most about 1,600 tokens', () => {
    expect(tokens('anthropic', png(1000, 1000))).toBe(Math.ceil(1_000_000 / 750))
    expect(tokens('anthropic', png(200, 200))).toBe(Math.ceil(40_000 / 750))
    expect(tokens('anthropic', png(4000, 3000))).toBeLessThanOrEqual(1600)
    expect(tokens('anthropic', png(4000, 3000))).toBeGreaterThan(1500)
  })

  test('OpenAI: the documented examples (1024 × 1024 high detail: 765; 2048 × 4096: 1,105)', () => {
    expect(tokens('openai', png(1024, 1024))).toBe(765)
    expect(tokens('openai', png(2048, 4096))).toBe(1105)
  })

  test('Gemini 3: an image is at most 1,120 tokens, a PDF page 560', () => {
    expect(tokens('google', png(3000, 3000))).toBe(1120)
    expect(tokens('google', { mimeType: 'application/pdf', bytes: PDF_1 })).toBe(560)
  })

  test('Mistral: a token a 16 px patch, and one a row, within 1024 px', () => {
    expect(tokens('mistral', png(1024, 1024))).toBe(64 * 64 + 64)
    expect(tokens('mistral', png(2048, 2048))).toBe(64 * 64 + 64)
  })

  test('Anthropic PDFs: 3,000 tokens a page, the top of the documented 1,500–3,000', () => {
    expect(tokens('anthropic', { mimeType: 'application/pdf', bytes: PDF_1 })).toBe(3000)
  })

  test('inline files are found in each vendor\'s wire shape', () => {
    const b64 = pngClaiming(10, 10).toString('base64')
    const bodies = [
      { messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: b64 } }] }] },
      { input: [{ role: 'user', content: [{ type: 'input_image', image_url: `data:image/png;base64,${b64}` }] }] },
      { contents: [{ role: 'user', parts: [{ inlineData: { mimeType: 'image/png', data: b64 } }] }] },
      { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${b64}` } }] }] },
    ]
    for (const body of bodies) expect(inlineFiles(body).map((f) => imageSize(f.bytes)), JSON.stringify(body).slice(0, 80)).toEqual([{ width: 10, height: 10 }])
  })
})

describe('refusals: the double words them as the vendors do (the recorded bodies in test/providers/context-refusals)', () => {
  const recordedWordings = (vendor: Vendor) => {
    const fixture = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'providers', 'context-refusals', `${vendor}.json`), 'utf8')) as { cases: { status: number; body: string }[] }
    return new Set(fixture.cases.map((c) => readContextRefusal(c.status, c.body).value?.wording))
  }

  test('the fixtures cover the six vendors', () => {
    const files = readdirSync(join(import.meta.dirname, '..', 'providers', 'context-refusals'))
    for (const vendor of VENDORS) expect(files).toContain(`${vendor}.json`)
  })

  test.each(VENDORS)('%s: an input over the bound is refused in a recorded wording, with the double\'s count and the limit', (vendor) => {
    const limits = documentedLimits(vendor, MODEL[vendor])!
    const max = Math.min(limits.inputLimit ?? Infinity, limits.window ?? Infinity)
    const refusal = limitError(vendor, { limit: 'input', input: max + 123, max }, limits.vendorModelId)
    const read = readContextRefusal(refusal.status, JSON.stringify(refusal.body)).value
    expect(read, JSON.stringify(refusal.body)).not.toBeNull()
    expect(recordedWordings(vendor)).toContain(read!.wording)
    if (read!.vendorCount !== null) expect(read!.vendorCount).toBe(max + 123)
  })

  test('Anthropic, input plus max_tokens over the window: the recorded wording with all three figures', () => {
    const refusal = limitError('anthropic', { limit: 'window', input: 199_759, output: 8_192, max: 200_000 }, 'claude-haiku-4-5-20251001')
    expect(readContextRefusal(refusal.status, JSON.stringify(refusal.body)).value).toEqual({ wording: 'anthropic-input-and-max-tokens', vendorCount: 199_759, maxTokens: 8_192, window: 200_000 })
  })
})

describe('the byte limit: a body over it is refused with the vendor\'s status before any stream', () => {
  let replay: ReplayServer
  beforeAll(async () => {
    replay = await startReplayServer({ enforceLimits: true, reportCountedUsage: true })
  })
  afterAll(async () => {
    await replay?.close()
  })

  test('Anthropic documents 32 MB for the Messages API; one byte over is a 413 request_too_large, as recorded', async () => {
    const limit = requestByteLimit('anthropic', 'claude-haiku-4-5-20251001')!
    // "32 MB" read as decimal (docs/decisions/045-request-bytes.md: a 32.7-million-byte request was refused).
    expect(limit).toBe(32_000_000)
    // Base64 image data that takes the body one byte past the limit (a 32 MB image is also over the 5 MB
    // per-image limit, but the front door checks bytes first).
    const body = (data: string) => JSON.stringify({ model: 'claude-haiku-4-5-20251001', max_tokens: 100, stream: true, messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data } }] }] })
    const padding = 'A'.repeat(limit - body('').length + 1)
    const sent = body(padding)
    expect(Buffer.byteLength(sent)).toBe(limit + 1)
    const res = await fetch(`${replay.baseUrl('anthropic')}/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: sent })
    expect(res.status).toBe(413)
    expect(await res.json()).toEqual({ error: { type: 'request_too_large', message: 'Request exceeds the maximum size' } })
    expect(replay.requests.at(-1)!.breach).toEqual({ limit: 'bytes', bytes: limit + 1, max: limit })
  })

  test('within the limit, the same request is taken', async () => {
    const res = await fetch(`${replay.baseUrl('anthropic')}/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-haiku-4-5-20251001', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'hello' }] }),
    })
    await res.text()
    expect(res.status).toBe(200)
  })
})
