import { readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { readContextRefusal, readContextRefusalFrom } from '../../src/providers/read-context-refusal.ts'

type Case = { status: number; body: string; source: string; date: string; expect: { vendorCount: number | null; window: number | null; maxTokens?: number } | null }
const dir = join(import.meta.dirname, 'context-refusals')
const files = readdirSync(dir).filter((f) => f.endsWith('.json'))

describe('readContextRefusal: each vendor’s recorded wording', () => {
  it('has a fixture for each of the six vendors and for look-alikes', () => {
    expect(files.sort()).toEqual(['anthropic.json', 'deepseek.json', 'google.json', 'mistral.json', 'not-context.json', 'openai.json', 'xai.json'])
  })
  for (const file of files) {
    const { cases } = JSON.parse(readFileSync(join(dir, file), 'utf8')) as { cases: Case[] }
    for (const c of cases) {
      it(`${file}: ${c.body.slice(0, 90)}`, () => {
        const { value, warnings } = readContextRefusal(c.status, c.body)
        expect(warnings).toEqual([])
        if (c.expect === null) return expect(value).toBeNull()
        expect(value).not.toBeNull()
        expect(value!.vendorCount).toBe(c.expect.vendorCount)
        expect(value!.window).toBe(c.expect.window)
        if (c.expect.maxTokens !== undefined) expect(value!.maxTokens).toBe(c.expect.maxTokens)
      })
    }
  }
})

describe('readContextRefusal: edges', () => {
  it('reads the sandbox model’s over-window refusal', () => {
    const { value } = readContextRefusal(400, 'sandbox: the request’s 8236 input tokens exceed the context window of 8192 tokens')
    expect(value).toMatchObject({ wording: 'sandbox-context-window', vendorCount: 8236, window: 8192 })
  })
  it('takes no 429 or 5xx for a refusal, whatever it says', () => {
    expect(readContextRefusal(429, 'prompt is too long: 219898 tokens > 200000 maximum').value).toBeNull()
    expect(readContextRefusal(502, 'prompt is too long: 219898 tokens > 200000 maximum').value).toBeNull()
  })
  it('keeps a refusal whose figures, max_tokens included, fit, but learns nothing from its count, with a warning', () => {
    const { value, warnings } = readContextRefusal(400, 'input length and `max_tokens` exceed context limit: 100 + 8192 > 200000, decrease input length or `max_tokens` and try again')
    expect(value).toMatchObject({ vendorCount: null })
    expect(warnings).toHaveLength(1)
  })
  it('keeps the count of a refusal that names no max_tokens, though the input alone fits: the vendor counted max_tokens too', () => {
    const { value, warnings } = readContextRefusal(400, 'Prompt contains 255576 tokens, too large for model with 256000 maximum context length')
    expect(value).toMatchObject({ vendorCount: 255_576, window: 256_000 })
    expect(warnings).toEqual([])
  })
  it('reads a thrown APICallError-shaped error (status and raw body), and looks through its cause', () => {
    const body = '{"error":{"code":400,"message":"The input token count (132478) exceeds the maximum number of tokens allowed (131072).","status":"INVALID_ARGUMENT"}}'
    const thrown = { statusCode: 400, responseBody: body, message: 'Bad Request' }
    expect(readContextRefusalFrom(thrown).value).toMatchObject({ vendorCount: 132478, window: 131072 })
    expect(readContextRefusalFrom(new Error('wrapped', { cause: thrown })).value).toMatchObject({ vendorCount: 132478 })
    expect(readContextRefusalFrom(new Error('socket hang up')).value).toBeNull()
  })
})
