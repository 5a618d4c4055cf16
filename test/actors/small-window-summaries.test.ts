import type { LanguageModelV4Prompt } from '@ai-sdk/provider'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { compactionOf, sandboxThrough } from '../helpers/sandbox-through.ts'
import { compactionRunsOf, prose, until } from '../helpers/compaction-turns.ts'
import { createTestApp, type TestContext, type TestOrg } from '../helpers/test-app.ts'
import { fundedOrg, getRun, newChat, sandboxCatalogue, turn, usageEntries } from '../helpers/turns.ts'

/**
 * Summaries on a small window (issue 21): sandbox/echo-8k at headroom 0.88 leaves a 983-token input
 * budget. Anchors stay out of every summary, blocks are sized to the window so eager compaction
 * fires, and `summarize` merges the oldest summaries instead of dropping history. Every prompt the
 * model receives is recorded, so "the anchors' text appears once" is checked on what was sent.
 */

/** The sandbox, recording the text of every customer prompt it is sent (compaction runs are not customer prompts). */
function recordingSandbox() {
  const prompts: string[] = []
  const textOf = (prompt: LanguageModelV4Prompt) =>
    prompt
      .flatMap((m) => (typeof m.content === 'string' ? [m.content] : m.content.flatMap((c) => (c.type === 'text' ? [c.text] : []))))
      .join('\n')
  const languageModelFor = sandboxThrough((options) => {
    if (!compactionOf(options)) prompts.push(textOf(options.prompt))
  })
  return { languageModelFor, prompts }
}

let ctx: TestContext
let org: TestOrg
let sandbox: ReturnType<typeof recordingSandbox>

