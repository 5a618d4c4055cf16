import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { countRows, createChat, expectError, expectProblem, UUID } from '../../helpers/http.ts'
import { createTestApp, type TestContext, type TestOrg } from '../../helpers/test-app.ts'

const CHAT_CREATED_FIELDS = ['created_at', 'description', 'id', 'namespace', 'title', 'user_metadata']
const CHAT_SUMMARY_FIELDS = [...CHAT_CREATED_FIELDS, 'length', 'updated_at'].sort()

let ctx: TestContext
let org: TestOrg

// One app for the file (building one per test was most of this file's time); each test gets fresh
// organisations and chats of its own.
beforeAll(async () => {
  ctx = await createTestApp()
})
afterAll(async () => {
  await ctx.close()
})
beforeEach(async () => {
  chatsAtStart = countRows(ctx.store, 'chats')
  org = ctx.org()
})
// Rows this test added: the app and its database are the file's (counting from the test's start is
// what counting from an empty database was).
let chatsAtStart = 0
const chatsAdded = () => countRows(ctx.store, 'chats') - chatsAtStart

const post = (payload?: unknown, headers: Record<string, string> = org.auth) =>
  ctx.app.inject({ method: 'POST', url: '/api/v1/chats', headers, ...(payload === undefined ? {} : { payload: payload as object }) })

