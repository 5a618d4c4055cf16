import { afterEach, describe, expect, it } from 'vitest'
import { createTestApp, type TestContext } from '../../helpers/test-app.ts'

let ctx: TestContext | undefined
afterEach(async () => {
  await ctx?.close()
  ctx = undefined
})

const listChats = (auth: Record<string, string>) => ctx!.app.inject({ method: 'GET', url: '/api/v1/chats', headers: auth })

describe('rate limit per API key (decision 011)', () => {
  it('answers 429 rate_limited with Retry-After once a key passes its requests a minute; other keys go on', async () => {
    ctx = await createTestApp({ rateLimitPerMinute: 3 })
    const busy = ctx.org()
    const quiet = ctx.org()
    for (let i = 0; i < 3; i++) expect((await listChats(busy.auth)).statusCode).toBe(200)
    const limited = await listChats(busy.auth)
    expect(limited.statusCode).toBe(429)
    const error = limited.json().error
    expect(error).toMatchObject({ code: 'rate_limited', details: { limit: 3 } })
    expect(error.details.retry_after_seconds).toBeGreaterThan(0)
    expect(error.details.retry_after_seconds).toBeLessThanOrEqual(60)
    expect(Number(limited.headers['retry-after'])).toBe(error.details.retry_after_seconds)
    // Writes count too, and change nothing once limited.
    const refused = await ctx.app.inject({ method: 'POST', url: '/api/v1/chats', headers: busy.auth, payload: {} })
    expect(refused.statusCode).toBe(429)
    expect(ctx.store.db.prepare('SELECT count(*) AS n FROM chats WHERE org_id = ?').get(busy.orgId)).toEqual({ n: 0 })
    expect((await listChats(quiet.auth)).statusCode).toBe(200)
  })

  it('counts nothing without a valid key: that is a 401', async () => {
    ctx = await createTestApp({ rateLimitPerMinute: 1 })
    for (let i = 0; i < 3; i++) expect((await listChats({ authorization: 'Bearer pk_nope' })).statusCode).toBe(401)
    expect((await listChats(ctx.org().auth)).statusCode).toBe(200)
  })

  it('is off unless configured, and public routes are never limited', async () => {
    ctx = await createTestApp()
    const org = ctx.org()
    for (let i = 0; i < 20; i++) expect((await listChats(org.auth)).statusCode).toBe(200)
    const limited = await createTestApp({ rateLimitPerMinute: 1 })
    try {
      for (let i = 0; i < 3; i++) expect((await limited.app.inject({ method: 'GET', url: '/api/v1/version' })).statusCode).toBe(200)
    } finally {
      await limited.close()
    }
  })
})
