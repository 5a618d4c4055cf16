import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createChat, expectError } from '../../helpers/http.ts'
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

const namespaces = async (auth = org.auth) => {
  const res = await ctx.app.inject({ url: '/api/v1/namespaces', headers: auth })
  expect(res.statusCode, res.body).toBe(200)
  return res.json() as { data: string[] }
}

describe('GET /api/v1/namespaces', () => {
  it('is empty for an organisation without namespaced chats; chats without a namespace contribute nothing', async () => {
    expect(await namespaces()).toEqual({ data: [] })
    await createChat(ctx.app, org.auth)
    await createChat(ctx.app, org.auth, { namespace: null })
    expect(await namespaces()).toEqual({ data: [] })
  })

  it('lists each namespace in use once, ascending', async () => {
    for (const namespace of ['support', 'acme/support', 'acme', 'support', 'a-b', 'acme/support', 'zeta/x/y']) {
      await createChat(ctx.app, org.auth, { namespace })
    }
    expect(await namespaces()).toEqual({ data: ['a-b', 'acme', 'acme/support', 'support', 'zeta/x/y'] })
  })

  it('is scoped to the caller’s organisation', async () => {
    const other = ctx.org()
    await createChat(ctx.app, org.auth, { namespace: 'mine' })
    await createChat(ctx.app, other.auth, { namespace: 'theirs' })
    await createChat(ctx.app, other.auth, { namespace: 'mine/too' })
    expect(await namespaces()).toEqual({ data: ['mine'] })
    expect(await namespaces(other.auth)).toEqual({ data: ['mine/too', 'theirs'] })
  })

  it('drops a namespace once its last chat is deleted', async () => {
    const a = await createChat(ctx.app, org.auth, { namespace: 'temp' })
    await createChat(ctx.app, org.auth, { namespace: 'kept' })
    expect((await namespaces()).data).toEqual(['kept', 'temp'])
    await ctx.app.inject({ method: 'DELETE', url: `/api/v1/chats/${a.id}`, headers: org.auth })
    expect((await namespaces()).data).toEqual(['kept'])
  })

  it('needs an API key', async () => {
    expectError(await ctx.app.inject({ url: '/api/v1/namespaces' }), 401, 'unauthorized')
  })
})
