import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { contextRefusal, createSandboxLanguageModel } from '../../src/providers/sandbox/sandbox-language-model.ts'
import { compactionRunsOf, prose } from '../helpers/compaction-turns.ts'
import { recordingCompactions, type ReceivedCompaction } from '../helpers/sandbox-through.ts'
import { createTestApp, type TestContext, type TestOrg } from '../helpers/test-app.ts'
import { fundedOrg, getRun, newChat, sandboxCatalogue, turn, usageEntries, type Turn } from '../helpers/turns.ts'

/**
 * Compaction runs inside their model's window (issue 33 item 6, decision 043). A block closes only
 * past its size and never inside a tool exchange, so one block can hold more than a small window
 * takes; and a block sealed under a large model is summarised by the model the chat has when it is
 * needed. The sandbox here holds every request to its entry's window as a vendor does (it refuses
 * one over it before the first byte), and records each compaction call as it arrived.
 */

let ctx: TestContext
let org: TestOrg
let sandbox: ReturnType<typeof recordingCompactions>

beforeEach(async () => {
  sandbox = recordingCompactions()
  ctx = await createTestApp({ catalogue: sandboxCatalogue(), languageModelFor: sandbox.languageModelFor })
  org = fundedOrg(ctx, '100')
})
afterEach(async () => {
  await ctx.close()
})

const publish = async (kind: 'budgets' | 'retention', namespace: string, document: Record<string, unknown>) => {
  const payload = kind === 'budgets' ? { namespace, budget: { version: 3, ...document } } : { namespace, rules: { version: 1, ...document } }
  const res = await ctx.app.inject({ method: 'POST', url: `/api/v1/config/${kind}`, headers: org.auth, payload })
  expect(res.statusCode, res.body).toBe(200)
}

/** A turn that ended with `done`. */
async function done(chatId: string, model: string, input: unknown[]): Promise<Turn> {
  const t = await turn(ctx, org.auth, chatId, { model, input })
  expect(t.events.at(-1), JSON.stringify(t.frames.at(-1))).toBe('done')
  return t
}

/** A prompt making `calls` parallel tool calls, then the results, each about `resultTokens` tokens: one tool exchange. */
async function toolExchange(chatId: string, model: string, seed: number, calls: number, promptTokens: number, resultTokens: number) {
  const lines = [prose(seed, promptTokens), ...Array.from({ length: calls }, (_, k) => `/tool lookup {"q":"item ${seed}-${k}"}`)]
  const t = await done(chatId, model, [{ type: 'prompt', text: lines.join('\n') }])
  const pending = t.of('done')[0]!.data.pending_tool_calls as { tool_name: string; tool_use_id: string }[]
  expect(pending.length).toBe(calls)
  return done(
    chatId,
    model,
    pending.map((p, k) => ({ type: 'tool_result', tool_use_id: p.tool_use_id, tool_name: p.tool_name, text: prose(seed * 100 + k, resultTokens), is_error: false })),
  )
}

/**
 * Every compaction call stayed inside the window of the model it reached, as that model counted it,
 * and every compaction run settled `succeeded` with its summary stored, billed once.
 */
function expectInsideAndSummarised(chatId: string): ReceivedCompaction[] {
  expect(sandbox.received.length).toBeGreaterThan(0)
  for (const r of sandbox.received) {
    expect(r.input + r.maxTokens, `${r.firstOrdinal}-${r.lastOrdinal} on ${r.model}`).toBeLessThanOrEqual(r.window)
    if (r.inputLimit !== null) expect(r.input).toBeLessThanOrEqual(r.inputLimit)
  }
  const runs = compactionRunsOf(ctx.store, chatId)
  expect(runs.map((r) => r.status)).toEqual(runs.map(() => 'succeeded'))
  const stored = ctx.store.db.prepare('SELECT first_ordinal, last_ordinal FROM summaries WHERE chat_id = ?').all(chatId) as { first_ordinal: number; last_ordinal: number }[]
  expect(stored.length).toBe(runs.length)
  for (const r of runs) expect(usageEntries(ctx.store, r.id).map((e) => e.entry_type)).toEqual(['compaction'])
  return sandbox.received
}

/** The largest tool exchange's block: the one compaction call whose input reached the most parts. */
const largest = (received: readonly ReceivedCompaction[]) => received.reduce((a, b) => (b.input > a.input ? b : a))

