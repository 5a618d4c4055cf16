import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { estimatePartTokens } from '../../src/domain/context/estimate-part-tokens.ts'
import type { PartBody } from '../../src/domain/parts.ts'
import { compactionOf, sandboxThrough } from '../helpers/sandbox-through.ts'
import { compactionRunsOf, growUntilHeldAtGate, prose, until } from '../helpers/compaction-turns.ts'
import { createTestApp, type TestContext, type TestOrg } from '../helpers/test-app.ts'
import { deferred, fundedOrg, getRun, newChat, postTurn, sandboxCatalogue, streamOf, turn, usageEntries } from '../helpers/turns.ts'

/**
 * Compaction through the actor host (issue 10, decisions §5.3): eager work in the background, a turn
 * that waits for it, a cancel while compacting, deleting a chat with summaries, and a compaction run
 * interrupted by a crash. Compaction runs can be held at a gate to see each moment.
 */

/** The sandbox, with compaction runs held until the test opens the gate. */
function gatedSandbox() {
  let gate = deferred()
  const entered: string[] = []
  const languageModelFor = sandboxThrough(async (options) => {
    const compaction = compactionOf(options)
    if (!compaction) return
    entered.push(`${compaction.firstOrdinal}-${compaction.lastOrdinal}`)
    await gate.promise
    if (options.abortSignal?.aborted) throw Object.assign(new Error('aborted'), { name: 'AbortError' })
  })
  return {
    languageModelFor,
    entered,
    open: () => gate.resolve(),
    close: () => (gate = deferred()),
  }
}

let ctx: TestContext
let org: TestOrg
let sandbox: ReturnType<typeof gatedSandbox>

beforeEach(async () => {
  sandbox = gatedSandbox()
  sandbox.open()
  ctx = await createTestApp({ catalogue: sandboxCatalogue(), languageModelFor: sandbox.languageModelFor })
  org = fundedOrg(ctx, '100')
})
afterEach(async () => {
  sandbox.open()
  await ctx.close()
})

const publishBudget = async (namespace: string, budget: Record<string, unknown>) => {
  const res = await ctx.app.inject({ method: 'POST', url: '/api/v1/config/budgets', headers: org.auth, payload: { namespace, budget: { version: 3, headroom: 0.1, ...budget } } })
  expect(res.statusCode, res.body).toBe(200)
}

const compactionRuns = (chatId: string) => compactionRunsOf(ctx.store, chatId)

const say = (chatId: string, text: string) => turn(ctx, org.auth, chatId, { model: 'sandbox/echo-8k', input: [{ type: 'prompt', text }] })