describe('POST /api/v1/chats', () => {
  it('creates a chat from {} with no namespace, no labels and {} user_metadata; the response is exactly ChatCreated', async () => {
    const res = await post({})
    expect(res.statusCode).toBe(201)
    const body = res.json()
    expect(Object.keys(body).sort()).toEqual(CHAT_CREATED_FIELDS)
    expect(body).toMatchObject({ namespace: null, title: null, description: null, user_metadata: {} })
    expect(body.id).toMatch(UUID)
    expect(new Date(body.created_at).toISOString()).toBe(body.created_at)
    expect(chatsAdded()).toBe(1)
  })

  it('treats a POST with no body at all as {}', async () => {
    const res = await post(undefined)
    expect(res.statusCode).toBe(201)
    expect(res.json()).toMatchObject({ namespace: null, title: null, description: null, user_metadata: {} })
  })

  it('echoes namespace, title, description and user_metadata, and stores them', async () => {
    const metadata = { customer: 'c-42', nested: { tier: 2, tags: ['a', 'b'] }, flag: true, none: null }
    const created = await createChat(ctx.app, org.auth, {
      namespace: 'acme/support',
      title: 'Refund question',
      description: 'Customer asks about a refund',
      user_metadata: metadata,
    })
    expect(created).toMatchObject({
      namespace: 'acme/support',
      title: 'Refund question',
      description: 'Customer asks about a refund',
      user_metadata: metadata,
    })
    const got = await ctx.app.inject({ url: `/api/v1/chats/${created.id}`, headers: org.auth })
    expect(got.json()).toMatchObject({ ...created, length: 0 })
  })

  it('treats empty-string title and description as unset (null)', async () => {
    const created = await createChat(ctx.app, org.auth, { title: '', description: '' })
    expect(created.title).toBeNull()
    expect(created.description).toBeNull()
    const got = (await ctx.app.inject({ url: `/api/v1/chats/${created.id}`, headers: org.auth })).json()
    expect(got.title).toBeNull()
    expect(got.description).toBeNull()
  })

  it('accepts explicit nulls for namespace, title and description', async () => {
    const created = await createChat(ctx.app, org.auth, { namespace: null, title: null, description: null })
    expect(created).toMatchObject({ namespace: null, title: null, description: null, user_metadata: {} })
  })

  it('accepts the limits exactly: title of 50, description of 200, user_metadata of 1024 bytes, namespace of 255', async () => {
    const metadata = { a: 'x'.repeat(1016) }
    expect(Buffer.byteLength(JSON.stringify(metadata))).toBe(1024)
    const namespace = ['a'.repeat(63), 'b'.repeat(63), 'c'.repeat(63), 'd'.repeat(63)].join('/')
    expect(namespace.length).toBe(255)
    const created = await createChat(ctx.app, org.auth, {
      title: 't'.repeat(50),
      description: 'd'.repeat(200),
      user_metadata: metadata,
      namespace,
    })
    expect(created.title).toHaveLength(50)
    expect(created.description).toHaveLength(200)
    expect(created.user_metadata).toEqual(metadata)
    expect(created.namespace).toBe(namespace)
  })

  describe('rejects invalid bodies with 422 validation_failed and writes nothing', () => {
    const cases: Array<[string, unknown, string]> = [
      ['an unknown property', { colour: 'blue' }, '/colour'],
      ['an empty-string namespace', { namespace: '' }, '/namespace'],
      ['an upper-case namespace', { namespace: 'Acme' }, '/namespace'],
      ['a namespace with an empty segment', { namespace: 'acme//support' }, '/namespace'],
      ['a namespace with a leading slash', { namespace: '/acme' }, '/namespace'],
      ['a namespace with a trailing slash', { namespace: 'acme/' }, '/namespace'],
      ['a namespace with a space', { namespace: 'acme support' }, '/namespace'],
      ['a namespace segment of 65 characters', { namespace: 'a'.repeat(65) }, '/namespace'],
      ['a namespace of 256 characters', { namespace: ['a'.repeat(64), 'b'.repeat(64), 'c'.repeat(64), 'd'.repeat(61)].join('/') }, '/namespace'],
      ['a title of 51 characters', { title: 't'.repeat(51) }, '/title'],
      ['a description of 201 characters', { description: 'd'.repeat(201) }, '/description'],
      ['user_metadata over 1024 bytes', { user_metadata: { a: 'x'.repeat(1017) } }, '/user_metadata'],
      ['user_metadata over 1024 bytes in UTF-8 though under 1024 characters', { user_metadata: { a: 'é'.repeat(600) } }, '/user_metadata'],
      ['null user_metadata', { user_metadata: null }, '/user_metadata'],
      ['array user_metadata', { user_metadata: [1, 2] }, '/user_metadata'],
      ['a numeric title', { title: 42 }, '/title'],
    ]
    for (const [name, payload, pointer] of cases) {
      it(name, async () => {
        const res = await post(payload)
        expectProblem(res, 'body', pointer)
        expect(chatsAdded()).toBe(0)
      })
    }

    it('reports every problem of a body, each with its own pointer', async () => {
      const problems = expectProblem(await post({ colour: 'blue', title: 't'.repeat(51), namespace: '' }), 'body', '/colour')
      const pointers = problems.map((p) => p.pointer)
      expect(pointers).toContain('/title')
      expect(pointers).toContain('/namespace')
      expect(chatsAdded()).toBe(0)
    })

    it('rejects a non-object body', async () => {
      const res = await post([1, 2, 3])
      expectError(res, 422, 'validation_failed')
      expect(chatsAdded()).toBe(0)
    })
  })

  it('answers 400 invalid_request to malformed JSON and writes nothing', async () => {
    const res = await post('{"title": "oops"', { ...org.auth, 'content-type': 'application/json' })
    expectError(res, 400, 'invalid_request')
    expect(chatsAdded()).toBe(0)
  })

  it('answers 413 payload_too_large to a body over 1 MiB and writes nothing', async () => {
    const payload = JSON.stringify({ title: 'x', user_metadata: { blob: 'x'.repeat(1024 * 1024) } })
    const res = await post(payload, { ...org.auth, 'content-type': 'application/json' })
    expectError(res, 413, 'payload_too_large')
    expect(chatsAdded()).toBe(0)
  })

  it('validates (422, not 413) a body just under 1 MiB', async () => {
    const payload = JSON.stringify({ user_metadata: { blob: 'x'.repeat(1000 * 1000) } })
    expect(Buffer.byteLength(payload)).toBeLessThan(1024 * 1024)
    expectProblem(await post(payload, { ...org.auth, 'content-type': 'application/json' }), 'body', '/user_metadata')
  })

  it('creates the chat in the key’s organisation only', async () => {
    const other = ctx.org()
    const created = await createChat(ctx.app, org.auth)
    expect((await ctx.app.inject({ url: `/api/v1/chats/${created.id}`, headers: org.auth })).statusCode).toBe(200)
    expect((await ctx.app.inject({ url: `/api/v1/chats/${created.id}`, headers: other.auth })).statusCode).toBe(404)
  })
})

