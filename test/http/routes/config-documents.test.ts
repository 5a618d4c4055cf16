import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { PLATFORM_DEFAULT_RETENTION } from '../../../src/domain/config/platform-defaults.ts'
import { estimateToolTokens } from '../../../src/domain/tokens/estimate-tool-tokens.ts'
import { estimateTokens } from '../../../src/domain/tokens/estimate-tokens.ts'
import { client, expectRejectedUnwritten, type VersionBody } from '../../helpers/config-api.ts'
import { createTestApp, type TestContext } from '../../helpers/test-app.ts'

/** Document-specific rules of instructions, tool bundles and retention policies (spec §2.6, §4.3; decisions §5). */

let ctx: TestContext
let api: ReturnType<typeof client>

// One app per file; every test works in an organisation of its own, and everything asserted is per organisation.
beforeAll(async () => {
  ctx = await createTestApp()
})
afterAll(async () => {
  await ctx.close()
})
beforeEach(() => {
  api = client(ctx, ctx.org())
})

const versionsAt = (kind: string, namespace = 'acme') => api.get<VersionBody[]>(`/api/v1/config/${kind}/versions?namespace=${namespace}`)

/** Publishes one valid version at acme first, so "nothing written" is checked against a non-empty scope. */
async function expectRefused(kind: string, valid: Record<string, unknown>, body: Record<string, unknown>, pointer: string) {
  await api.post(`/api/v1/config/${kind}`, { ...valid, namespace: 'acme' })
  const before = await versionsAt(kind)
  const problems = await expectRejectedUnwritten(
    ctx,
    () => api.call('POST', `/api/v1/config/${kind}`, { ...body, namespace: 'acme' }),
    'body',
    pointer,
  )
  expect(await versionsAt(kind)).toEqual(before)
  return problems
}

describe('instructions', () => {
  const VALID = { body: 'Be brief.', mode: 'append' }

  it('estimated_tokens is the project estimate of the body; the body is returned by id', async () => {
    const text = 'You are a support agent for Acme. Answer politely and cite the knowledge base.'
    const v = await api.post<VersionBody>('/api/v1/config/instructions', { body: text, mode: 'replace', namespace: 'acme' })
    expect(v.estimated_tokens).toBe(estimateTokens(text))
    expect(v.estimated_tokens).toBeGreaterThan(0)
    expect(v.mode).toBe('replace')
    expect(await api.get(`/api/v1/config/instructions/${v.id}`)).toMatchObject({ body: text, mode: 'replace', estimated_tokens: v.estimated_tokens })
  })

  it('an empty body is a valid instruction with zero tokens', async () => {
    const v = await api.post<VersionBody>('/api/v1/config/instructions', { body: '', mode: 'append' })
    expect(v.estimated_tokens).toBe(0)
    expect((await api.get<VersionBody>(`/api/v1/config/instructions/${v.id}`)).body).toBe('')
  })

  it.each<[string, Record<string, unknown>, string]>([
    ['body missing', { mode: 'append' }, '/body'],
    ['body not a string', { body: 42, mode: 'append' }, '/body'],
    ['mode missing', { body: 'x' }, '/mode'],
    ['mode unknown', { body: 'x', mode: 'prepend' }, '/mode'],
    ['an unknown property', { body: 'x', mode: 'append', priority: 1 }, '/priority'],
  ])('422: %s', async (_name, body, pointer) => {
    await expectRefused('instructions', VALID, body, pointer)
  })
})

