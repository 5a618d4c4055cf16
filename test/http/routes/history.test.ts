import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { PartBody } from '../../../src/domain/parts.ts'
import { createChat, expectError, expectProblem, UUID, type Auth } from '../../helpers/http.ts'
import { createTestApp, type TestContext, type TestOrg } from '../../helpers/test-app.ts'

type HistoryPart = { id: string; ordinal: number; created_at: string; role: string; part: PartBody; user_metadata: unknown }
type HistoryPage = { data: HistoryPart[]; first_ordinal: number | null; last_ordinal: number | null; has_more: boolean }

let ctx: TestContext
let org: TestOrg

// One app for the file: every test works in its own organisation (decision 019).
beforeAll(async () => {
  ctx = await createTestApp()
})
afterAll(async () => {
  await ctx.close()
})
beforeEach(() => {
  org = ctx.org()
})

async function history(chatId: string, query = '', auth: Auth = org.auth): Promise<HistoryPage> {
  const res = await ctx.app.inject({ url: `/api/v1/chats/${chatId}/history${query}`, headers: auth })
  expect(res.statusCode, res.body).toBe(200)
  return res.json()
}

/** Appends `count` prompts one append at a time; returns their ordinals, oldest first. */
function seedPrompts(chatId: string, count: number, label = 'p'): number[] {
  const rows = ctx.store.parts.append(
    chatId,
    Array.from({ length: count }, (_, i) => ({ body: { type: 'prompt' as const, text: `${label}${i}` } })),
  )
  return rows.map((r) => r.ordinal)
}

const ordinals = (page: HistoryPage) => page.data.map((p) => p.ordinal)
const EMPTY = { data: [], first_ordinal: null, last_ordinal: null, has_more: false }

