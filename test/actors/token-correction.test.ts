import type { LanguageModelV4, LanguageModelV4StreamPart } from '@ai-sdk/provider'
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { createSandboxLanguageModel } from '../../src/providers/sandbox/sandbox-language-model.ts'
import type { LanguageModelFor } from '../../src/providers/language-models.ts'
import { createTestApp, type TestContext } from '../helpers/test-app.ts'
import { fundedOrg, getRun, newChat, prompt, turn, variantOf } from '../helpers/turns.ts'
import type { TestOrg } from '../helpers/test-app.ts'
import { client, KINDS } from '../helpers/config-api.ts'

/**
 * The per-model token correction through real turns (docs/decisions/027-model-limits.md): a test
 * double of a vendor that counts a prompt as `factor` × our estimate (the sandbox's count, which is
 * our estimate, scaled in its finish part), on a 16,384-token variant of sandbox/echo.
 */
function countingVendor(factor: number): LanguageModelFor {
  const sandbox = createSandboxLanguageModel('echo')
  const vendor: LanguageModelV4 = {
    ...sandbox,
    doStream: async (options) => {
      const call = await sandbox.doStream(options)
      const scaled = new TransformStream<LanguageModelV4StreamPart, LanguageModelV4StreamPart>({
        transform(part, controller) {
          if (part.type !== 'finish') return controller.enqueue(part)
          const total = Math.round((part.usage.inputTokens.total ?? 0) * factor)
          controller.enqueue({ ...part, usage: { ...part.usage, inputTokens: { total, noCache: total, cacheRead: 0, cacheWrite: 0 } } })
        },
      })
      return { ...call, stream: call.stream.pipeThrough(scaled) }
    },
  }
  return () => vendor
}

const MODEL = variantOf('sandbox/echo-16k', '0b6cbb38-3c4b-4d6f-9a70-1c7e3f1a2b16', { context_window: 16_384, max_output_tokens: 4_096 })
/**
 * About 1,200 tokens of text: over the 1,024 a run needs to teach the correction, in under 4,096
 * characters, so that both this estimator and the vendor double count it exactly (a longer text is
 * estimated from samples, with a margin).
 */
const LONG = Array.from({ length: 1_200 }, (_, i) => String.fromCharCode(97 + (i % 26))).join(' ')

let ctx: TestContext
let org: TestOrg
const start = async (factor: number) => {
  ctx = await createTestApp({ catalogue: [MODEL], languageModelFor: countingVendor(factor) })
  org = fundedOrg(ctx, '100')
  // drop_oldest: a full window drops history rather than summarising it.
  await client(ctx, org).publish(KINDS.find((k) => k.kind === 'budgets')!, { budget: { version: 3, headroom: 0.1, history_mode: 'drop_oldest' } })
}
afterEach(() => ctx?.close())

const run = async (chatId: string, text: string) => {
  const t = await turn(ctx, org.auth, chatId, { model: MODEL.name, input: [prompt(text)] })
  return getRun(ctx, org.auth, t.runId)
}

describe('a vendor that counts 25% more than our estimate', () => {
  beforeEach(() => start(1.25))

  test('its first long run corrects the next: packing budgets the estimate at 1/1.25 of the input budget, the manifest and the run say so', async () => {
    const chatId = await newChat(ctx, org.auth)
    const first = await run(chatId, LONG)
    expect(first.manifest.token_estimate).toEqual({ estimated: first.manifest.estimated_input_tokens, correction: 1, corrected: first.manifest.estimated_input_tokens, runs: 0 })
    expect(first.token_estimate.reported).toBe(Math.round(first.manifest.estimated_input_tokens * 1.25))

    const second = await run(chatId, LONG)
    expect(second.manifest.token_estimate).toMatchObject({ correction: 1.25, runs: 1 })
    expect(second.manifest.token_estimate.corrected).toBe(Math.ceil(second.manifest.estimated_input_tokens * 1.25))
    // floor(16,384 × 0.9) = 14,745 in the vendor's count; 11,796 in ours.
    expect(second.manifest.context.input_budget).toBe(Math.floor(14_745 / 1.25))
    expect(second.token_estimate).toMatchObject({ correction: 1.25, reported: Math.round(second.manifest.estimated_input_tokens * 1.25) })
  })

  test('a full window: input as the vendor counts it plus max_tokens fit the window, and the vendor count stays within the budget', async () => {
    const chatId = await newChat(ctx, org.auth)
    for (let i = 0; i < 14; i++) await run(chatId, `${i} ${LONG}`)
    const last = await run(chatId, `last ${LONG}`)
    expect(last.manifest.context.dropped).not.toBeNull()
    const reported = last.token_estimate.reported
    expect(reported).toBeLessThanOrEqual(14_745)
    expect(reported + last.manifest.max_tokens).toBeLessThanOrEqual(16_384)
    expect(last.manifest.limits).toEqual({ window: 16_384, input_limit: null, long_context: false })
  })
})

describe('a vendor that counts 20% less', () => {
  beforeEach(() => start(0.8))

  test('the estimate stands for seven runs; from the eighth the budget widens', async () => {
    const chatId = await newChat(ctx, org.auth)
    const corrections: number[] = []
    for (let i = 0; i < 9; i++) corrections.push((await run(chatId, `${i} ${LONG}`)).manifest.token_estimate.correction)
    expect(corrections.slice(0, 8)).toEqual([1, 1, 1, 1, 1, 1, 1, 1])
    // The vendor's whole-token count is a hair over 0.8 of ours: one step up from it.
    expect([0.8, 0.825]).toContain(corrections[8])
  })
})