describe('GET /api/v1/chats/{chat_id}', () => {
  it('returns exactly the ChatSummary fields, with length counting the ledger parts', async () => {
    const created = await createChat(ctx.app, org.auth, { namespace: 'acme', title: 'T', user_metadata: { k: 'v' } })
    const res = await ctx.app.inject({ url: `/api/v1/chats/${created.id}`, headers: org.auth })
    expect(res.statusCode).toBe(200)
    const body = res.json()
    expect(Object.keys(body).sort()).toEqual(CHAT_SUMMARY_FIELDS)
    expect(body).toEqual({ ...created, description: null, length: 0, updated_at: expect.any(String) })

    ctx.store.parts.append(created.id, [
      { body: { type: 'prompt', text: 'hi' } },
      { body: { type: 'message', text: 'hello' } },
      { body: { type: 'prompt', text: 'again' } },
    ])
    const after = (await ctx.app.inject({ url: `/api/v1/chats/${created.id}`, headers: org.auth })).json()
    expect(after.length).toBe(3)
  })

  it('answers 400 invalid_request to an identifier that is not a UUID', async () => {
    const error = expectError(await ctx.app.inject({ url: '/api/v1/chats/not-a-uuid', headers: org.auth }), 400, 'invalid_request')
    expect(JSON.stringify(error)).toContain('chat_id')
  })

  it('answers 404 not_found to a missing chat', async () => {
    expectError(await ctx.app.inject({ url: `/api/v1/chats/${randomUUID()}`, headers: org.auth }), 404, 'not_found')
  })

  it('answers another organisation’s chat with a body byte-identical to a missing chat’s', async () => {
    const other = ctx.org()
    const foreign = await createChat(ctx.app, other.auth, { title: 'secret' })
    const foreignRes = await ctx.app.inject({ url: `/api/v1/chats/${foreign.id}`, headers: org.auth })
    // The same id, now genuinely missing.
    expect((await ctx.app.inject({ method: 'DELETE', url: `/api/v1/chats/${foreign.id}`, headers: other.auth })).statusCode).toBe(204)
    const missingRes = await ctx.app.inject({ url: `/api/v1/chats/${foreign.id}`, headers: org.auth })
    expect(foreignRes.statusCode).toBe(404)
    expect(missingRes.statusCode).toBe(404)
    expect(foreignRes.body).toBe(missingRes.body)
    expect(foreignRes.headers['content-type']).toBe(missingRes.headers['content-type'])
    expect(foreignRes.body).not.toContain('secret')
  })
})

describe('DELETE /api/v1/chats/{chat_id}', () => {
  it('deletes the chat and its ledger with 204 and no body; a repeat is 404', async () => {
    const partsAtStart = countRows(ctx.store, 'parts')
    const chat = await createChat(ctx.app, org.auth)
    const keep = await createChat(ctx.app, org.auth)
    ctx.store.parts.append(chat.id, [{ body: { type: 'prompt', text: 'a' } }, { body: { type: 'message', text: 'b' } }])
    ctx.store.parts.append(keep.id, [{ body: { type: 'prompt', text: 'c' } }])

    const res = await ctx.app.inject({ method: 'DELETE', url: `/api/v1/chats/${chat.id}`, headers: org.auth })
    expect(res.statusCode).toBe(204)
    expect(res.body).toBe('')

    expectError(await ctx.app.inject({ url: `/api/v1/chats/${chat.id}`, headers: org.auth }), 404, 'not_found')
    expectError(await ctx.app.inject({ url: `/api/v1/chats/${chat.id}/history`, headers: org.auth }), 404, 'not_found')
    expectError(await ctx.app.inject({ method: 'DELETE', url: `/api/v1/chats/${chat.id}`, headers: org.auth }), 404, 'not_found')

    const parts = ctx.store.db.prepare('SELECT chat_id FROM parts WHERE chat_id IN (?, ?)').all(chat.id, keep.id) as { chat_id: string }[]
    expect(parts).toEqual([{ chat_id: keep.id }])
    expect(countRows(ctx.store, 'parts') - partsAtStart).toBe(1)
    expect(chatsAdded()).toBe(1)
  })

  it('answers 400 invalid_request to an identifier that is not a UUID', async () => {
    await createChat(ctx.app, org.auth)
    expectError(await ctx.app.inject({ method: 'DELETE', url: '/api/v1/chats/123', headers: org.auth }), 400, 'invalid_request')
    expect(chatsAdded()).toBe(1)
  })

  it('answers 404 to a missing chat', async () => {
    expectError(await ctx.app.inject({ method: 'DELETE', url: `/api/v1/chats/${randomUUID()}`, headers: org.auth }), 404, 'not_found')
  })

  it('leaves another organisation’s chat alone and answers exactly as for a missing chat', async () => {
    const other = ctx.org()
    const foreign = await createChat(ctx.app, other.auth)
    const foreignRes = await ctx.app.inject({ method: 'DELETE', url: `/api/v1/chats/${foreign.id}`, headers: org.auth })
    expect(foreignRes.statusCode).toBe(404)
    expect((await ctx.app.inject({ url: `/api/v1/chats/${foreign.id}`, headers: other.auth })).statusCode).toBe(200)

    await ctx.app.inject({ method: 'DELETE', url: `/api/v1/chats/${foreign.id}`, headers: other.auth })
    const missingRes = await ctx.app.inject({ method: 'DELETE', url: `/api/v1/chats/${foreign.id}`, headers: org.auth })
    expect(foreignRes.body).toBe(missingRes.body)
  })
})