beforeEach(async () => {
  sandbox = recordingSandbox()
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

const compactionRuns = (chatId: string) => compactionRunsOf(ctx.store, chatId)

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length === 0 ? 0 : s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2
}

describe('summaries on sandbox/echo-8k at headroom 0.88, anchor_parts 2', () => {
  it('over 60 turns: anchors sent once, summaries merged instead of history dropped, the budget filled, the prefix cache kept', { timeout: 120_000 }, async () => {
    await publish('budgets', 'small', { headroom: 0.88, history_mode: 'summarize' })
    await publish('retention', 'small', { anchor_parts: 2 })
    const chatId = await newChat(ctx, org.auth, { namespace: 'small' })
    const anchor = 'Anchor: the customer is Ada Lovelace, account 1815, and every answer is in French.'
    let dropping = 0
    const emptyOnDropping: number[] = []
    const emptyWhenFull: number[] = []
    let input = 0
    let cached = 0
    let merged = 0
    for (let i = 0; i < 60; i++) {
      const text = i === 0 ? anchor : prose(i, 25 + ((i * 17) % 40))
      const t = await turn(ctx, org.auth, chatId, { model: 'sandbox/echo-8k', input: [{ type: 'prompt', text }] })
      expect(t.events.at(-1), JSON.stringify(t.frames.at(-1))).toBe('done')
      const done = t.of('done')[0]!.data
      input += done.usage.input_tokens + done.usage.cache_read_tokens
      cached += done.usage.cache_read_tokens
      // The anchor's text (the prompt, and its echo) appears once each in what the model received.
      const sent = sandbox.prompts.at(-1)!
      expect(sent.split(anchor).length - 1, `turn ${i}`).toBe(i === 0 ? 1 : 2)
      const c = (await getRun(ctx, org.auth, t.runId)).manifest.context
      expect(c.tokens.total).toBeLessThanOrEqual(c.input_budget)
      // No summary covers an anchor: the first two ordinals are verbatim, and no summary range starts before the third.
      const ordinals = c.segments.flatMap((s: any) => (s.treatment === 'verbatim' ? [s.first_ordinal] : []))
      if (i > 0) expect(ordinals[0]).toBe(1)
      for (const s of c.summaries) expect(s.first_ordinal).toBeGreaterThan(2)
      merged = Math.max(merged, c.summaries.filter((s: any) => s.last_ordinal - s.first_ordinal > 8).length)
      const empty = (c.history_budget - c.tokens.history - c.tokens.summaries) / c.history_budget
      if (c.dropped !== null) {
        dropping++
        emptyOnDropping.push(empty)
      }
      if (c.summaries.length > 0 || c.dropped !== null) emptyWhenFull.push(empty)
    }
    const figures = { dropping, medianEmptyOnDropping: median(emptyOnDropping), medianEmptyWhenSummarising: median(emptyWhenFull), cacheShare: cached / input, compactionRuns: compactionRuns(chatId).length, merged }
    console.log(JSON.stringify(figures))
    expect(dropping).toBeLessThanOrEqual(5)
    expect(figures.medianEmptyOnDropping).toBeLessThanOrEqual(0.1)
    // Every turn that summarised or dropped counts: the budget stays filled, not only on dropping turns.
    expect(figures.medianEmptyWhenSummarising).toBeLessThanOrEqual(0.1)
    expect(figures.cacheShare).toBeGreaterThanOrEqual(0.6)
  })

  it('the reproduction of defect 1: 9 turns, then the anchor appears once in what the model received', async () => {
    await publish('budgets', 'nine', { headroom: 0.88, history_mode: 'summarize' })
    await publish('retention', 'nine', { anchor_parts: 2 })
    const chatId = await newChat(ctx, org.auth, { namespace: 'nine' })
    const anchor = 'Anchor: reply in French, always.'
    for (let i = 0; i < 9; i++) await turn(ctx, org.auth, chatId, { model: 'sandbox/echo-8k', input: [{ type: 'prompt', text: i === 0 ? anchor : prose(i, 80) }] })
    const t = await turn(ctx, org.auth, chatId, { model: 'sandbox/echo-8k', input: [{ type: 'prompt', text: '/context' }] })
    const c = (await getRun(ctx, org.auth, t.runId)).manifest.context
    expect(c.summaries.length).toBeGreaterThan(0)
    // The /context answer is what the model received: the anchor once, and its echo once.
    const answer = t.of('delta').map((f) => f.data.text ?? '').join('')
    expect(answer.split(anchor).length - 1).toBe(2)
    expect(sandbox.prompts.at(-1)!.split(anchor).length - 1).toBe(2)
    // The manifest's summary ranges never overlap a verbatim segment.
    const verbatim = c.segments.filter((s: any) => s.treatment === 'verbatim')
    for (const s of c.summaries) for (const v of verbatim) expect(s.last_ordinal < v.first_ordinal || s.first_ordinal > v.last_ordinal).toBe(true)
  })
})

describe('summarize on a small window drops history only when even a merged summary cannot fit (defect 3 of issue 21)', () => {
  it('30 turns at headroom 0.88 without anchors: no turn drops history, and the summaries take the place of the oldest turns', { timeout: 60_000 }, async () => {
    await publish('budgets', 'no-drop', { headroom: 0.88, history_mode: 'summarize' })
    await publish('retention', 'no-drop', { anchor_parts: 0 })
    const chatId = await newChat(ctx, org.auth, { namespace: 'no-drop' })
    const dropped: number[] = []
    let summarising = 0
    for (let i = 0; i < 30; i++) {
      const t = await turn(ctx, org.auth, chatId, { model: 'sandbox/echo-8k', input: [{ type: 'prompt', text: prose(i, 30 + ((i * 13) % 50)) }] })
      const c = (await getRun(ctx, org.auth, t.runId)).manifest.context
      if (c.dropped !== null) dropped.push(i)
      if (c.summaries.length > 0) {
        summarising++
        // Summaries start at the first ordinal: nothing before them was let go.
        expect(c.segments[0]).toMatchObject({ first_ordinal: 1, treatment: 'summarised' })
      }
    }
    expect(dropped).toEqual([])
    expect(summarising).toBeGreaterThan(15)
  })
})

describe('a merge is a compaction run like any other (decisions §5.3)', () => {
  it('billed as compaction, its manifest names what it merged, its summary stored as merged and reused by later turns', { timeout: 60_000 }, async () => {
    await publish('budgets', 'merge', { headroom: 0.88, history_mode: 'summarize' })
    const chatId = await newChat(ctx, org.auth, { namespace: 'merge' })
    let i = 0
    const mergedSummary = () => ctx.store.summaries.ofChat(chatId).find((s) => s.merged)
    while (!mergedSummary()) {
      await turn(ctx, org.auth, chatId, { model: 'sandbox/echo-8k', input: [{ type: 'prompt', text: prose(i++, 50) }] })
      expect(i).toBeLessThan(60)
    }
    const merged = mergedSummary()!
    const run = (await getRun(ctx, org.auth, merged.runId)) as any
    expect(run).toMatchObject({ origin: 'compaction', status: 'succeeded', manifest: { purpose: 'compaction', block: { first_ordinal: merged.firstOrdinal, last_ordinal: merged.lastOrdinal } } })
    // It read stored summaries, oldest first, contiguous over its whole range.
    const merges: { first_ordinal: number; last_ordinal: number; run_id: string }[] = run.manifest.merges
    expect(merges.length).toBeGreaterThanOrEqual(2)
    expect(merges[0]!.first_ordinal).toBe(merged.firstOrdinal)
    expect(merges.at(-1)!.last_ordinal).toBe(merged.lastOrdinal)
    for (const m of merges) expect(ctx.store.summaries.ofRange(chatId, m.first_ordinal, m.last_ordinal)?.runId).toBe(m.run_id)
    expect(usageEntries(ctx.store, merged.runId)).toEqual([expect.objectContaining({ entry_type: 'compaction' })])
    // The next turn sends it as made: reused, not made again.
    const t = await turn(ctx, org.auth, chatId, { model: 'sandbox/echo-8k', input: [{ type: 'prompt', text: prose(i++, 50) }] })
    const c = (await getRun(ctx, org.auth, t.runId)).manifest.context
    expect(c.summaries[0]).toMatchObject({ first_ordinal: merged.firstOrdinal, run_id: merged.runId, reused: true })
    expect(c.dropped).toBeNull()
  })
})

describe('eager compaction on sandbox/echo-8k at headroom 0.88, at_fill 0.2', () => {
  it('compaction runs appear after a settled run and before any turn needs them; the first summarising turn reuses them', { timeout: 60_000 }, async () => {
    await publish('budgets', 'eager-small', { headroom: 0.88, history_mode: 'summarize', eager_compaction: { mode: 'at_fill', at: 0.2 } })
    const chatId = await newChat(ctx, org.auth, { namespace: 'eager-small' })
    let i = 0
    // Until the history overflows no turn sends a summary; eager runs appear meanwhile, named by no customer run.
    let first: any = null
    let eagerBeforeFirst = 0
    while (first === null) {
      const t = await turn(ctx, org.auth, chatId, { model: 'sandbox/echo-8k', input: [{ type: 'prompt', text: prose(i++, 40) }] })
      first = t.of('done')[0]!.data.compaction
      if (first === null) {
        await until(() => compactionRuns(chatId).every((r) => r.status !== 'running'))
        eagerBeforeFirst = compactionRuns(chatId).length
      }
      expect(i).toBeLessThan(40)
    }
    expect(eagerBeforeFirst).toBeGreaterThan(0)
    const eager = compactionRuns(chatId).slice(0, eagerBeforeFirst)
    expect(eager.every((r) => r.status === 'succeeded' && JSON.parse(r.manifest).for_run === null)).toBe(true)
    expect(first.blocks_reused).toBeGreaterThan(0)
  })
})