describe('tool bundles', () => {
  const search = { name: 'search', description: 'Search', strict: true, input_schema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] } }
  const calc = { name: 'calc', input_schema: { type: 'object' }, description: null, strict: null }
  const VALID = { mode: 'append', definitions: [search] }

  it('stores the definitions and estimates their tokens as the sum over tools', async () => {
    const v = await api.post<VersionBody>('/api/v1/config/tools', { mode: 'append', definitions: [search, calc] })
    expect(v.estimated_tokens).toBe(estimateToolTokens(search) + estimateToolTokens(calc))
    expect((await api.get<VersionBody>(`/api/v1/config/tools/${v.id}`)).definitions).toEqual([search, calc])
  })

  it('an empty bundle is valid (a replace that removes every farther tool)', async () => {
    const v = await api.post<VersionBody>('/api/v1/config/tools', { mode: 'replace', definitions: [], namespace: 'acme' })
    expect(v.estimated_tokens).toBe(0)
    expect((await api.get<VersionBody>(`/api/v1/config/tools/${v.id}`)).definitions).toEqual([])
  })

  it('accepts a recursive input_schema (local $ref to the root)', async () => {
    const tree = { name: 'build_tree', input_schema: { type: 'object', properties: { label: { type: 'string' }, children: { type: 'array', items: { $ref: '#' } } } } }
    const v = await api.post<VersionBody>('/api/v1/config/tools', { mode: 'append', definitions: [tree] })
    expect((await api.get<VersionBody>(`/api/v1/config/tools/${v.id}`)).definitions).toEqual([tree])
  })

  const obj = (extra: Record<string, unknown> = {}) => ({ type: 'object', ...extra })
  it.each<[string, unknown[], string]>([
    ['duplicate names', [search, calc, { ...search, description: 'again' }], '/definitions/2/name'],
    ['a name with a space', [{ name: 'web search', input_schema: obj() }], '/definitions/0/name'],
    ['an empty name', [{ name: '', input_schema: obj() }], '/definitions/0/name'],
    ['input_schema describing a string', [{ name: 't', input_schema: { type: 'string' } }], '/definitions/0/input_schema/type'],
    ['input_schema describing an array', [search, { name: 't', input_schema: { type: 'array' } }], '/definitions/1/input_schema/type'],
    ['input_schema not an object at all', [{ name: 't', input_schema: 'object' }], '/definitions/0/input_schema'],
    ['input_schema an array', [{ name: 't', input_schema: [] }], '/definitions/0/input_schema'],
    ['input_schema missing', [{ name: 't' }], '/definitions/0/input_schema'],
    [
      'an external $ref',
      [{ name: 't', input_schema: obj({ properties: { a: { $ref: 'https://example.com/schemas/a.json' } } }) }],
      '/definitions/0/input_schema/properties/a/$ref',
    ],
    ['an invalid JSON Schema', [{ name: 't', input_schema: obj({ properties: { a: { type: 'strnig' } } }) }], '/definitions/0/input_schema'],
    ['an invalid JSON Schema (required not an array)', [{ name: 't', input_schema: obj({ required: 'a' }) }], '/definitions/0/input_schema'],
    ['an unknown property on a definition', [{ ...search, cache: true }], '/definitions/0/cache'],
    ['strict not a boolean', [{ ...search, strict: 'yes' }], '/definitions/0/strict'],
  ])('422: %s', async (_name, definitions, pointer) => {
    await expectRefused('tools', VALID, { mode: 'append', definitions }, pointer)
  })

  it.each<[string, Record<string, unknown>, string]>([
    ['definitions missing', { mode: 'append' }, '/definitions'],
    ['definitions not an array', { mode: 'append', definitions: search }, '/definitions'],
    ['mode missing', { definitions: [search] }, '/mode'],
    ['mode unknown', { mode: 'merge', definitions: [search] }, '/mode'],
  ])('422: %s', async (_name, body, pointer) => {
    await expectRefused('tools', VALID, body, pointer)
  })
})

