import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { CHAT_PAGE_DEFAULT } from '../../../src/domain/paging.ts'
import { createChat, expectError, expectProblem, listChats } from '../../helpers/http.ts'
import { createTestApp, type TestContext, type TestOrg } from '../../helpers/test-app.ts'

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

/** Creates chats oldest first through the store (fast); returns their ids oldest first. */
function seedChats(orgId: string, count: number, namespace: string | null = null): string[] {
  return Array.from({ length: count }, (_, i) =>
    ctx.store.chats.create({ orgId, namespace, title: `chat ${i}`, description: null, userMetadata: {} }).id,
  )
}

const ids = (page: { data: { id: string }[] }) => page.data.map((c) => c.id)

describe('GET /api/v1/chats', () => {
  it('lists the organisation’s chats newest first as ChatSummary, never another organisation’s', async () => {
    const other = ctx.org()
    const mine: string[] = []
    for (let i = 0; i < 4; i++) {
      mine.push((await createChat(ctx.app, org.auth, { title: `mine ${i}` })).id)
      await createChat(ctx.app, other.auth, { title: `theirs ${i}` })
    }
    const page = await listChats(ctx.app, org.auth)
    expect(ids(page)).toEqual([...mine].reverse())
    expect(page.first_id).toBe(mine[3])
    expect(page.last_id).toBe(mine[0])
    expect(page.has_more).toBe(false)
    expect(Object.keys(page).sort()).toEqual(['data', 'first_id', 'has_more', 'last_id'])
    expect(Object.keys(page.data[0]!).sort()).toEqual(
      ['created_at', 'description', 'id', 'length', 'namespace', 'title', 'updated_at', 'user_metadata'],
    )
    expect(page.data.every((c) => c.title!.startsWith('mine'))).toBe(true)
  })

  it('returns an empty page with null ids for an organisation without chats', async () => {
    seedChats(ctx.org().orgId, 3)
    expect(await listChats(ctx.app, org.auth)).toEqual({ data: [], first_id: null, last_id: null, has_more: false })
  })

  it('pages older with after_id and newer with before_id; has_more speaks of the direction paged', async () => {
    const chats = seedChats(org.orgId, 7) // chats[6] is the newest
    const newestFirst = [...chats].reverse()

    const p1 = await listChats(ctx.app, org.auth, '?limit=3')
    expect(ids(p1)).toEqual(newestFirst.slice(0, 3))
    expect(p1).toMatchObject({ first_id: newestFirst[0], last_id: newestFirst[2], has_more: true })

    const p2 = await listChats(ctx.app, org.auth, `?limit=3&after_id=${p1.last_id}`)
    expect(ids(p2)).toEqual(newestFirst.slice(3, 6))
    expect(p2).toMatchObject({ first_id: newestFirst[3], last_id: newestFirst[5], has_more: true })

    const p3 = await listChats(ctx.app, org.auth, `?limit=3&after_id=${p2.last_id}`)
    expect(ids(p3)).toEqual(newestFirst.slice(6))
    expect(p3).toMatchObject({ first_id: newestFirst[6], last_id: newestFirst[6], has_more: false })

    const p4 = await listChats(ctx.app, org.auth, `?limit=3&after_id=${p3.last_id}`)
    expect(p4).toEqual({ data: [], first_id: null, last_id: null, has_more: false })

    // Back towards the newest: still newest first within each page.
    const b1 = await listChats(ctx.app, org.auth, `?limit=3&before_id=${p3.first_id}`)
    expect(ids(b1)).toEqual(newestFirst.slice(3, 6))
    expect(b1).toMatchObject({ first_id: newestFirst[3], last_id: newestFirst[5], has_more: true })

    const b2 = await listChats(ctx.app, org.auth, `?limit=3&before_id=${b1.first_id}`)
    expect(ids(b2)).toEqual(newestFirst.slice(0, 3))
    expect(b2).toMatchObject({ first_id: newestFirst[0], last_id: newestFirst[2], has_more: false })

    const b3 = await listChats(ctx.app, org.auth, `?limit=3&before_id=${b2.first_id}`)
    expect(b3).toEqual({ data: [], first_id: null, last_id: null, has_more: false })
  })

  it('reports has_more false on a page that ends exactly at the last chat', async () => {
    const chats = seedChats(org.orgId, 4)
    const p1 = await listChats(ctx.app, org.auth, '?limit=2')
    const p2 = await listChats(ctx.app, org.auth, `?limit=2&after_id=${p1.last_id}`)
    expect(ids(p2)).toEqual([chats[1], chats[0]])
    expect(p2.has_more).toBe(false)
    const back = await listChats(ctx.app, org.auth, `?limit=2&before_id=${p2.first_id}`)
    expect(ids(back)).toEqual([chats[3], chats[2]])
    expect(back.has_more).toBe(false)
  })

  it('does not skip or repeat chats created while paging', async () => {
    const chats = seedChats(org.orgId, 4)
    const p1 = await listChats(ctx.app, org.auth, '?limit=2')
    const [newer] = seedChats(org.orgId, 1)
    const p2 = await listChats(ctx.app, org.auth, `?limit=2&after_id=${p1.last_id}`)
    expect(ids(p2)).toEqual([chats[1], chats[0]])
    const back = await listChats(ctx.app, org.auth, `?limit=5&before_id=${p1.first_id}`)
    expect(ids(back)).toEqual([newer])
  })

  describe('limit', () => {
    it('clamps 0 and negatives to 1', async () => {
      const chats = seedChats(org.orgId, 3)
      for (const limit of ['0', '-5']) {
        const page = await listChats(ctx.app, org.auth, `?limit=${limit}`)
        expect(ids(page)).toEqual([chats[2]])
        expect(page.has_more).toBe(true)
      }
    })

    it('clamps values over 100 to 100 and defaults when absent', async () => {
      const chats = seedChats(org.orgId, 105)
      const big = await listChats(ctx.app, org.auth, '?limit=1000')
      expect(big.data).toHaveLength(100)
      expect(big.has_more).toBe(true)
      expect(ids(big)).toEqual([...chats].reverse().slice(0, 100))
      const exact = await listChats(ctx.app, org.auth, '?limit=100')
      expect(exact.data).toHaveLength(100)
      const fallback = await listChats(ctx.app, org.auth)
      expect(fallback.data).toHaveLength(CHAT_PAGE_DEFAULT)
      expect(fallback.has_more).toBe(true)
    })

    it('rejects a non-integer limit with 422', async () => {
      for (const limit of ['abc', '1.5', '']) {
        const res = await ctx.app.inject({ url: `/api/v1/chats?limit=${limit}`, headers: org.auth })
        expectProblem(res, 'query', '/limit')
      }
    })
  })

  describe('cursors', () => {
    it('rejects after_id together with before_id with 422', async () => {
      const [a, b] = seedChats(org.orgId, 2)
      const res = await ctx.app.inject({ url: `/api/v1/chats?after_id=${a}&before_id=${b}`, headers: org.auth })
      const error = expectError(res, 422, 'validation_failed')
      const problems = (error.details as { problems: { in: string; pointer: string }[] }).problems
      expect(problems.some((p) => p.in === 'query' && (p.pointer === '/after_id' || p.pointer === '/before_id'))).toBe(true)
    })

    it('rejects a cursor naming no chat with 422 at the cursor’s pointer', async () => {
      seedChats(org.orgId, 2)
      expectProblem(await ctx.app.inject({ url: `/api/v1/chats?after_id=${randomUUID()}`, headers: org.auth }), 'query', '/after_id')
      expectProblem(await ctx.app.inject({ url: `/api/v1/chats?before_id=${randomUUID()}`, headers: org.auth }), 'query', '/before_id')
    })

    it('treats another organisation’s chat or a deleted chat as a cursor naming no chat', async () => {
      const [foreign] = seedChats(ctx.org().orgId, 1)
      expectProblem(await ctx.app.inject({ url: `/api/v1/chats?after_id=${foreign}`, headers: org.auth }), 'query', '/after_id')
      const [gone] = seedChats(org.orgId, 1)
      ctx.store.chats.delete(org.orgId, gone!)
      expectProblem(await ctx.app.inject({ url: `/api/v1/chats?before_id=${gone}`, headers: org.auth }), 'query', '/before_id')
    })

    it('rejects a cursor that is not a UUID with 422', async () => {
      expectProblem(await ctx.app.inject({ url: '/api/v1/chats?after_id=nope', headers: org.auth }), 'query', '/after_id')
    })
  })

  it('ignores unknown query parameters', async () => {
    const chats = seedChats(org.orgId, 3)
    const page = await listChats(ctx.app, org.auth, '?limit=2&colour=blue&include=full')
    expect(ids(page)).toEqual([chats[2], chats[1]])
  })

  describe('namespace filter', () => {
    it('selects the namespace and everything beneath it, and nothing that merely shares a prefix', async () => {
      const inScope = ['acme', 'acme/support', 'acme/support/tier1', 'acme/sales']
      const outOfScope = ['acme2', 'acmex', 'acme-x', 'acme_x', 'acm', 'other/acme', null]
      const byNamespace = new Map<string | null, string>()
      for (const ns of [...outOfScope, ...inScope]) byNamespace.set(ns, seedChats(org.orgId, 1, ns)[0]!)

      const page = await listChats(ctx.app, org.auth, '?namespace=acme')
      expect(page.data.map((c) => c.namespace).sort()).toEqual([...inScope].sort())
      expect(page.has_more).toBe(false)

      const support = await listChats(ctx.app, org.auth, '?namespace=acme/support')
      expect(support.data.map((c) => c.namespace).sort()).toEqual(['acme/support', 'acme/support/tier1'])
      expect(ids(support)).toEqual([byNamespace.get('acme/support/tier1'), byNamespace.get('acme/support')])
    })

    it('treats _ literally, not as a wildcard', async () => {
      for (const ns of ['a_b', 'axb', 'a_b/c', 'axb/c', 'a-b']) seedChats(org.orgId, 1, ns)
      const page = await listChats(ctx.app, org.auth, '?namespace=a_b')
      expect(page.data.map((c) => c.namespace).sort()).toEqual(['a_b', 'a_b/c'])
    })

    it('pages within a namespace with both cursors', async () => {
      const inNs: string[] = []
      for (let i = 0; i < 5; i++) {
        inNs.push(seedChats(org.orgId, 1, i % 2 === 0 ? 'team' : 'team/sub')[0]!)
        seedChats(org.orgId, 1, 'teams')
        seedChats(org.orgId, 1, null)
      }
      const newestFirst = [...inNs].reverse()
      const p1 = await listChats(ctx.app, org.auth, '?namespace=team&limit=2')
      expect(ids(p1)).toEqual(newestFirst.slice(0, 2))
      expect(p1.has_more).toBe(true)
      const p2 = await listChats(ctx.app, org.auth, `?namespace=team&limit=2&after_id=${p1.last_id}`)
      expect(ids(p2)).toEqual(newestFirst.slice(2, 4))
      expect(p2.has_more).toBe(true)
      const p3 = await listChats(ctx.app, org.auth, `?namespace=team&limit=2&after_id=${p2.last_id}`)
      expect(ids(p3)).toEqual(newestFirst.slice(4))
      expect(p3.has_more).toBe(false)
      const back = await listChats(ctx.app, org.auth, `?namespace=team&limit=2&before_id=${p3.first_id}`)
      expect(ids(back)).toEqual(newestFirst.slice(2, 4))
      expect(back.has_more).toBe(true)
    })

    it('returns an empty page, not an error, for a never-used or emptied namespace', async () => {
      seedChats(org.orgId, 2, 'used')
      const [gone] = seedChats(org.orgId, 1, 'emptied')
      ctx.store.chats.delete(org.orgId, gone!)
      const empty = { data: [], first_id: null, last_id: null, has_more: false }
      expect(await listChats(ctx.app, org.auth, '?namespace=never/used')).toEqual(empty)
      expect(await listChats(ctx.app, org.auth, '?namespace=emptied')).toEqual(empty)
    })

    it('never shows another organisation’s chats in the same namespace', async () => {
      const other = ctx.org()
      const [mine] = seedChats(org.orgId, 1, 'shared')
      seedChats(other.orgId, 3, 'shared')
      seedChats(other.orgId, 1, 'shared/deeper')
      const page = await listChats(ctx.app, org.auth, '?namespace=shared')
      expect(ids(page)).toEqual([mine])
    })

    it('rejects a namespace that breaks the pattern with 422', async () => {
      expectProblem(await ctx.app.inject({ url: '/api/v1/chats?namespace=Acme', headers: org.auth }), 'query', '/namespace')
      expectProblem(await ctx.app.inject({ url: '/api/v1/chats?namespace=acme//x', headers: org.auth }), 'query', '/namespace')
    })
  })
})