describe('compaction runs inside the window (issue 33, decision 043)', () => {
  it('on sandbox/echo-8k: a block holding a tool exchange larger than the window takes is summarised, cut to fit, never refused', { timeout: 60_000 }, async () => {
    // Headroom 0: a 7,680-token input budget, blocks of 960 tokens. Retention cuts old tool results
    // in packing, so the turns go on; the compaction run reads the parts as stored (whole).
    await publish('budgets', 'tools8k', { headroom: 0, history_mode: 'summarize' })
    await publish('retention', 'tools8k', { tools: { default: { result: { mode: 'over', over: 200, to: 100 } } } })
    const chatId = await newChat(ctx, org.auth, { namespace: 'tools8k' })
    const model = 'sandbox/echo-8k'
    // 600 tokens of history, then a short prompt: under the block size (960) until the exchange,
    // which cannot be split, so one block holds them all.
    await done(chatId, model, [{ type: 'prompt', text: prose(1, 150) }])
    await done(chatId, model, [{ type: 'prompt', text: prose(2, 150) }])
    // Four parallel calls whose results are 1,800 tokens each (7,200: each under the 2,000-token cut
    // per part; the exchange fits the turn's 7,680-token budget, but the block, our instruction and
    // the run's max_tokens are over the window).
    await toolExchange(chatId, model, 3, 4, 60, 1_800)
    // Turns of 800 tokens (prompt and echo) until the history overflows and its blocks are summarised.
    for (let i = 4; i < 20 && sandbox.received.length === 0; i++) await done(chatId, model, [{ type: 'prompt', text: prose(i, 400) }])
    const received = expectInsideAndSummarised(chatId)
    const big = largest(received)
    // The block that holds the exchange went to the model cut: its results carry the visible marker.
    expect(big.text).toMatch(/\[… \d+ tokens truncated …\]/)
    // Without the cut the block alone would not fit: the parts as stored exceed what was sent.
    const rows = ctx.store.db.prepare('SELECT tokens FROM parts WHERE chat_id = ? AND ordinal BETWEEN ? AND ?').all(chatId, big.firstOrdinal, big.lastOrdinal) as { tokens: number }[]
    expect(rows.reduce((n, r) => n + r.tokens, 0) + big.maxTokens).toBeGreaterThan(8_192)
    // The manifest says what the fit did.
    const run = compactionRunsOf(ctx.store, chatId).map((r) => JSON.parse(r.manifest)).find((m) => m.block.first_ordinal === big.firstOrdinal && !m.merges)!
    expect(run.fit.cut_items).toBeGreaterThan(0)
    expect(run.fit.corrected_input_tokens + run.max_tokens).toBeLessThanOrEqual(8_192)
    expect(run.fit.input_limit).toBe(8_192 - run.max_tokens)
  })

  // With a correction of 1.25 learned for echo-8k, the run must fit as that vendor would count it:
  // a quarter more than our estimate.
  it.each([1, 1.25])('blocks sealed on sandbox/echo, summarised after the chat moved to sandbox/echo-8k (correction %s), fit the smaller window', { timeout: 60_000 }, async (correction) => {
    const small = sandboxCatalogue().find((e) => e.name === 'sandbox/echo-8k')!
    if (correction !== 1) ctx.store.tokenCorrections.record(small.id, correction)
    expect(ctx.store.tokenCorrections.correctionFor(small.id).correction).toBe(correction)
    await publish('budgets', 'switch', { headroom: 0.1, history_mode: 'summarize' })
    const chatId = await newChat(ctx, org.auth, { namespace: 'switch' })
    // On the 128k model: a tool exchange of six 1,900-token results (11,400 tokens, one unit), and prose around it.
    await done(chatId, 'sandbox/echo', [{ type: 'prompt', text: prose(1, 600) }])
    await toolExchange(chatId, 'sandbox/echo', 2, 6, 400, 1_900)
    for (let i = 3; i < 6; i++) await done(chatId, 'sandbox/echo', [{ type: 'prompt', text: prose(i, 600) }])
    expect(sandbox.received).toEqual([])
    // Moved to the 8k model: the history no longer fits and its blocks are summarised there.
    for (let i = 6; i < 9; i++) {
      const t = await done(chatId, 'sandbox/echo-8k', [{ type: 'prompt', text: prose(i, 200) }])
      // No block is dropped for a failed compaction.
      const dropped = (await getRun(ctx, org.auth, t.runId)).manifest.context.dropped
      expect(dropped?.reason ?? null, JSON.stringify(dropped)).not.toBe('compaction_failed')
    }
    const received = expectInsideAndSummarised(chatId)
    expect(received.every((r) => r.model === 'echo-8k')).toBe(true)
    // As the vendor is expected to count it: our estimate times the correction, plus max_tokens.
    for (const r of received) expect(Math.ceil(r.input * correction) + r.maxTokens).toBeLessThanOrEqual(8_192)
    const big = largest(received)
    expect(big.text).toMatch(/\[… \d+ tokens truncated …\]/)
    // The fit used up the window it had: cut to the room left, not to some fixed small size.
    expect(Math.ceil(big.input * correction) + big.maxTokens).toBeGreaterThan(8_192 * 0.9)
    const manifests = compactionRunsOf(ctx.store, chatId).map((r) => JSON.parse(r.manifest))
    expect(manifests.every((m) => m.fit.correction === correction)).toBe(true)
  })
})

describe('the sandbox holds a request to its window, as a vendor does', () => {
  it('refuses input plus max_tokens over the window before the first byte, naming the context window and the figures', async () => {
    const model = createSandboxLanguageModel('echo-8k', { contextWindow: 8_192 })
    const prompt = [{ role: 'user' as const, content: [{ type: 'text' as const, text: prose(1, 8_000) }] }]
    const refused = await model.doStream({ prompt, maxOutputTokens: 400 }).then(
      () => null,
      (e: Error & { statusCode?: number }) => e,
    )
    expect(refused?.statusCode).toBe(400)
    expect(refused?.message).toMatch(/^prompt is too long: \d+ tokens > 8192 maximum \(input \d+ \+ max_tokens 400 exceed the context window\)$/)
    // The same prompt with room for its output is taken.
    await expect(model.doStream({ prompt, maxOutputTokens: 100 })).resolves.toBeDefined()
  })

  it('refuses input over the input limit, and takes anything without limits', () => {
    expect(contextRefusal('m', { contextWindow: 400_000, maxInputTokens: 272_000 }, 272_001, 0)?.message).toBe(
      'prompt is too long: 272001 tokens > 272000 maximum (the input the 400000-token context window takes)',
    )
    expect(contextRefusal('m', { contextWindow: 8_192 }, 8_192, 0)).toBeNull()
    expect(contextRefusal('m', { contextWindow: 8_192 }, 8_000, 192)).toBeNull()
    expect(contextRefusal('m', { contextWindow: 8_192 }, 8_000, 193)?.message).toContain('8193 tokens > 8192 maximum')
  })
})
