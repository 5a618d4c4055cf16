import { randomUUID } from 'node:crypto'
import { beforeEach, describe, expect, it } from 'vitest'
import { countRows, expectError, expectProblem, UUID } from '../../helpers/http.ts'
import { PNG_3X2_B64 } from '../../helpers/media-fixtures.ts'
import type { TestContext, TestOrg } from '../../helpers/test-app.ts'
import { prose } from '../../helpers/compaction-turns.ts'
import { fundedOrg, history, newChat, postTurn, turn, useSandboxChat } from '../../helpers/turns.ts'

// One app for the file, a fresh funded organisation for each test; chats are made by the tests (test/helpers/turns.ts).
const sandbox = useSandboxChat({ chat: false })
let ctx: TestContext
let org: TestOrg
beforeEach(() => {
  ;({ ctx, org } = sandbox)
})

const fork = (chatId: string, payload?: unknown, auth = org.auth) =>
  ctx.app.inject({ method: 'POST', url: `/api/v1/chats/${chatId}/fork`, headers: auth, ...(payload === undefined ? {} : { payload: payload as object }) })
const forked = async (chatId: string, payload?: unknown) => {
  const res = await fork(chatId, payload)
  expect(res.statusCode, res.body).toBe(201)
  return res.json() as { id: string; namespace: string | null; title: string | null; description: string | null; user_metadata: unknown; created_at: string }
}
const say = (chatId: string, text: string, extra: Record<string, unknown> = {}) =>
  turn(ctx, org.auth, chatId, { input: [{ type: 'prompt', text, ...extra }] })
/** The history as a client compares it: kinds and bodies in order, without ids. */
const bodies = async (chatId: string) => (await history(ctx, org.auth, chatId, '?limit=100')).data.map((p) => ({ role: p.role, part: p.part, media: p.media ?? null }))

