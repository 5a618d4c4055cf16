import { describe, expect, test } from 'vitest'
import { FIXTURES, type Vendor } from '../../e2e/vendor-fixtures/index.ts'
import { runRecorded, WEATHER } from '../../helpers/recorded-vendor-run.ts'

/**
 * What the request options Parley gives each vendor package become on the wire, in process:
 * reasoning_effort as mapReasoningEffort maps it (decision 010), and `strict` on a function tool
 * where the vendor has it (decision 017).
 */

const only = <T>(items: T[], what: string): T => {
  expect(items, what).toHaveLength(1)
  return items[0]!
}

describe('reasoning_effort high, as each vendor package sends it', () => {
  // What `reasoning_effort: high` must become in the vendor's request, and the warnings it gives.
  const HIGH: Record<Vendor, { sent: (body: any) => unknown; expected: unknown; warnings: string[]; maxTokens?: (body: any) => unknown; expectedMax?: number }> = {
    anthropic: { sent: (b) => b.thinking, expected: { type: 'enabled', budget_tokens: 16_384 }, warnings: [], maxTokens: (b) => b.max_tokens, expectedMax: 30_000 },
    openai: { sent: (b) => b.reasoning, expected: { effort: 'high' }, warnings: [] },
    // Gemini 3.8 Flash (thinking `level`): a level, not a budget, so max_tokens is the answer's and the thinking's alike.
    google: {
      sent: (b) => b.generationConfig.thinkingConfig,
      expected: { thinkingLevel: 'high', includeThoughts: true },
      warnings: [],
      maxTokens: (b) => b.generationConfig.maxOutputTokens,
      expectedMax: 30_000,
    },
    // Mistral Medium does not reason: nothing is sent (admission coerces the effort off first, with its own warning).
    mistral: { sent: (b) => b.reasoning_effort ?? null, expected: null, warnings: [] },
    // Grok 4.3 (thinking `effort`) and DeepSeek V4 Pro (thinking `switch`) take the effort by name.
    xai: { sent: (b) => b.reasoning?.effort ?? b.reasoning_effort ?? null, expected: 'high', warnings: [] },
    deepseek: { sent: (b) => b.reasoning_effort ?? null, expected: 'high', warnings: [] },
  }

  test.each(Object.keys(HIGH) as Vendor[])('%s', async (vendor) => {
    const t = await runRecorded(vendor, [FIXTURES[vendor].text.response], { reasoningEffort: 'high', maxTokens: 30_000 })
    expect(t.frames.at(-1)!.event).toBe('done')
    const body = only(t.requests, 'vendor requests').body
    const c = HIGH[vendor]
    expect(c.sent(body)).toEqual(c.expected)
    expect(t.effortWarnings.map((w) => w.code)).toEqual(c.warnings)
    // Thinking is spent from max_tokens: answer and thinking together stay within what was asked.
    if (c.maxTokens) expect(c.maxTokens(body)).toBe(c.expectedMax)
  })
})

test.each([
  ['openai', (body: any) => body.tools[0].strict],
  ['mistral', (body: any) => body.tools[0].function.strict],
  ['xai', (body: any) => body.tools[0].strict],
] as const)('strict reaches %s, which has it, and its package warns of nothing', async (vendor, strictOf) => {
  const t = await runRecorded(vendor, [FIXTURES[vendor].text.response], { tools: [{ ...WEATHER, strict: true }] })
  expect(t.frames.at(-1)!.event).toBe('done')
  expect(strictOf(only(t.requests, 'vendor request').body)).toBe(true)
  expect(t.recordedWarnings).toEqual([])
})
