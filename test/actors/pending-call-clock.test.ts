import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createTestApp, type TestContext, type TestOrg } from '../helpers/test-app.ts'
import { fundedOrg, history, newChat, prompt, sandboxCatalogue, turn } from '../helpers/turns.ts'

const HOUR = 3600 * 1000
// The service's clock (deps.now) runs two hours behind the machine's: whatever dates a pending call
// must date it the same way whether the chat's actor stayed in memory or was evicted and hydrated.
const SKEW = -2 * HOUR

let ctx: TestContext
let org: TestOrg
let offset = 0

beforeEach(async () => {
  offset = 0
  ctx = await createTestApp({ catalogue: sandboxCatalogue(), now: () => new Date(Date.now() + SKEW + offset) })
  org = fundedOrg(ctx)
})
afterEach(async () => {
  await ctx.close()
})

async function chatWithPendingCall() {
  const chatId = await newChat(ctx, org.auth)
  const t = await turn(ctx, org.auth, chatId, { input: [prompt('/tool weather {"city":"Oslo"}')] })
  const done = t.of('done')[0]!.data
  expect(done.stop_reason).toBe('tool_use')
  return { chatId, id: (done.pending_tool_calls as { tool_use_id: string }[])[0]!.tool_use_id }
}

async function tombstoneOf(chatId: string, id: string) {
  const page = await history(ctx, org.auth, chatId)
  const call = page.data.find((p) => p.part.type === 'tool_call' && p.part.tool_use_id === id)!
  const result = page.data.find((p) => p.part.type === 'tool_result' && p.part.tool_use_id === id)!
  return { reason: result.part.tombstone_reason, callCreatedAt: call.created_at as string }
}

describe('a pending call is dated by its tool_call part in the ledger, in memory as after hydration', () => {
  it('the same expiry decision with and without eviction, under a service clock apart from the wall clock', async () => {
    const inMemory = await chatWithPendingCall()
    const hydrated = await chatWithPendingCall()
    // 25 h by the service's clock since the calls were made; 23 h since their parts were written.
    offset = 25 * HOUR

    const a = await turn(ctx, org.auth, inMemory.chatId, { input: [prompt('back')] })
    expect(a.frames[0]!.data.closed_tool_calls).toEqual([inMemory.id])
    expect(ctx.host.evictIdle(Date.now() + 365 * 24 * HOUR)).toBeGreaterThan(0)
    const b = await turn(ctx, org.auth, hydrated.chatId, { input: [prompt('back')] })
    expect(b.frames[0]!.data.closed_tool_calls).toEqual([hydrated.id])

    const first = await tombstoneOf(inMemory.chatId, inMemory.id)
    const second = await tombstoneOf(hydrated.chatId, hydrated.id)
    expect(first.reason).toBe(second.reason)
    // Both follow the ledger's created_at of the call, read against the service's clock.
    const now = Date.now() + SKEW + offset
    for (const { reason, callCreatedAt } of [first, second]) {
      expect(reason).toBe(now - Date.parse(callCreatedAt) > 24 * HOUR ? 'expired' : 'abandoned')
    }
  })
})