describe('POST /api/v1/chats/{chat_id}/fork', () => {
  it('answers 201 with a new chat shaped as creation answers, in the source namespace, with the labels sent', async () => {
    const source = await newChat(ctx, org.auth, { namespace: 'acme/support', title: 'Source', user_metadata: { a: 1 } })
    await say(source, 'hello')
    const res = await fork(source, { title: 'Branch', description: 'try again', user_metadata: { branch: true } })
    expect(res.statusCode).toBe(201)
    const body = res.json()
    expect(Object.keys(body).sort()).toEqual(['created_at', 'description', 'id', 'namespace', 'title', 'user_metadata'])
    expect(body).toMatchObject({ namespace: 'acme/support', title: 'Branch', description: 'try again', user_metadata: { branch: true } })
    expect(body.id).toMatch(UUID)
    expect(body.id).not.toBe(source)
    const summary = (await ctx.app.inject({ url: `/api/v1/chats/${body.id}`, headers: org.auth })).json()
    expect(summary.length).toBe(2)
  })

  it('with no body copies the whole ledger, same order and bodies, new part ids, ordinals in the same order above every earlier one', async () => {
    const source = await newChat(ctx, org.auth)
    await say(source, '/think first\nhello')
    await say(source, 'again')
    const created = await forked(source, undefined)
    expect(created).toMatchObject({ title: null, description: null, user_metadata: {} })
    expect(await bodies(created.id)).toEqual(await bodies(source))
    const from = (await history(ctx, org.auth, source)).data
    const to = (await history(ctx, org.auth, created.id)).data
    expect(to.map((p) => p.id).filter((id) => from.some((q) => q.id === id))).toEqual([])
    // One offset: the gaps between ordinals are kept, and every fork ordinal is new.
    const offset = to[0].ordinal - from[0].ordinal
    expect(offset).toBeGreaterThan(0)
    expect(to.map((p) => p.ordinal - offset)).toEqual(from.map((p) => p.ordinal))
    expect(to[0].ordinal).toBeGreaterThan(from.at(-1).ordinal)
  })

  it('copies up to up_to_ordinal and no further', async () => {
    const source = await newChat(ctx, org.auth)
    await say(source, 'one')
    await say(source, 'two')
    const from = (await history(ctx, org.auth, source)).data
    const created = await forked(source, { up_to_ordinal: from[1].ordinal })
    expect((await bodies(created.id)).map((p) => p.part)).toEqual([from[0].part, from[1].part])
  })

  it('copies attachments sharing their stored bytes; deleting either chat leaves the other whole', async () => {
    for (const deleteFirst of ['source', 'fork'] as const) {
      const source = await newChat(ctx, org.auth)
      await say(source, 'look', { media: [{ mime: 'image/png', data_base64: PNG_3X2_B64, filename: 'p.png' }] })
      const created = await forked(source)
      const blobs = countRows(ctx.store, 'media_blobs' as never)
      const [a, b] = [await bodies(source), await bodies(created.id)]
      expect(b.map((p) => p.part)).toEqual(a.map((p) => p.part))
      expect(b[0]!.media[0]).toMatchObject({ mime: "image/png", filename: "p.png", byte_len: a[0]!.media[0].byte_len })
      expect(b[0]!.media[0].media_id).not.toBe(a[0]!.media[0].media_id)
      const gone = deleteFirst === 'source' ? source : created.id
      const kept = deleteFirst === 'source' ? created.id : source
      const before = await ctx.app.inject({ url: `/api/v1/chats/${kept}/history?include=full`, headers: org.auth })
      expect((await ctx.app.inject({ method: 'DELETE', url: `/api/v1/chats/${gone}`, headers: org.auth })).statusCode).toBe(204)
      const after = await ctx.app.inject({ url: `/api/v1/chats/${kept}/history?include=full`, headers: org.auth })
      expect(after.statusCode).toBe(200)
      expect(after.body).toBe(before.body)
      expect(after.json().data[0].media[0].data_base64).toBe(PNG_3X2_B64)
      expect(countRows(ctx.store, 'media_blobs' as never)).toBe(blobs)
      // The survivor still takes turns.
      await say(kept, 'still here')
    }
  })

  it('a new prompt in the fork gets its own answer; the source is unchanged (edit and regenerate)', async () => {
    const source = await newChat(ctx, org.auth)
    await say(source, 'first question')
    await say(source, 'second question')
    const before = await bodies(source)
    const firstAnswer = (await history(ctx, org.auth, source)).data[1].ordinal
    const created = await forked(source, { up_to_ordinal: firstAnswer })
    const regenerated = await say(created.id, 'second question, edited')
    expect(regenerated.of('done')).toHaveLength(1)
    expect((await bodies(created.id)).map((p) => p.part)).toEqual([
      before[0]!.part,
      before[1]!.part,
      { type: 'prompt', text: 'second question, edited' },
      { type: 'message', text: 'echo: second question, edited' },
    ])
    expect(await bodies(source)).toEqual(before)
  })

  it('forks in the middle of a tool round trip: the call is pending in the fork, its result is accepted there, the source is unchanged', async () => {
    const source = await newChat(ctx, org.auth)
    const asked = await say(source, '/tool lookup {"order":42}')
    expect(asked.of('done')[0]!.data.pending_tool_calls).toHaveLength(1)
    const call = asked.of('done')[0]!.data.pending_tool_calls[0]
    const created = await forked(source)
    // The source goes on and answers the call itself.
    await turn(ctx, org.auth, source, { input: [{ type: 'tool_result', tool_use_id: call.tool_use_id, tool_name: 'lookup', text: 'shipped' }] })
    const sourceAfter = await bodies(source)

    // An id that is not pending in the fork is refused there, as anywhere.
    const unknown = await postTurn(ctx, org.auth, created.id, {
      model: 'sandbox/echo',
      input: [{ type: 'tool_result', tool_use_id: 'nope', tool_name: 'lookup', text: 'x' }],
    })
    expectError(unknown, 422, 'unknown_tool_use_id')
    const answered = await turn(ctx, org.auth, created.id, {
      input: [{ type: 'tool_result', tool_use_id: call.tool_use_id, tool_name: 'lookup', text: 'lost in transit' }],
    })
    expect(answered.of('run')[0]!.data.closed_tool_calls).toEqual([call.tool_use_id])
    const parts = (await bodies(created.id)).map((p) => p.part)
    expect(parts.at(-2)).toMatchObject({ type: 'tool_result', tool_use_id: call.tool_use_id, text: 'lost in transit' })
    expect(parts.filter((p) => p.type === 'tool_result')).toHaveLength(1)
    expect(await bodies(source)).toEqual(sourceAfter)
  })

  it('a call the cut leaves before its result is pending in the fork, though the source answered it', async () => {
    const source = await newChat(ctx, org.auth)
    const asked = await say(source, '/tool lookup {"order":42}')
    const call = asked.of('done')[0]!.data.pending_tool_calls[0]
    await turn(ctx, org.auth, source, { input: [{ type: 'tool_result', tool_use_id: call.tool_use_id, tool_name: 'lookup', text: 'shipped' }] })
    const from = (await history(ctx, org.auth, source)).data
    const callOrdinal = from.find((p) => p.part.type === 'tool_call').ordinal
    const created = await forked(source, { up_to_ordinal: callOrdinal })
    // Not answered: the next prompt closes it with a tombstone, as in any chat.
    const next = await say(created.id, 'never mind')
    expect(next.of('run')[0]!.data.closed_tool_calls).toEqual([call.tool_use_id])
    const parts = (await bodies(created.id)).map((p) => p.part)
    expect(parts.find((p) => p.type === 'tool_result')).toMatchObject({ tool_use_id: call.tool_use_id, tombstone_reason: 'abandoned' })
  })

  it('deleting the fork leaves the source whole, and deleting the source leaves the fork whole', async () => {
    const source = await newChat(ctx, org.auth)
    await say(source, 'keep me')
    const a = await forked(source)
    const b = await forked(source)
    const sourceBodies = await bodies(source)
    expect((await ctx.app.inject({ method: 'DELETE', url: `/api/v1/chats/${a.id}`, headers: org.auth })).statusCode).toBe(204)
    expect(await bodies(source)).toEqual(sourceBodies)
    expect((await ctx.app.inject({ method: 'DELETE', url: `/api/v1/chats/${source}`, headers: org.auth })).statusCode).toBe(204)
    expect(await bodies(b.id)).toEqual(sourceBodies)
    await say(b.id, 'and on')
  })

  it('answers 422 at /up_to_ordinal for an ordinal beyond the ledger, below 1, or in an empty ledger; nothing is written', async () => {
    const source = await newChat(ctx, org.auth)
    await say(source, 'one')
    const last = (await history(ctx, org.auth, source)).last_ordinal!
    const chats = countRows(ctx.store, 'chats')
    for (const up_to_ordinal of [last + 1, 0, -3]) {
      const res = await fork(source, { up_to_ordinal })
      expectError(res, 422, 'validation_failed')
      expectProblem(res, 'body', '/up_to_ordinal')
    }
    const empty = await newChat(ctx, org.auth)
    expectProblem(await fork(empty, { up_to_ordinal: 1 }), 'body', '/up_to_ordinal')
    expect(countRows(ctx.store, 'chats')).toBe(chats + 1)
    // An empty ledger forks whole into an empty chat.
    expect((await forked(empty)).id).toMatch(UUID)
  })

  it('validates title, description and user_metadata as chat creation does, and refuses a namespace', async () => {
    const source = await newChat(ctx, org.auth)
    for (const [payload, pointer] of [
      [{ title: 'x'.repeat(51) }, '/title'],
      [{ description: 'x'.repeat(201) }, '/description'],
      [{ user_metadata: { a: 'x'.repeat(1017) } }, '/user_metadata'],
      [{ user_metadata: [] }, '/user_metadata'],
      [{ namespace: 'other' }, '/namespace'],
    ] as const) {
      const res = await fork(source, payload)
      expectError(res, 422, 'validation_failed')
      expectProblem(res, 'body', pointer)
    }
    expect(await forked(source, { title: '', description: '' })).toMatchObject({ title: null, description: null })
  })

  it('answers another organisation’s chat with a body byte-identical to a missing chat’s, and copies nothing', async () => {
    const other = fundedOrg(ctx)
    const foreign = await newChat(ctx, other.auth, { title: 'secret' })
    await turn(ctx, other.auth, foreign, { input: [{ type: 'prompt', text: 'private' }] })
    const chats = countRows(ctx.store, 'chats')
    const foreignRes = await fork(foreign, {})
    expect((await ctx.app.inject({ method: 'DELETE', url: `/api/v1/chats/${foreign}`, headers: other.auth })).statusCode).toBe(204)
    const missingRes = await fork(foreign, {})
    expect(foreignRes.statusCode).toBe(404)
    expect(foreignRes.body).toBe(missingRes.body)
    expect(foreignRes.headers['content-type']).toBe(missingRes.headers['content-type'])
    expect(countRows(ctx.store, 'chats')).toBe(chats - 1)
    expectError(await fork(randomUUID(), {}), 404, 'not_found')
    expectError(await fork('123', {}), 400, 'invalid_request')
  })

  it('a fork of a compacted chat reuses its summaries (blocks_reused) and makes no compaction run', async () => {
    const source = await newChat(ctx, org.auth)
    let i = 0
    let compaction: any = null
    while (!compaction?.blocks_generated) {
      const t = await turn(ctx, org.auth, source, { model: 'sandbox/echo-8k', input: [{ type: 'prompt', text: prose(i++, 600) }] })
      compaction = t.of('done')[0]!.data.compaction
      expect(i).toBeLessThan(20)
    }
    const summaries = ctx.store.summaries.ofChat(source)
    expect(summaries.length).toBeGreaterThan(0)
    const created = await forked(source)
    const copied = ctx.store.summaries.ofChat(created.id)
    expect(copied.map((s) => s.text)).toEqual(summaries.map((s) => s.text))
    const next = await turn(ctx, org.auth, created.id, { model: 'sandbox/echo-8k', input: [{ type: 'prompt', text: 'short' }] })
    expect(next.events).not.toContain('compacting')
    const done = next.of('done')[0]!.data.compaction
    expect(done).toMatchObject({ blocks_generated: 0, in_progress_elsewhere: 0 })
    expect(done.blocks_reused).toBeGreaterThan(0)
    const runs = ctx.store.db.prepare(`SELECT origin FROM runs WHERE chat_id = ?`).all(created.id) as { origin: string }[]
    expect(runs).toEqual([{ origin: 'customer' }])
  })
})
