import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { expectError, UUID } from '../../helpers/http.ts'
import { createTestApp, type TestContext } from '../../helpers/test-app.ts'

let ctx: TestContext

beforeEach(async () => {
  ctx = await createTestApp()
})
afterEach(async () => {
  vi.useRealTimers()
  await ctx.close()
})

describe('GET /', () => {
  it('serves the discovery document of decisions §7 without a key', async () => {
    const res = await ctx.app.inject({ url: '/' })
    expect(res.statusCode).toBe(200)
    const body = res.json()
    expect(Object.keys(body).sort()).toEqual(['docs', 'llms_txt', 'openapi', 'service', 'versions'])
    expect(typeof body.service).toBe('string')
    expect(body.service.length).toBeGreaterThan(0)
    expect(body).toEqual({
      service: body.service,
      docs: '/docs',
      llms_txt: '/llms.txt',
      openapi: '/openapi.json',
      versions: { v1: '/api/v1' },
    })
  })

  it('serves every path the discovery document names, without a key', async () => {
    const body = (await ctx.app.inject({ url: '/' })).json()
    const paths = [body.docs, body.llms_txt, body.openapi, ...Object.values(body.versions as Record<string, string>)]
    for (const path of paths) {
      const res = await ctx.app.inject({ url: path })
      expect(res.statusCode, `${path}: ${res.body.slice(0, 200)}`).toBeGreaterThanOrEqual(200)
      expect(res.statusCode, path).toBeLessThan(400)
    }
  })
})

describe('GET /api/v1/version', () => {
  it('returns version, commit and api_version without a key', async () => {
    const res = await ctx.app.inject({ url: '/api/v1/version' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ version: '0.0.0-test', commit: 'test', api_version: 'v1' })
  })
})

describe('GET /api/v1/updates', () => {
  it('is an empty array when nothing was published', async () => {
    const res = await ctx.app.inject({ url: '/api/v1/updates' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual([])
  })

  it('lists published updates newest first without a key, as PublicPlatformUpdate', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    vi.setSystemTime(new Date('2026-01-01T10:00:00.000Z'))
    const first = ctx.store.updates.publish({ kind: 'release', title: 'v1.0', body: 'First release', important: true, version: '1.0.0' })
    vi.setSystemTime(new Date('2026-01-02T10:00:00.000Z'))
    const second = ctx.store.updates.publish({ kind: 'maintenance', title: 'Window', body: 'Sunday 02:00', important: false, version: null })
    vi.setSystemTime(new Date('2026-01-03T10:00:00.000Z'))
    const third = ctx.store.updates.publish({ kind: 'notice', title: 'Heads up', body: 'Pricing change', important: false, version: null })
    vi.useRealTimers()

    const res = await ctx.app.inject({ url: '/api/v1/updates', headers: { authorization: 'Bearer not-a-key' } })
    expect(res.statusCode).toBe(200)
    const updates = res.json()
    expect(updates.map((u: { id: string }) => u.id)).toEqual([third.id, second.id, first.id])
    expect(updates[2]).toEqual({
      id: first.id,
      kind: 'release',
      title: 'v1.0',
      body: 'First release',
      important: true,
      published_at: '2026-01-01T10:00:00.000Z',
      version: '1.0.0',
    })
    expect(updates[0].id).toMatch(UUID)
    expect(updates[0].important).toBe(false)
    for (const update of updates) {
      expect(Object.keys(update).sort()).toEqual(['body', 'id', 'important', 'kind', 'published_at', 'title', 'version'])
    }
  })
})

describe('GET /llms.txt', () => {
  it('is plain text describing the API and listing its operations', async () => {
    const res = await ctx.app.inject({ url: '/llms.txt' })
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toMatch(/^text\/plain/)
    expect(res.body).toMatch(/^# Parley/)
    expect(res.body).toContain('Authorization: Bearer')
    expect(res.body).toContain('GET /api/v1/chats')
    expect(res.body).toContain('POST /api/v1/chats')
    expect(res.body).toContain('GET /api/v1/chats/{chat_id}/history')
    expect(res.body).toContain('/openapi.json')
  })
})

describe('GET /docs', () => {
  it('serves the API reference page', async () => {
    let res = await ctx.app.inject({ url: '/docs' })
    expect(res.statusCode).toBeGreaterThanOrEqual(200)
    expect(res.statusCode).toBeLessThan(400)
    if (res.statusCode >= 300) res = await ctx.app.inject({ url: String(res.headers.location) })
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toMatch(/^text\/html/)
    expect(res.body).toContain('/openapi.json')
  })
})

describe('unknown routes', () => {
  it('answer 404 not_found in the error envelope, with or without a key', async () => {
    expectError(await ctx.app.inject({ url: '/nowhere' }), 404, 'not_found')
    expectError(await ctx.app.inject({ url: '/api/v1/nowhere' }), 404, 'not_found')
    const org = ctx.org()
    expectError(await ctx.app.inject({ url: '/api/v1/nowhere', headers: org.auth }), 404, 'not_found')
  })

  it('a known path with a method it does not take is 405 method_not_allowed, naming the methods it takes', async () => {
    const org = ctx.org()
    const res = await ctx.app.inject({ method: 'PUT', url: '/api/v1/chats', headers: org.auth })
    expectError(res, 405, 'method_not_allowed')
    expect(String(res.headers.allow).split(', ')).toEqual(expect.arrayContaining(['GET', 'POST']))
  })
})
