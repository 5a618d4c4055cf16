import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { generateSecret, API_KEY_PREFIX } from '../../../src/domain/credentials.ts'
import { countRows, createChat, expectError } from '../../helpers/http.ts'
import { createTestApp, type TestContext, type TestOrg } from '../../helpers/test-app.ts'

let ctx: TestContext
let org: TestOrg
let chatId: string

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
  chatId = (await createChat(ctx.app, org.auth)).id
})
// Rows this test added: the app and its database are the file's (counting from the test's start is
// what counting from an empty database was).
let chatsAtStart = 0
const chatsAdded = () => countRows(ctx.store, 'chats') - chatsAtStart

type Method = 'GET' | 'POST' | 'DELETE'
const keyedRoutes = (): Array<[Method, string]> => [
  ['GET', '/api/v1/chats'],
  ['POST', '/api/v1/chats'],
  ['GET', `/api/v1/chats/${chatId}`],
  ['DELETE', `/api/v1/chats/${chatId}`],
  ['GET', `/api/v1/chats/${chatId}/history`],
  ['GET', '/api/v1/namespaces'],
  ['GET', '/api/v1/models'],
]

const badHeaders: Array<[string, Record<string, string>]> = [
  ['a missing Authorization header', {}],
  ['an empty Authorization header', { authorization: '' }],
  ['a scheme other than Bearer', { authorization: 'Basic dXNlcjpwYXNz' }],
  ['Bearer without a token', { authorization: 'Bearer' }],
  ['a bare key without the scheme', { authorization: 'pk_abc' }],
  ['a token with a space in it', { authorization: 'Bearer pk_a pk_b' }],
  ['an unknown well-formed key', { authorization: `Bearer ${generateSecret(API_KEY_PREFIX)}` }],
]

describe('API key authentication', () => {
  for (const [name, headers] of badHeaders) {
    it(`answers 401 unauthorized to ${name} on every keyed route, and changes nothing`, async () => {
      for (const [method, url] of keyedRoutes()) {
        const res = await ctx.app.inject({ method, url, headers, ...(method === 'POST' ? { payload: {} } : {}) })
        expectError(res, 401, 'unauthorized')
      }
      expect(chatsAdded()).toBe(1)
    })
  }

  it('answers 401 to a revoked key while another key of the organisation still works', async () => {
    const second = ctx.store.apiKeys.create(org.orgId, 'second')
    expect((await ctx.app.inject({ url: `/api/v1/chats/${chatId}`, headers: org.auth })).statusCode).toBe(200)
    expect(ctx.store.apiKeys.revoke(org.keyId)).not.toBeNull()
    for (const [method, url] of keyedRoutes()) {
      expectError(await ctx.app.inject({ method, url, headers: org.auth }), 401, 'unauthorized')
    }
    const ok = await ctx.app.inject({ url: `/api/v1/chats/${chatId}`, headers: { authorization: `Bearer ${second.key}` } })
    expect(ok.statusCode).toBe(200)
    expect(chatsAdded()).toBe(1)
  })

  it('accepts the scheme in any case', async () => {
    const res = await ctx.app.inject({ url: `/api/v1/chats/${chatId}`, headers: { authorization: `bearer ${org.key}` } })
    expect(res.statusCode).toBe(200)
  })

  it('gives the same 401 body whatever was wrong, so it reveals nothing about keys', async () => {
    const bodies = new Set<string>()
    for (const [, headers] of badHeaders) bodies.add((await ctx.app.inject({ url: '/api/v1/chats', headers })).body)
    ctx.store.apiKeys.revoke(org.keyId)
    bodies.add((await ctx.app.inject({ url: '/api/v1/chats', headers: org.auth })).body)
    expect(bodies.size).toBe(1)
  })

  describe('401 comes before validation, parsing and lookup', () => {
    it('before a malformed path identifier (400)', async () => {
      expectError(await ctx.app.inject({ url: '/api/v1/chats/not-a-uuid' }), 401, 'unauthorized')
      expectError(await ctx.app.inject({ method: 'DELETE', url: '/api/v1/chats/not-a-uuid' }), 401, 'unauthorized')
    })

    it('before a missing chat (404)', async () => {
      expectError(await ctx.app.inject({ url: `/api/v1/chats/${randomUUID()}/history` }), 401, 'unauthorized')
    })

    it('before an invalid body (422)', async () => {
      const res = await ctx.app.inject({ method: 'POST', url: '/api/v1/chats', payload: { namespace: '', colour: 'blue' } })
      expectError(res, 401, 'unauthorized')
    })

    it('before malformed JSON (400)', async () => {
      const res = await ctx.app.inject({
        method: 'POST',
        url: '/api/v1/chats',
        headers: { authorization: 'Bearer pk_unknown', 'content-type': 'application/json' },
        payload: '{nope',
      })
      expectError(res, 401, 'unauthorized')
    })

    it('before an oversized body (413)', async () => {
      const res = await ctx.app.inject({
        method: 'POST',
        url: '/api/v1/chats',
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify({ title: 'x'.repeat(2 * 1024 * 1024) }),
      })
      expectError(res, 401, 'unauthorized')
    })

    it('before unknown or invalid query parameters (422)', async () => {
      expectError(await ctx.app.inject({ url: `/api/v1/chats/${chatId}/history?colour=blue&include=all` }), 401, 'unauthorized')
      expectError(await ctx.app.inject({ url: '/api/v1/chats?limit=abc' }), 401, 'unauthorized')
    })
  })
})

describe('public routes', () => {
  it('need no key and ignore a bad one', async () => {
    const urls = ['/', '/api/v1/version', '/api/v1/updates', '/v1/catalogue', '/v1/catalogue/models.md', '/llms.txt', '/openapi.json']
    for (const url of urls) {
      expect((await ctx.app.inject({ url })).statusCode, url).toBe(200)
      expect((await ctx.app.inject({ url, headers: { authorization: 'Bearer pk_bogus' } })).statusCode, url).toBe(200)
    }
  })
})