describe('eager compaction (eager_compaction.at_fill)', () => {
  it('after a run settles past the fill mark, the oldest blocks are summarised in the background; the next turn reuses them', async () => {
    await publishBudget('eager', { eager_compaction: { mode: 'at_fill', at: 0.5 } })
    const chatId = await newChat(ctx, org.auth, { namespace: 'eager' })
    let i = 0
    while (compactionRuns(chatId).length === 0) {
      const t = await say(chatId, prose(i++, 500))
      // Until the history overflows, no turn sends or makes a summary itself.
      expect(t.of('done')[0]!.data.compaction).toBeNull()
      expect(i).toBeLessThan(10)
    }
    await until(() => compactionRuns(chatId).every((r) => r.status !== 'running'))
    const eager = compactionRuns(chatId)
    expect(eager.every((r) => r.status === 'succeeded')).toBe(true)
    // Nobody asked for them: eager work names no customer run.
    expect(eager.every((r) => JSON.parse(r.manifest).for_run === null)).toBe(true)
    expect(ctx.store.summaries.ofChat(chatId)).toHaveLength(eager.length)
    for (const run of eager) expect(usageEntries(ctx.store, run.id)).toEqual([expect.objectContaining({ entry_type: 'compaction' })])

    // Grow until the history needs summaries: the first ones are ready and reused, not made again.
    let first: any = null
    while (first === null) {
      const t = await say(chatId, prose(i++, 500))
      first = t.of('done')[0]!.data.compaction
      expect(i).toBeLessThan(30)
    }
    expect(first.blocks_reused).toBeGreaterThan(0)
    const made = new Set(eager.map((r) => r.id))
    const manifest = (await getRun(ctx, org.auth, ctx.store.runs.latestCustomerRun(chatId)!.id)).manifest
    const sent = manifest.context.summaries.filter((s: any) => made.has(s.run_id))
    expect(sent.length).toBeGreaterThan(0)
    expect(sent.every((s: any) => s.reused)).toBe(true)
  })

  it('a turn arriving while eager work summarises its blocks waits for them (compacting with in_progress_elsewhere), never making them twice', async () => {
    // Turns of ~1,000 tokens (prompt and echo) reach the 80% mark before any of them overflows.
    await publishBudget('eager-wait', { eager_compaction: { mode: 'at_fill', at: 0.8 } })
    const chatId = await newChat(ctx, org.auth, { namespace: 'eager-wait' })
    sandbox.close()
    let i = 0
    while (sandbox.entered.length === 0) {
      const t = await say(chatId, prose(i++, 500))
      expect(t.of('done')[0]!.data.compaction).toBeNull()
      await until(() => sandbox.entered.length > 0, 200).catch(() => undefined)
      expect(i).toBeLessThan(12)
    }
    const held = compactionRuns(chatId)
    expect(held.length).toBeGreaterThan(0)
    expect(held.every((r) => r.status === 'running' && JSON.parse(r.manifest).for_run === null)).toBe(true)
    // The eager child runs beside the turns: the chat takes a turn, whose larger prompt needs those blocks.
    const pending = postTurn(ctx, org.auth, chatId, { model: 'sandbox/echo-8k', input: [{ type: 'prompt', text: prose(i++, 3000) }] })
    await until(() => ctx.store.runs.latestCustomerRun(chatId)!.status === 'running')
    await new Promise((r) => setTimeout(r, 50))
    sandbox.open()
    const t = streamOf(await pending)
    expect(t.events.at(-1)).toBe('done')
    const compacting = t.of('compacting')[0]!.data
    const done = t.of('done')[0]!.data
    expect(done.compaction.blocks_generated).toBe(compacting.blocks)
    // Every block eager work claimed (two runs at a time, so some were still queued) was waited for, not made again.
    await until(() => compactionRuns(chatId).every((r) => r.status !== 'running'))
    const eager = compactionRuns(chatId).filter((r) => JSON.parse(r.manifest).for_run === null)
    expect(compacting.in_progress_elsewhere).toBeGreaterThanOrEqual(held.length)
    expect(compacting.in_progress_elsewhere).toBe(eager.length)
    expect(done.compaction.in_progress_elsewhere).toBe(eager.length)
    // Each block was summarised by one run only.
    const keys = compactionRuns(chatId).map((r) => JSON.parse(r.manifest).block).map((b: any) => `${b.first_ordinal}-${b.last_ordinal}`)
    expect(new Set(keys).size).toBe(keys.length)
    expect(t.events.indexOf('compacting')).toBeLessThan(t.events.indexOf('block_start'))
  })
})

