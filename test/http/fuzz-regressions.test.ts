import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { DEFAULT_BODY_LIMIT } from '../../src/http/app.ts'
import { countedReads, readTally } from '../helpers/counted-reads.ts'
import { expectError, expectProblem } from '../helpers/http.ts'
import { largeToolBundle } from '../helpers/large-tool-bundle.ts'
import { createTestApp, type TestContext, type TestOrg } from '../helpers/test-app.ts'
import { fundedOrg, newChat, sandboxCatalogue } from '../helpers/turns.ts'

/** Findings of the OpenAPI fuzz suite (test/http/fuzz), each pinned by a focused test. */

/**
 * The tool schemas a request carries are checked (publishes and a turn's own tools alike) by
 * validateToolBundle, here given a view of them that counts every read and throws past a budget
 * linear in their size (test/helpers/counted-reads.ts): the check's work is counted, not timed.
 */
const READS_PER_NODE = 16
vi.mock('../../src/domain/config/validate-tool-bundle.ts', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../src/domain/config/validate-tool-bundle.ts')>()
  const { countedReads } = await import('../helpers/counted-reads.ts')
  return { ...real, validateToolBundle: (definitions: Parameters<typeof real.validateToolBundle>[0], base?: string) => real.validateToolBundle(countedReads(definitions, READS_PER_NODE), base) }
})

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
    const before = rows()
    const res = await ctx.app.inject({
      method: 'POST',
      url: '/api/v1/config/tools',
      headers: org.auth,
      payload: { mode: 'append', definitions: [{ name: 'deep', input_schema: inputSchema }] },
    })
    // The $ref names arrays, which are no schema: refused, at its pointer, nothing written.
    expectProblem(res, 'body', '/definitions/0/input_schema/properties/a/$ref')
    expect(rows()).toBe(before)
    const { reads, nodes } = readTally()
    console.info(`tool bundle check: ${reads} reads of a schema of ${nodes} nodes`)
    expect(reads).toBeGreaterThan(0)
    expect(reads).toBeLessThanOrEqual(READS_PER_NODE * nodes)
  })

  it("is answered at once as a turn's own tools", async () => {
    const chat = await newChat(ctx, org.auth)
    const res = await ctx.app.inject({
      method: 'POST',
      url: `/api/v1/chats/${chat}/responses`,
      headers: org.auth,
      payload: { model: 'sandbox/echo', input: [{ type: 'prompt', text: 'hi' }], tools: [{ name: 'deep', input_schema: inputSchema }] },
    })
    expectProblem(res, 'body', '/tools/0/input_schema/properties/a/$ref')
    const { reads, nodes } = readTally()
    console.info(`turn tools check: ${reads} reads of a schema of ${nodes} nodes`)
    expect(reads).toBeGreaterThan(0)
    expect(reads).toBeLessThanOrEqual(READS_PER_NODE * nodes)
  })
})

// Issue 36 item 3, decision 061: a large bundle is checked on the body-work pool's threads, where
// this file's counting view of validateToolBundle does not reach; the event loop checks none of it.
describe('a published bundle of 2,000 tools', () => {
  it('is checked off the event loop: the event loop reads none of its schemas, a small bundle it checks itself', async () => {
    countedReads({}, 1)
    const res = await ctx.app.inject({ method: 'POST', url: '/api/v1/config/tools', headers: org.auth, payload: { mode: 'append', definitions: largeToolBundle(2_000, 31) } })
    expect(res.statusCode, res.body).toBe(200)
    expect(readTally()).toMatchObject({ reads: 0, nodes: 1 })

    const small = await ctx.app.inject({ method: 'POST', url: '/api/v1/config/tools', headers: org.auth, payload: { mode: 'append', definitions: largeToolBundle(3, 32) } })
    expect(small.statusCode, small.body).toBe(200)
    const { reads, nodes } = readTally()
    console.info(`small bundle, in place: ${reads} reads of ${nodes} values`)
    expect(nodes).toBeGreaterThan(50)
    expect(reads).toBeGreaterThan(nodes)
  })
})
