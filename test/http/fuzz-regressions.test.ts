import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEFAULT_BODY_LIMIT } from '../../src/http/app.ts'
import { expectError } from '../helpers/http.ts'
import { createTestApp, type TestContext, type TestOrg } from '../helpers/test-app.ts'

/** Findings of the OpenAPI fuzz suite (test/http/fuzz), each pinned by a focused test. */

let ctx: TestContext
let org: TestOrg

beforeAll(async () => {
  ctx = await createTestApp()
  org = ctx.org()
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
