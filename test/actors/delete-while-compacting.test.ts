import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { compactionOf, sandboxThrough } from '../helpers/sandbox-through.ts'
import { growUntilHeldAtGate, prose, until } from '../helpers/compaction-turns.ts'
import { createTestApp, type TestContext, type TestOrg } from '../helpers/test-app.ts'
import { deferred, fundedOrg, newChat, sandboxCatalogue, streamOf, usageEntries } from '../helpers/turns.ts'

/**
 * Issue 12, decision 020, through the routes and the actor host: a chat deleted while its turn waits
 * for summaries. The DELETE stops the compaction (its runs settle `cancelled`, no summary is stored),
 * the turn settles `cancelled` with `chat_deleted` without calling the provider, and the chat goes.
 */

/** The sandbox, with compaction runs held until the test opens the gate; customer calls counted. */
function gatedSandbox() {
  let gate = deferred()
  const entered: string[] = []
  let customerCalls = 0
  const languageModelFor = sandboxThrough(async (options) => {
    const compaction = compactionOf(options)
    if (!compaction) return void customerCalls++
    entered.push(String(compaction.firstOrdinal))
    await gate.promise
    if (options.abortSignal?.aborted) throw Object.assign(new Error('aborted'), { name: 'AbortError' })
  })
  return { languageModelFor, entered, customerCalls: () => customerCalls, open: () => gate.resolve(), close: () => (gate = deferred()) }
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

describe('DELETE while the turn compacts', () => {
  it('stops the compaction, settles the turn cancelled with chat_deleted without a provider call, and deletes the chat', async () => {
    const chatId = await newChat(ctx, org.auth)
    const compactionRuns = () =>
      ctx.store.db.prepare(`SELECT id, status FROM runs WHERE chat_id = ? AND origin = 'compaction'`).all(chatId) as { id: string; status: string }[]
    // The chat grows until the first turn that needs a summary; that one is held at the gate.
    sandbox.close()
    const { pending } = await growUntilHeldAtGate(ctx, org.auth, chatId, sandbox)
    expect(pending).not.toBeNull()
    const runId = ctx.store.runs.latestCustomerRun(chatId)!.id
    const callsBefore = sandbox.customerCalls()

    // The compaction run is still held at the gate: the DELETE does not wait for it.
    const deleted = await ctx.app.inject({ method: 'DELETE', url: `/api/v1/chats/${chatId}`, headers: org.auth })
    expect(deleted.statusCode, deleted.body).toBe(204)
    const t = streamOf(await pending!)
    expect(t.events).toContain('compacting')
    expect(t.events.at(-1)).toBe('error')
    expect(t.of('error')).toHaveLength(1)
    expect(t.of('error')[0]!.data).toEqual({ code: 'chat_deleted', message: 'the chat was deleted while this run streamed', details: { run_id: runId } })
    expect(sandbox.customerCalls()).toBe(callsBefore)
    const run = ctx.store.runs.getById(runId)!
    expect(run).toMatchObject({ status: 'cancelled', error: 'the chat was deleted while this run streamed' })
    expect(run.settled_at).not.toBeNull()
    expect(usageEntries(ctx.store, runId)).toHaveLength(1)
    expect(ctx.store.chats.get(org.orgId, chatId)).toBeUndefined()
    expect(ctx.host.size).toBe(0)

    // Released, the held compaction run sees the abort: cancelled, billed as compaction, no summary.
    sandbox.open()
    await until(() => compactionRuns().length > 0 && compactionRuns().every((r) => r.status !== 'running'))
    expect(compactionRuns().every((r) => r.status === 'cancelled')).toBe(true)
    for (const r of compactionRuns()) expect(usageEntries(ctx.store, r.id)).toEqual([expect.objectContaining({ entry_type: 'compaction' })])
    expect(ctx.store.summaries.ofChat(chatId)).toEqual([])
    expect((await ctx.app.inject({ method: 'GET', url: `/api/v1/chats/${chatId}`, headers: org.auth })).statusCode).toBe(404)
  })
})
