import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEFAULT_BODY_LIMIT } from '../../src/http/app.ts'
import { expectError } from '../helpers/http.ts'
import { createTestApp, type TestContext, type TestOrg } from '../helpers/test-app.ts'
import { fundedOrg, newChat, sandboxCatalogue } from '../helpers/turns.ts'

/** Findings of the OpenAPI fuzz suite (test/http/fuzz), each pinned by a focused test. */

let ctx: TestContext
let org: TestOrg

beforeAll(async () => {
  ctx = await createTestApp({ catalogue: sandboxCatalogue() })
  org = fundedOrg(ctx)
})
afterAll(async () => {
  await ctx.close()
})

const rows = () => (ctx.store.db.prepare('SELECT count(*) AS n FROM config_versions').get() as { n: number }).n

describe('publishing configuration over the body limit', () => {
  for (const kind of ['instructions', 'tools', 'retention', 'budgets']) {
    it(`POST /api/v1/config/${kind}: 413 in the envelope, nothing written, and the OpenAPI entry lists 413`, async () => {
      const before = rows()
      const res = await ctx.app.inject({
        method: 'POST',
        url: `/api/v1/config/${kind}`,
        headers: { ...org.auth, 'content-type': 'application/json' },
        payload: JSON.stringify({ body: 'x'.repeat(DEFAULT_BODY_LIMIT), mode: 'append' }),
      })
      expectError(res, 413, 'payload_too_large')
      expect(rows()).toBe(before)

      const doc = (await ctx.app.inject({ url: '/openapi.json' })).json()
      expect(Object.keys(doc.paths[`/api/v1/config/${kind}`].post.responses)).toContain('413')
    })
  }
})

/** `[[[…1]]]` nested `depth` arrays deep. */
const nestedArrays = (depth: number): unknown => {
  let value: unknown = 1
  for (let i = 0; i < depth; i++) value = [value]
  return value
}

// Ajv decides whether to inline a $ref target by walking it, visiting each array twice per level:
// 2^depth steps, so one tool whose schema referred to 40 nested arrays held the event loop for good.
describe('a tool input_schema with a $ref to deeply nested arrays', () => {
  const inputSchema = { type: 'object', properties: { a: { $ref: '#/$defs/a' } }, $defs: { a: nestedArrays(40) } }

  it('is answered at once when a tool bundle is published', async () => {
    const res = await ctx.app.inject({
      method: 'POST',
      url: '/api/v1/config/tools',
      headers: org.auth,
      payload: { mode: 'append', definitions: [{ name: 'deep', input_schema: inputSchema }] },
    })
    expect(res.statusCode, res.body).toBeLessThan(500)
  })

  it("is answered at once as a turn's own tools", async () => {
    const chat = await newChat(ctx, org.auth)
    const res = await ctx.app.inject({
      method: 'POST',
      url: `/api/v1/chats/${chat}/responses`,
      headers: org.auth,
      payload: { model: 'sandbox/echo', input: [{ type: 'prompt', text: 'hi' }], tools: [{ name: 'deep', input_schema: inputSchema }] },
    })
    expect(res.statusCode, res.body).toBeLessThan(500)
  })
})
