import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ToolDefinition } from '../../../src/domain/config/config-types.ts'
import { validateToolBundle } from '../../../src/domain/config/validate-tool-bundle.ts'
import { estimateToolTokens } from '../../../src/domain/tokens/estimate-tool-tokens.ts'
import { saturatingAdd } from '../../../src/domain/tokens/estimate-tokens.ts'
import { DEFAULT_BODY_LIMIT } from '../../../src/http/app.ts'
import { expectProblem } from '../../helpers/http.ts'
import { largeToolBundle } from '../../helpers/large-tool-bundle.ts'
import { createTestApp, type TestContext, type TestOrg } from '../../helpers/test-app.ts'

/**
 * Publishing 2,000 tools (issue 36 item 3): the bundle is checked, estimated and written out as JSON
 * on the body-work pool (decision 061), and the publish answers as it did when all of it ran on the
 * event loop: the same version, estimate and stored document, or the same 422 with the same
 * pointers. That the event loop checks none of it is shown in test/http/fuzz-regressions.test.ts
 * and test/http/body-work/tool-bundle-work.test.ts; the stall, in bench/publish.ts.
 */
let ctx: TestContext
let org: TestOrg

beforeAll(async () => {
  ctx = await createTestApp()
  org = ctx.org()
})
afterAll(async () => {
  await ctx.close()
})

const publish = (definitions: ToolDefinition[], namespace = 'big') => {
  const payload = JSON.stringify({ mode: 'replace', namespace, definitions })
  // The bundle is as large as the route takes: 2,000 tools just under its 1 MiB body limit.
  expect(Buffer.byteLength(payload)).toBeLessThan(DEFAULT_BODY_LIMIT)
  expect(Buffer.byteLength(payload)).toBeGreaterThan(0.9 * DEFAULT_BODY_LIMIT)
  return ctx.app.inject({ method: 'POST', url: '/api/v1/config/tools', headers: { ...org.auth, 'content-type': 'application/json' }, payload })
}
const rows = () => (ctx.store.db.prepare('SELECT count(*) AS n FROM config_versions').get() as { n: number }).n

describe('POST /api/v1/config/tools with 2,000 tools', () => {
  it('publishes them: the estimate of the in-place check, the document stored as sent, read back whole', async () => {
    const bundle = largeToolBundle(2_000, 21)
    const res = await publish(bundle)
    expect(res.statusCode, res.body).toBe(200)
    const version = res.json()
    expect(version).toMatchObject({ version: 1, is_active: true, mode: 'replace', namespace: 'big', estimated_tokens: saturatingAdd(...bundle.map(estimateToolTokens)) })
    expect(version).not.toHaveProperty('definitions')
    expect(version.estimated_tokens).toBeGreaterThan(100_000)

    const stored = ctx.store.db.prepare('SELECT document, estimated_tokens FROM config_versions WHERE id = ?').get(version.id) as { document: string; estimated_tokens: number }
    expect(stored).toEqual({ document: JSON.stringify(bundle), estimated_tokens: version.estimated_tokens })
    const read = await ctx.app.inject({ url: `/api/v1/config/tools/${version.id}`, headers: org.auth })
    expect(read.json()).toMatchObject({ id: version.id, definitions: bundle, estimated_tokens: version.estimated_tokens })

    // The same bundle again: a second version, the same estimate.
    const again = await publish(bundle)
    expect(again.json()).toMatchObject({ version: 2, estimated_tokens: version.estimated_tokens })
  })

  it('refuses a bundle with problems with the 422 of the in-place check, every problem at its pointer, in order, nothing written', async () => {
    const bundle = largeToolBundle(2_000, 22)
    bundle[5] = { ...bundle[5]!, name: 'dotted.name' }
    bundle[999] = { ...bundle[999]!, input_schema: { type: 'object', required: 'query' } }
    bundle[1_998] = { ...bundle[1_998]!, input_schema: { type: 'object', properties: { r: { type: 'string', pattern: '(' } } } }
    bundle[1_999] = { ...bundle[1_999]!, name: bundle[0]!.name }
    const before = rows()
    const res = await publish(bundle, 'refused')
    const problems = expectProblem(res, 'body', '/definitions/1999/name')
    expect(problems).toEqual(validateToolBundle(bundle).map((p) => ({ in: 'body', ...p })))
    expect(problems.map((p) => p.pointer)).toEqual(['/definitions/5/name', '/definitions/999/input_schema', '/definitions/1998/input_schema/properties/r/pattern', '/definitions/1999/name'])
    expect(rows()).toBe(before)
  })
})
