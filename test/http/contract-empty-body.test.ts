import { request } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestContext, type TestOrg } from '../helpers/test-app.ts'
import { fundedOrg, parseSse, sandboxCatalogue } from '../helpers/turns.ts'

/**
 * Operations that take no body (a DELETE, a cancel) answer as documented when a client sends
 * `content-type: application/json` with no body, as many clients do on every call (issue 13): it
 * was a 400 with Fastify's message. A body that is there is still parsed, and rejected when bad.
 */

let ctx: TestContext
let org: TestOrg
let base: string

beforeAll(async () => {
  ctx = await createTestApp({ catalogue: sandboxCatalogue() })
  org = fundedOrg(ctx)
  base = await ctx.app.listen({ port: 0, host: '127.0.0.1' })
})
afterAll(async () => {
  await ctx.close()
})

const newChat = async () => (await ctx.app.inject({ method: 'POST', url: '/api/v1/chats', headers: org.auth, payload: {} })).json().id as string
const jsonNoBody = () => ({ ...org.auth, 'content-type': 'application/json' })

async function finishedRun(): Promise<string> {
  const res = await ctx.app.inject({
    method: 'POST',
    url: `/api/v1/chats/${await newChat()}/responses`,
    headers: org.auth,
    payload: { model: 'sandbox/echo', input: [{ type: 'prompt', text: 'hello' }] },
  })
  return parseSse(res.body)[0]!.data.run_id
}

describe('a body-less operation sent content-type: application/json and no body', () => {
  it('DELETE /api/v1/chats/{chat_id} deletes the chat (204), over a real socket and through inject', async () => {
    const overSocket = await request(`${base}/api/v1/chats/${await newChat()}`, { method: 'DELETE', headers: jsonNoBody() })
    expect(overSocket.statusCode, await overSocket.body.text()).toBe(204)
    const chat = await newChat()
    const injected = await ctx.app.inject({ method: 'DELETE', url: `/api/v1/chats/${chat}`, headers: jsonNoBody() })
    expect(injected.statusCode, injected.body).toBe(204)
    expect((await ctx.app.inject({ url: `/api/v1/chats/${chat}`, headers: org.auth })).statusCode).toBe(404)
  })

  it('POST /api/v1/runs/{run_id}/cancel answers the run (200), with content-length: 0 and with no length at all', async () => {
    const run = await finishedRun()
    const withLength = await request(`${base}/api/v1/runs/${run}/cancel`, { method: 'POST', headers: { ...jsonNoBody(), 'content-length': '0' } })
    expect(withLength.statusCode).toBe(200)
    expect(((await withLength.body.json()) as { id: string }).id).toBe(run)
    const injected = await ctx.app.inject({ method: 'POST', url: `/api/v1/runs/${run}/cancel`, headers: jsonNoBody() })
    expect(injected.statusCode, injected.body).toBe(200)
    expect(injected.json().status).toBe('succeeded')
  })

  it('still rejects a malformed body sent to them, and an empty body where a body is required', async () => {
    const malformed = await ctx.app.inject({ method: 'POST', url: `/api/v1/runs/${await finishedRun()}/cancel`, headers: jsonNoBody(), payload: '{not json' })
    expect(malformed.statusCode).toBe(400)
    expect(malformed.json().error.code).toBe('invalid_request')
    const emptyChat = await request(`${base}/api/v1/chats`, { method: 'POST', headers: { ...jsonNoBody(), 'content-length': '0' } })
    expect(emptyChat.statusCode).toBe(400)
    expect(((await emptyChat.body.json()) as { error: { code: string } }).error.code).toBe('invalid_request')
  })
})