describe('compaction in the turn', () => {
  it('a cancel while compacting settles the turn cancelled and keeps the summaries already made', async () => {
    const chatId = await newChat(ctx, org.auth)
    // Without held runs the chat grows until the first turn that needs a summary; that one is held.
    sandbox.close()
    const { pending } = await growUntilHeldAtGate(ctx, org.auth, chatId, sandbox)
    expect(pending).not.toBeNull()
    const runId = ctx.store.runs.latestCustomerRun(chatId)!.id
    const cancel = await ctx.app.inject({ method: 'POST', url: `/api/v1/runs/${runId}/cancel`, headers: org.auth })
    expect(cancel.statusCode, cancel.body).toBe(200)
    expect(cancel.json()).toMatchObject({ id: runId, status: 'cancelled' })
    sandbox.open()
    const t = streamOf(await pending!)
    expect(t.events).toContain('compacting')
    expect(t.events.at(-1)).toBe('error')
    expect(t.of('error')[0]!.data.code).toBe('cancelled')
    await until(() => compactionRuns(chatId).every((r) => r.status !== 'running'))
    // The held compaction run saw the cancel: it settled as cancelled, billed as compaction, with no summary.
    const runs = compactionRuns(chatId)
    expect(runs.map((r) => r.status)).toContain('cancelled')
    expect(ctx.store.summaries.ofChat(chatId).every((s) => runs.find((r) => r.id === s.runId)?.status === 'succeeded')).toBe(true)
    // No provider call was made for the customer run.
    expect((await getRun(ctx, org.auth, runId)).usage.input_tokens).toBe(0)
    // The chat goes on: the next turn makes the summary.
    const next = await say(chatId, 'and now?')
    expect(next.events.at(-1)).toBe('done')
    expect(next.of('done')[0]!.data.compaction.blocks_generated).toBeGreaterThan(0)
  })

  it('a provider failing after compaction ends the open stream with an error frame; the retry reuses the summary', async () => {
    const chatId = await newChat(ctx, org.auth)
    const bodies: PartBody[] = [
      { type: 'prompt', text: 'hello' },
      { type: 'message', text: 'hi' },
      { type: 'prompt', text: prose(1, 8000) },
      { type: 'message', text: 'noted' },
    ]
    ctx.store.parts.append(chatId, bodies.map((body) => ({ body, tokens: estimatePartTokens(body) })))
    // /flaky: the provider fails before its first byte, and succeeds on a retry.
    const failed = await turn(ctx, org.auth, chatId, { model: 'sandbox/echo-8k', input: [{ type: 'prompt', text: '/flaky' }] })
    // The stream opened for compaction, so the failure is a frame, and the stream ends.
    expect(failed.res.statusCode).toBe(200)
    expect(failed.events).toEqual(['run', 'config_warnings', 'translation_warnings', 'compacting', 'error'])
    expect(failed.of('error')[0]!.data).toMatchObject({ code: 'upstream_error', details: { run_id: failed.runId } })
    expect((await getRun(ctx, org.auth, failed.runId)).status).toBe('failed')
    expect(ctx.store.summaries.ofChat(chatId)).toHaveLength(1)
    const retry = await turn(ctx, org.auth, chatId, { model: 'sandbox/echo-8k', input: [], retry_of: failed.runId })
    expect(retry.events).not.toContain('compacting')
    expect(retry.of('done')[0]!.data.compaction).toEqual({ blocks_generated: 0, blocks_reused: 1, in_progress_elsewhere: 0 })
  })

  it('deleting a chat deletes its summaries; its compaction runs stay for billing', async () => {
    const chatId = await newChat(ctx, org.auth)
    for (let i = 0; ctx.store.summaries.ofChat(chatId).length === 0; i++) {
      await say(chatId, prose(i, 600))
      expect(i).toBeLessThan(12)
    }
    const runs = compactionRuns(chatId)
    const res = await ctx.app.inject({ method: 'DELETE', url: `/api/v1/chats/${chatId}`, headers: org.auth })
    expect(res.statusCode, res.body).toBe(204)
    expect(ctx.store.summaries.ofChat(chatId)).toEqual([])
    expect(compactionRuns(chatId)).toHaveLength(runs.length)
  })

  it('a compaction run left running by a crash is failed as interrupted by the sweep, billed as compaction, with no summary', async () => {
    const chatId = await newChat(ctx, org.auth)
    const model = sandboxCatalogue().find((m) => m.name === 'sandbox/echo-8k')!
    ctx.store.runs.insert({
      id: '01a20000-0000-7000-8000-00000000c0de',
      org_id: org.orgId,
      chat_id: chatId,
      origin: 'compaction',
      model_id: model.id,
      model_name: model.name,
      namespace: null,
      api_key_id: null,
      retry_of: null,
      created_at: new Date(Date.now() - 60_000).toISOString(),
      manifest: { purpose: 'compaction', estimated_input_tokens: 1000, markup_percent: '5' },
      lease_owner: 'another-node',
      lease_expires_at: new Date(Date.now() - 1_000).toISOString(),
    })
    const stop = ctx.host.start()
    stop()
    const run = ctx.store.runs.getById('01a20000-0000-7000-8000-00000000c0de')!
    expect(run).toMatchObject({ status: 'failed', error: 'interrupted' })
    expect(usageEntries(ctx.store, run.id)).toEqual([expect.objectContaining({ entry_type: 'compaction' })])
    expect(ctx.store.summaries.ofChat(chatId)).toEqual([])
  })
})
