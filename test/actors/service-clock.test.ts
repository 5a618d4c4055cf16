import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createTestApp, type TestContext, type TestOrg } from '../helpers/test-app.ts'
import { fundedOrg, newChat, prompt, sandboxCatalogue, turn } from '../helpers/turns.ts'

// issue 12, one clock: a service clock far from the wall clock, and standing still, so that any
// timestamp the store took from the wall clock instead would show.
const AT = '2031-05-06T07:08:09.010Z'

let ctx: TestContext
let org: TestOrg

beforeEach(async () => {
  ctx = await createTestApp({ catalogue: sandboxCatalogue(), now: () => new Date(AT) })
  org = fundedOrg(ctx)
})
afterEach(async () => {
  await ctx.close()
})

describe('every time a turn writes comes from the service clock (createStore(db, { now }), deps.now)', () => {
  it("a turn's parts, tombstones, run, balance entries and provider call, and its chat, carry the clock's time", async () => {
    const chatId = await newChat(ctx, org.auth)
    const first = await turn(ctx, org.auth, chatId, { input: [prompt('/tool weather {"city":"Oslo"}')] })
    expect(first.of('done')[0]!.data.stop_reason).toBe('tool_use')
    // The pending call is closed by a tombstone that admission writes.
    const second = await turn(ctx, org.auth, chatId, { input: [prompt('back')] })
    expect(second.of('done')).toHaveLength(1)

    const { rows: parts } = ctx.store.parts.page({ chatId, limit: 100 })
    expect(parts.map((p) => p.kind)).toEqual(expect.arrayContaining(['prompt', 'tool_call', 'tool_result', 'message']))
    expect(new Set(parts.map((p) => p.created_at))).toEqual(new Set([AT]))

    for (const runId of [first.runId, second.runId]) {
      const run = ctx.store.runs.getById(runId)!
      expect(run.status).toBe('succeeded')
      expect({ created_at: run.created_at, completed_at: run.completed_at, settled_at: run.settled_at }).toEqual({
        created_at: AT,
        completed_at: AT,
        settled_at: AT,
      })
    }

    const entries = ctx.store.db
      .prepare<[string], { entry_type: string; occurred_at: string }>('SELECT entry_type, occurred_at FROM balance_entries WHERE org_id = ? ORDER BY rowid')
      .all(org.orgId)
    expect(entries.map((e) => e.entry_type)).toEqual(['topup', 'usage', 'usage'])
    expect(new Set(entries.map((e) => e.occurred_at))).toEqual(new Set([AT]))

    // The uptime samples of the two provider calls are dated by the same clock.
    const calls = ctx.store.db.prepare<[], { started_at: string }>('SELECT started_at FROM provider_calls').all()
    expect(calls).toHaveLength(2)
    expect(new Set(calls.map((c) => c.started_at))).toEqual(new Set([AT]))

    const chat = ctx.store.chats.get(org.orgId, chatId)!
    expect({ created_at: chat.created_at, updated_at: chat.updated_at }).toEqual({ created_at: AT, updated_at: AT })
  })
})