describe('retention policies', () => {
  const VALID = { rules: { version: 1 } }
  const FULL = {
    version: 1,
    media: { default: 0.4, rules: [{ mime: 'application/pdf', retain: 0 }, { mime: 'image/*', retain: 0.5 }] },
    tools: {
      default: { arguments: { mode: 'keep' }, result: { mode: 'over', over: 4000, to: 500, keep: 'head' } },
      rules: [{ tool: 'fetch_page', result: { mode: 'always', to: 100 } }, { tool: 'fetch_*', arguments: { mode: 'keep' } }],
      errors: { mode: 'always', to: 0, keep: 'tail' },
      mark_truncations: false,
    },
    text: { prompt: { mode: 'keep' }, message: { mode: 'over', over: 3000, to: 1000, keep: 'head_and_tail' } },
    reasoning: 0.1,
    verbatim_within: 0.2,
    anchor_parts: 3,
  }

  it('stores a full document exactly and reports zero estimated tokens', async () => {
    const v = await api.post<VersionBody>('/api/v1/config/retention', { rules: FULL, namespace: 'acme/support' })
    expect(v.estimated_tokens).toBe(0)
    expect(v.rules).toEqual(FULL)
    expect((await api.get<VersionBody>(`/api/v1/config/retention/${v.id}`)).rules).toEqual(FULL)
  })

  it('accepts the platform default document', async () => {
    const v = await api.post<VersionBody>('/api/v1/config/retention', { rules: PLATFORM_DEFAULT_RETENTION })
    expect(v.rules).toEqual(PLATFORM_DEFAULT_RETENTION)
  })

  const rulesCases: [string, Record<string, unknown>, string][] = [
    ['version 0 is unsupported', { version: 0 }, '/rules/version'],
    ['version 2 is unsupported', { version: 2 }, '/rules/version'],
    ['a negative version', { version: -1 }, '/rules/version'],
    ['version missing', { anchor_parts: 1 }, '/rules/version'],
    ['a duplicate tool rule', { version: 1, tools: { rules: [{ tool: 'search' }, { tool: 'search' }] } }, '/rules/tools/rules/1/tool'],
    ['a tool rule after `*`', { version: 1, tools: { rules: [{ tool: '*' }, { tool: 'calc' }] } }, '/rules/tools/rules/1/tool'],
    ['`search_x` after `search_*`', { version: 1, tools: { rules: [{ tool: 'search_*' }, { tool: 'search_x' }] } }, '/rules/tools/rules/1/tool'],
    [
      'a mime rule after `*/*`',
      { version: 1, media: { rules: [{ mime: '*/*', retain: 1 }, { mime: 'text/plain', retain: 0 }] } },
      '/rules/media/rules/1/mime',
    ],
    [
      '`image/png` after `image/*`',
      { version: 1, media: { rules: [{ mime: 'image/*', retain: 1 }, { mime: 'image/png', retain: 0 }] } },
      '/rules/media/rules/1/mime',
    ],
    [
      'a duplicate mime rule',
      { version: 1, media: { rules: [{ mime: 'application/pdf', retain: 1 }, { mime: 'application/pdf', retain: 0 }] } },
      '/rules/media/rules/1/mime',
    ],
    ['`over` with to equal to over', { version: 1, tools: { default: { result: { mode: 'over', over: 100, to: 100 } } } }, '/rules/tools/default/result/to'],
    ['`over` with to above over', { version: 1, text: { message: { mode: 'over', over: 100, to: 200 } } }, '/rules/text/message/to'],
    ['`always` with to 0 and no keep', { version: 1, text: { prompt: { mode: 'always', to: 0 } } }, '/rules/text/prompt/to'],
    ['`always` to 0 in tools.errors', { version: 1, tools: { errors: { mode: 'always', to: 0 } } }, '/rules/tools/errors/to'],
    [
      '`over` that can never cut inside a tool rule',
      { version: 1, tools: { rules: [{ tool: 'a', arguments: { mode: 'over', over: 5, to: 9 } }] } },
      '/rules/tools/rules/0/arguments/to',
    ],
    ['an unknown top-level rules property', { version: 1, summary: true }, '/rules/summary'],
    ['an unknown property in media', { version: 1, media: { max: 3 } }, '/rules/media/max'],
    ['an unknown property in a media rule', { version: 1, media: { rules: [{ mime: 'image/*', retain: 1, bytes: 10 }] } }, '/rules/media/rules/0/bytes'],
    ['an unknown property in tools', { version: 1, tools: { marker: '…' } }, '/rules/tools/marker'],
    ['an unknown property in tools.default', { version: 1, tools: { default: { output: { mode: 'keep' } } } }, '/rules/tools/default/output'],
    [
      'an unknown property inside tools.default.result',
      { version: 1, tools: { default: { result: { mode: 'over', over: 10, to: 5, shape: 'head' } } } },
      '/rules/tools/default/result/shape',
    ],
    ['an unknown property inside a keep truncation', { version: 1, tools: { default: { result: { mode: 'keep', to: 5 } } } }, '/rules/tools/default/result/to'],
    ['an unknown property in a tool rule', { version: 1, tools: { rules: [{ tool: 'a', name: 'a' }] } }, '/rules/tools/rules/0/name'],
    ['an unknown property in tools.errors', { version: 1, tools: { errors: { mode: 'always', to: 5, x: 1 } } }, '/rules/tools/errors/x'],
    ['an unknown property in text', { version: 1, text: { reasoning: { mode: 'keep' } } }, '/rules/text/reasoning'],
    ['an unknown property in text.prompt', { version: 1, text: { prompt: { mode: 'always', to: 5, y: 0 } } }, '/rules/text/prompt/y'],
    ['an unknown truncation mode', { version: 1, text: { prompt: { mode: 'trim' } } }, '/rules/text/prompt/mode'],
    ['a truncation without mode', { version: 1, text: { prompt: { to: 5 } } }, '/rules/text/prompt/mode'],
    ['`over` without over', { version: 1, text: { prompt: { mode: 'over', to: 5 } } }, '/rules/text/prompt/over'],
    ['an unknown keep shape', { version: 1, text: { prompt: { mode: 'always', to: 5, keep: 'middle' } } }, '/rules/text/prompt/keep'],
    ['a negative token count', { version: 1, text: { prompt: { mode: 'always', to: -1, keep: 'head' } } }, '/rules/text/prompt/to'],
    ['a recency above 1', { version: 1, reasoning: 1.5 }, '/rules/reasoning'],
    ['a negative recency', { version: 1, verbatim_within: -0.1 }, '/rules/verbatim_within'],
    ['a media retain above 1', { version: 1, media: { rules: [{ mime: 'image/*', retain: 2 }] } }, '/rules/media/rules/0/retain'],
    ['a negative anchor_parts', { version: 1, anchor_parts: -1 }, '/rules/anchor_parts'],
    ['mark_truncations not a boolean', { version: 1, tools: { mark_truncations: 'yes' } }, '/rules/tools/mark_truncations'],
  ]

  it.each(rulesCases)('422: %s', async (_name, rules, pointer) => {
    await expectRefused('retention', VALID, { rules }, pointer)
  })

  it.each<[string, Record<string, unknown>, string]>([
    ['rules missing', {}, '/rules'],
    ['rules not an object', { rules: 1 }, '/rules'],
    ['a mode (retention has none)', { rules: { version: 1 }, mode: 'replace' }, '/mode'],
  ])('422: %s', async (_name, body, pointer) => {
    await expectRefused('retention', VALID, body, pointer)
  })
})