describe('GET /api/v1/chats/{chat_id}/history', () => {
  it('returns every part kind with its body, the derived role and user_metadata, oldest first', async () => {
    const chat = await createChat(ctx.app, org.auth)
    const bodies: PartBody[] = [
      { type: 'prompt', text: 'What is the weather?' },
      { type: 'reasoning', text: '' },
      { type: 'tool_call', arguments: '{"city":"Oslo"}', tool_name: 'weather', tool_use_id: 'tu_1' },
      { type: 'tool_result', text: 'rain', is_error: false, tool_name: 'weather', tool_use_id: 'tu_1', trust: 'customer_data' },
      { type: 'message', text: 'It rains in Oslo.' },
    ]
    ctx.store.parts.append(
      chat.id,
      bodies.map((body, i) => ({ body, userMetadata: i === 0 ? { source: 'web', n: 1 } : undefined })),
    )

    const page = await history(chat.id)
    expect(page.data.map((p) => p.part)).toEqual(bodies)
    expect(page.data.map((p) => p.role)).toEqual(['user', 'assistant', 'assistant', 'user', 'assistant'])
    expect(page.data[0]!.user_metadata).toEqual({ source: 'web', n: 1 })
    expect(page.data[1]!.user_metadata).toEqual({})
    for (const part of page.data) {
      expect(Object.keys(part).sort()).toEqual(['created_at', 'id', 'ordinal', 'part', 'role', 'user_metadata'])
      expect(part.id).toMatch(UUID)
      expect(new Date(part.created_at).toISOString()).toBe(part.created_at)
    }
    const ords = ordinals(page)
    expect(ords).toEqual([...ords].sort((a, b) => a - b))
    expect(new Set(ords).size).toBe(5)
    expect(page.first_ordinal).toBe(ords[0])
    expect(page.last_ordinal).toBe(ords[4])
    expect(page.has_more).toBe(false)
  })

  it('never returns the vendor replay data stored with reasoning, tool calls and messages (decision 026)', async () => {
    const chat = await createChat(ctx.app, org.auth)
    const replay = (secret: string) => ({ provider: 'google', metadata: { google: { thoughtSignature: secret } } })
    const stored: PartBody[] = [
      { type: 'prompt', text: 'A prompt that says "replay": {"x": 1} is returned as written.' },
      { type: 'reasoning', text: 'Think.', replay: replay('sig-reasoning') },
      { type: 'tool_call', arguments: '{"city":"Oslo"}', tool_name: 'weather', tool_use_id: 'tu_1', replay: replay('sig-call') },
      { type: 'tool_result', text: 'rain', is_error: false, tool_name: 'weather', tool_use_id: 'tu_1', trust: 'customer_data' },
      { type: 'message', text: 'It rains.', refusal: null, replay: replay('sig-text') },
    ]
    ctx.store.parts.append(chat.id, stored.map((body) => ({ body })))

    const res = await ctx.app.inject({ url: `/api/v1/chats/${chat.id}/history`, headers: org.auth })
    expect(res.statusCode, res.body).toBe(200)
    for (const secret of ['sig-reasoning', 'sig-call', 'sig-text']) expect(res.body).not.toContain(secret)
    expect((res.json() as HistoryPage).data.map((p) => p.part)).toEqual(stored.map(({ replay: _replay, ...body }: any) => body))
  })

  it('returns the optional fields of tool_result and message parts', async () => {
    const chat = await createChat(ctx.app, org.auth)
    const bodies: PartBody[] = [
      { type: 'tool_result', text: '', is_error: true, tool_name: 'search', tool_use_id: 'tu_9', trust: 'untrusted', tombstone_reason: 'abandoned' },
      { type: 'message', text: '', refusal: 'I cannot help with that.' },
      { type: 'message', text: 'plain', refusal: null },
    ]
    ctx.store.parts.append(chat.id, bodies.map((body) => ({ body })))
    const page = await history(chat.id)
    expect(page.data.map((p) => p.part)).toEqual(bodies)
    expect(page.data.map((p) => p.role)).toEqual(['user', 'assistant', 'assistant'])
  })

  it('keeps ChatSummary.length equal to the number of parts', async () => {
    const chat = await createChat(ctx.app, org.auth)
    seedPrompts(chat.id, 4)
    ctx.store.parts.append(chat.id, [{ body: { type: 'message', text: 'x' } }, { body: { type: 'reasoning', text: 'y' } }])
    const summary = (await ctx.app.inject({ url: `/api/v1/chats/${chat.id}`, headers: org.auth })).json()
    expect(summary.length).toBe(6)
    const listed = (await ctx.app.inject({ url: '/api/v1/chats', headers: org.auth })).json()
    expect(listed.data[0].length).toBe(6)
    expect((await history(chat.id)).data).toHaveLength(6)
  })

  it('returns an empty page with null ordinals for an empty chat', async () => {
    const chat = await createChat(ctx.app, org.auth)
    expect(await history(chat.id)).toEqual(EMPTY)
  })

  describe('paging', () => {
    it('returns the newest page by default and pages back with before_ordinal', async () => {
      const chat = await createChat(ctx.app, org.auth)
      const all = seedPrompts(chat.id, 130)
      const newest = await history(chat.id)
      expect(ordinals(newest)).toEqual(all.slice(30))
      expect(newest).toMatchObject({ first_ordinal: all[30], last_ordinal: all[129], has_more: true })
      expect(newest.data[0]!.part).toEqual({ type: 'prompt', text: 'p30' })

      const older = await history(chat.id, `?before_ordinal=${newest.first_ordinal}`)
      expect(ordinals(older)).toEqual(all.slice(0, 30))
      expect(older).toMatchObject({ first_ordinal: all[0], last_ordinal: all[29], has_more: false })

      expect(await history(chat.id, `?before_ordinal=${older.first_ordinal}`)).toEqual(EMPTY)
    })

    it('walks the whole ledger backwards and forwards with the cursors it is given', async () => {
      const chat = await createChat(ctx.app, org.auth)
      const all = seedPrompts(chat.id, 23)

      const back: number[][] = []
      let page = await history(chat.id, '?limit=5')
      back.push(ordinals(page))
      while (page.has_more) {
        page = await history(chat.id, `?limit=5&before_ordinal=${page.first_ordinal}`)
        back.push(ordinals(page))
      }
      expect(back.map((p) => p.length)).toEqual([5, 5, 5, 5, 3])
      expect(back.reverse().flat()).toEqual(all)

      const forward: number[][] = []
      page = await history(chat.id, `?limit=5&after_ordinal=0`)
      forward.push(ordinals(page))
      while (page.has_more) {
        page = await history(chat.id, `?limit=5&after_ordinal=${page.last_ordinal}`)
        forward.push(ordinals(page))
      }
      expect(forward.map((p) => p.length)).toEqual([5, 5, 5, 5, 3])
      expect(forward.flat()).toEqual(all)
      expect(await history(chat.id, `?after_ordinal=${all.at(-1)}`)).toEqual(EMPTY)
    })

    it('reports has_more for the direction paged', async () => {
      const chat = await createChat(ctx.app, org.auth)
      const all = seedPrompts(chat.id, 10)
      // Forward from the middle: newer parts remain, older ones are not what has_more is about.
      const forward = await history(chat.id, `?limit=3&after_ordinal=${all[2]}`)
      expect(ordinals(forward)).toEqual(all.slice(3, 6))
      expect(forward.has_more).toBe(true)
      const forwardToEnd = await history(chat.id, `?limit=4&after_ordinal=${all[5]}`)
      expect(ordinals(forwardToEnd)).toEqual(all.slice(6))
      expect(forwardToEnd.has_more).toBe(false)
      // Backward from the middle: older parts remain.
      const backward = await history(chat.id, `?limit=3&before_ordinal=${all[7]}`)
      expect(ordinals(backward)).toEqual(all.slice(4, 7))
      expect(backward.has_more).toBe(true)
      const backwardToStart = await history(chat.id, `?limit=4&before_ordinal=${all[4]}`)
      expect(ordinals(backwardToStart)).toEqual(all.slice(0, 4))
      expect(backwardToStart.has_more).toBe(false)
    })

    it('never renumbers ordinals: deleting another chat leaves gaps that are never reused', async () => {
      const a = await createChat(ctx.app, org.auth)
      const b = await createChat(ctx.app, org.auth)
      const aOrdinals: number[] = []
      const bOrdinals: number[] = []
      for (let i = 0; i < 4; i++) {
        aOrdinals.push(...seedPrompts(a.id, 1, `a${i}-`))
        bOrdinals.push(...seedPrompts(b.id, 1, `b${i}-`))
      }
      const before = await history(b.id)
      expect(ordinals(before)).toEqual(bOrdinals)

      await ctx.app.inject({ method: 'DELETE', url: `/api/v1/chats/${a.id}`, headers: org.auth })
      const after = await history(b.id)
      expect(after).toEqual(before)

      const [next] = seedPrompts(b.id, 1, 'late')
      const maxSeen = Math.max(...aOrdinals, ...bOrdinals)
      expect(next).toBeGreaterThan(maxSeen)
      const c = await createChat(ctx.app, org.auth)
      const cOrdinals = seedPrompts(c.id, 3)
      for (const ordinal of cOrdinals) {
        expect(ordinal).toBeGreaterThan(next!)
        expect(aOrdinals).not.toContain(ordinal)
      }

      // The ledger has gaps: the last ordinal is not length - 1, and paging follows the cursors across them.
      const summary = (await ctx.app.inject({ url: `/api/v1/chats/${b.id}`, headers: org.auth })).json()
      expect(summary.length).toBe(5)
      const visited: number[] = []
      let page = await history(b.id, '?limit=1')
      visited.unshift(...ordinals(page))
      while (page.has_more) {
        page = await history(b.id, `?limit=1&before_ordinal=${page.first_ordinal}`)
        visited.unshift(...ordinals(page))
      }
      expect(visited).toEqual([...bOrdinals, next])
    })
  })

  describe('limit', () => {
    it('clamps to 1-100', async () => {
      const chat = await createChat(ctx.app, org.auth)
      const all = seedPrompts(chat.id, 105)
      for (const limit of ['0', '-3']) {
        const page = await history(chat.id, `?limit=${limit}`)
        expect(ordinals(page)).toEqual([all[104]])
        expect(page.has_more).toBe(true)
      }
      const big = await history(chat.id, '?limit=1000')
      expect(ordinals(big)).toEqual(all.slice(5))
      expect(big.has_more).toBe(true)
      expect((await history(chat.id, '?limit=1000&include=stubs')).data).toHaveLength(100)
      expect((await history(chat.id, '?limit=1000&include=none')).data).toHaveLength(100)
    })

    it('clamps to 1-20 with include=full', async () => {
      const chat = await createChat(ctx.app, org.auth)
      const all = seedPrompts(chat.id, 30)
      const big = await history(chat.id, '?include=full&limit=1000')
      expect(ordinals(big)).toEqual(all.slice(10))
      expect(big.has_more).toBe(true)
      expect((await history(chat.id, '?include=full&limit=50')).data).toHaveLength(20)
      expect((await history(chat.id, '?include=full')).data.length).toBeLessThanOrEqual(20)
      expect((await history(chat.id, '?include=full&limit=0')).data).toHaveLength(1)
      expect((await history(chat.id, '?include=full&limit=7')).data).toHaveLength(7)
    })

    it('rejects a non-integer limit with 422', async () => {
      const chat = await createChat(ctx.app, org.auth)
      for (const limit of ['ten', '2.5']) {
        expectProblem(await ctx.app.inject({ url: `/api/v1/chats/${chat.id}/history?limit=${limit}`, headers: org.auth }), 'query', '/limit')
      }
    })
  })

  describe('query validation', () => {
    it('accepts include=stubs, none and full', async () => {
      const chat = await createChat(ctx.app, org.auth)
      seedPrompts(chat.id, 2)
      for (const include of ['stubs', 'none', 'full']) {
        expect((await history(chat.id, `?include=${include}`)).data).toHaveLength(2)
      }
    })

    it('rejects any other include value with 422', async () => {
      const chat = await createChat(ctx.app, org.auth)
      for (const include of ['all', 'FULL', '']) {
        expectProblem(await ctx.app.inject({ url: `/api/v1/chats/${chat.id}/history?include=${include}`, headers: org.auth }), 'query', '/include')
      }
    })

    it('rejects unknown query parameters with 422', async () => {
      const chat = await createChat(ctx.app, org.auth)
      expectProblem(await ctx.app.inject({ url: `/api/v1/chats/${chat.id}/history?colour=blue`, headers: org.auth }), 'query', '/colour')
      expectProblem(await ctx.app.inject({ url: `/api/v1/chats/${chat.id}/history?limit=5&after_id=${randomUUID()}`, headers: org.auth }), 'query', '/after_id')
    })

    it('rejects before_ordinal together with after_ordinal with 422', async () => {
      const chat = await createChat(ctx.app, org.auth)
      const [first, second] = seedPrompts(chat.id, 2)
      const res = await ctx.app.inject({ url: `/api/v1/chats/${chat.id}/history?before_ordinal=${second}&after_ordinal=${first}`, headers: org.auth })
      const error = expectError(res, 422, 'validation_failed')
      const problems = (error.details as { problems: { in: string; pointer: string }[] }).problems
      expect(problems.some((p) => p.in === 'query' && ['/before_ordinal', '/after_ordinal'].includes(p.pointer))).toBe(true)
    })

    it('rejects non-integer ordinals with 422', async () => {
      const chat = await createChat(ctx.app, org.auth)
      expectProblem(await ctx.app.inject({ url: `/api/v1/chats/${chat.id}/history?before_ordinal=abc`, headers: org.auth }), 'query', '/before_ordinal')
      expectProblem(await ctx.app.inject({ url: `/api/v1/chats/${chat.id}/history?after_ordinal=1.5`, headers: org.auth }), 'query', '/after_ordinal')
    })
  })

  describe('addressing', () => {
    it('answers 400 to a chat id that is not a UUID', async () => {
      expectError(await ctx.app.inject({ url: '/api/v1/chats/xyz/history', headers: org.auth }), 400, 'invalid_request')
    })

    it('answers 404 to a missing chat', async () => {
      expectError(await ctx.app.inject({ url: `/api/v1/chats/${randomUUID()}/history`, headers: org.auth }), 404, 'not_found')
    })

    it('answers another organisation’s chat byte-identically to a missing one and leaks no parts', async () => {
      const other = ctx.org()
      const foreign = await createChat(ctx.app, other.auth)
      ctx.store.parts.append(foreign.id, [{ body: { type: 'prompt', text: 'top secret' } }])
      const foreignRes = await ctx.app.inject({ url: `/api/v1/chats/${foreign.id}/history`, headers: org.auth })
      await ctx.app.inject({ method: 'DELETE', url: `/api/v1/chats/${foreign.id}`, headers: other.auth })
      const missingRes = await ctx.app.inject({ url: `/api/v1/chats/${foreign.id}/history`, headers: org.auth })
      expect(foreignRes.statusCode).toBe(404)
      expect(foreignRes.body).toBe(missingRes.body)
      expect(foreignRes.body).not.toContain('top secret')
    })
  })
})
