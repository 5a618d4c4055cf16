import OpenAI from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runIdOf } from '../../src/domain/openai/openai-ids.ts'
import { createTestApp, type TestContext, type TestOrg } from '../helpers/test-app.ts'
import { sandboxCatalogue } from '../helpers/turns.ts'

/**
 * decision 055: a chat kept for responses not to be stored (a WebSocket connection's cache) goes
 * when it is dropped; one a node left when it stopped is deleted when a node next starts as the
 * primary. Its run stays, billed.
 */
let ctx: TestContext
let org: TestOrg
let sdk: OpenAI

beforeAll(async () => {
  ctx = await createTestApp({ catalogue: sandboxCatalogue() })
  await ctx.app.listen({ port: 0, host: '127.0.0.1' })
  org = ctx.org()
  ctx.store.balance.add(org.orgId, 'topup', '10')
  sdk = new OpenAI({ baseURL: `http://127.0.0.1:${(ctx.app.server.address() as { port: number }).port}/v1`, apiKey: org.key, maxRetries: 0 })
})
afterAll(async () => {
  await ctx?.close()
})

/** A response whose chat stayed behind as a stopped node's cached one would: recorded as not to be stored. */
async function leftBehind(input: string) {
  const response = await sdk.responses.create({ model: 'sandbox/echo', input })
  const run = ctx.store.runs.get(org.orgId, runIdOf(response.id)!)!
  // The settled run's record, as a response not to be stored writes it (only a running run's manifest is rewritten by the code).
  ctx.store.db.prepare(`UPDATE runs SET manifest = json_set(manifest, '$.openai_request.store', json('false')) WHERE id = ?`).run(run.id)
  return run
}

describe('chats of responses not to be stored, left by a stopped node', () => {
  it('are deleted when the node starts as the primary; stored ones stay; the runs stay billed', async () => {
    const stale = await leftBehind('forget me')
    const kept = await sdk.responses.create({ model: 'sandbox/echo', input: 'keep me' })
    const keptChat = ctx.store.runs.get(org.orgId, runIdOf(kept.id)!)!.chat_id
    expect(ctx.store.chats.get(org.orgId, stale.chat_id)).toBeDefined()
    const stop = ctx.host.start()
    try {
      await expect.poll(() => ctx.store.chats.get(org.orgId, stale.chat_id)).toBeUndefined()
      expect(ctx.store.chats.get(org.orgId, keptChat)).toBeDefined()
      expect(ctx.store.runs.get(org.orgId, stale.id)?.status).toBe('succeeded')
    } finally {
      stop()
    }
  })

  it('are found through their index, not by reading every run', () => {
    const plan = ctx.store.db
      .prepare(`EXPLAIN QUERY PLAN SELECT DISTINCT r.chat_id FROM runs r WHERE json_extract(r.manifest, '$.openai_request.store') = 0`)
      .all() as { detail: string }[]
    expect(plan.map((row) => row.detail).join('\n')).toContain('runs_unstored_chat')
  })
})
