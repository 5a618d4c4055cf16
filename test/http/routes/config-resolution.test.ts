import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { estimateToolTokens } from '../../../src/domain/tokens/estimate-tool-tokens.ts'
import { estimateTokens } from '../../../src/domain/tokens/estimate-tokens.ts'
import { client, configSnapshot, expectError, expectRejectedUnwritten, MODEL_A, MODEL_B, q, type VersionBody } from '../../helpers/config-api.ts'
import { createTestApp, type TestContext, type TestOrg } from '../../helpers/test-app.ts'
import { variantOf } from '../../helpers/turns.ts'

/** GET /config/defaults, /config/namespaces, /config/resolved and /config/resolved-budget (spec §2.6, §4.3). */

type Tool = { name: string; input_schema: Record<string, unknown>; description?: string | null; strict?: boolean | null }
type Warning = Record<string, unknown> & { code: string }
type Resolved = {
  estimated_tokens: number
  instructions: string | null
  namespace: string | null
  retention: Record<string, unknown>
  tools: Tool[]
  versions: { instructions: string[]; retention_policy: string | null; tools: string[] }
  warnings: Warning[]
}
type ResolvedBudget = {
  budget: Record<string, unknown>
  source: Record<string, unknown>
  warnings: Warning[]
  model_id: string | null
  namespace: string | null
}
type Defaults = { budget: Record<string, unknown>; retention: Record<string, unknown> }

const TIER1 = 'acme/support/tier1'

let ctx: TestContext
let org: TestOrg
let api: ReturnType<typeof client>

// One app per file; every test works in an organisation of its own, and everything asserted is per organisation.
beforeAll(async () => {
  // Budgets name catalogue models: publishing for an unknown model id is a 422 (decision 017).
  ctx = await createTestApp({ catalogue: [variantOf('test/model-a', MODEL_A), variantOf('test/model-b', MODEL_B)] })
})
afterAll(async () => {
  await ctx.close()
})
beforeEach(() => {
  org = ctx.org()
  api = client(ctx, org)
})

const resolved = (namespace?: string) => api.get<Resolved>(`/api/v1/config/resolved${q({ namespace })}`)
const resolvedBudget = (namespace?: string, model?: string) =>
  api.get<ResolvedBudget>(`/api/v1/config/resolved-budget${q({ namespace, model })}`)
const defaults = () => api.get<Defaults>('/api/v1/config/defaults')
const post = <T = VersionBody>(kind: string, body: Record<string, unknown>) => api.post<T>(`/api/v1/config/${kind}`, body)
const tool = (name: string, note: string): Tool => ({ name, description: note, input_schema: { type: 'object', properties: { q: { type: 'string' } } } })
const sameSet = (actual: unknown[], expected: unknown[]) => {
  expect(actual).toHaveLength(expected.length)
  expect(actual).toEqual(expect.arrayContaining(expected))
}

describe('GET /api/v1/config/defaults', () => {
  it('serves a version 3 budget and a version 1 retention document', async () => {
    const d = await defaults()
    expect(d.budget.version).toBe(3)
    expect(d.budget.headroom).toBeGreaterThanOrEqual(0)
    expect(d.budget.headroom).toBeLessThanOrEqual(0.9)
    expect(d.retention.version).toBe(1)
  })

  it('the defaults are themselves publishable documents (they pass validation)', async () => {
    const d = await defaults()
    expect((await post('retention', { rules: d.retention })).rules).toEqual(d.retention)
    expect((await post<VersionBody[]>('budgets', { budget: d.budget }))[0]!.budget).toEqual(d.budget)
  })

  it('do not change when an organisation publishes its own', async () => {
    const before = await defaults()
    await post('retention', { rules: { version: 1, anchor_parts: 9 } })
    await post('budgets', { budget: { version: 3, headroom: 0.5 } })
    expect(await defaults()).toEqual(before)
  })
})

describe('GET /api/v1/config/namespaces', () => {
  it('is empty for a new organisation', async () => {
    expect(await api.get('/api/v1/config/namespaces')).toEqual([])
  })

  it('lists namespaces used by chats and by configuration of every kind, once each, ascending', async () => {
    for (const namespace of ['support', 'acme/x', 'support']) {
      const res = await ctx.app.inject({ method: 'POST', url: '/api/v1/chats', headers: org.auth, payload: { namespace } })
      expect(res.statusCode, res.body).toBe(201)
    }
    await ctx.app.inject({ method: 'POST', url: '/api/v1/chats', headers: org.auth, payload: {} })
    await post('instructions', { body: 'x', mode: 'append', namespace: 'acme/support' })
    await post('tools', { mode: 'append', definitions: [], namespace: 'acme' })
    await post('retention', { rules: { version: 1 }, namespace: 'support' })
    await post('budgets', { budget: { version: 3, headroom: 0.1 }, namespace: 'zeta', model_ids: [MODEL_A] })
    // Org-global configuration contributes nothing.
    await post('instructions', { body: 'global', mode: 'append' })
    expect(await api.get('/api/v1/config/namespaces')).toEqual(['acme', 'acme/support', 'acme/x', 'support', 'zeta'])
  })

  it('is scoped to the caller’s organisation', async () => {
    const other = client(ctx, ctx.org())
    await other.post('/api/v1/config/instructions', { body: 'x', mode: 'append', namespace: 'theirs' })
    await post('instructions', { body: 'x', mode: 'append', namespace: 'mine' })
    expect(await api.get('/api/v1/config/namespaces')).toEqual(['mine'])
    expect(await other.get('/api/v1/config/namespaces')).toEqual(['theirs'])
  })
})

describe('GET /api/v1/config/resolved', () => {
  it('with nothing published: null instructions, no tools, the default retention, no versions, no warnings', async () => {
    const d = await defaults()
    for (const namespace of [undefined, TIER1]) {
      expect(await resolved(namespace)).toEqual({
        estimated_tokens: 0,
        instructions: null,
        namespace: namespace ?? null,
        retention: d.retention,
        tools: [],
        versions: { instructions: [], retention_policy: null, tools: [] },
        warnings: [],
      })
    }
  })

  it('an empty active instruction resolves to an empty string, not null', async () => {
    const v = await post('instructions', { body: '', mode: 'append', namespace: 'acme' })
    const r = await resolved('acme/support')
    expect(r.instructions).toBe('')
    expect(r.versions.instructions).toEqual([v.id])
  })

  describe('over a four-level tree', () => {
    let ids: Record<string, string>
    const search = tool('search', 'global search')
    const calc = tool('calc', 'global calc')
    const searchAcme = tool('search', 'acme search')
    const lookup = tool('lookup', 'tier1 lookup')

    beforeEach(async () => {
      ids = {
        iGlobal: (await post('instructions', { body: 'Global rules.', mode: 'append' })).id,
        iAcme: (await post('instructions', { body: 'Acme voice.', mode: 'append', namespace: 'acme' })).id,
        iSupport: (await post('instructions', { body: 'Support only.', mode: 'append', namespace: 'acme/support' })).id,
        iTier1: (await post('instructions', { body: 'Tier one.', mode: 'append', namespace: TIER1 })).id,
        tGlobal: (await post('tools', { mode: 'append', definitions: [search, calc] })).id,
        tAcme: (await post('tools', { mode: 'append', definitions: [searchAcme], namespace: 'acme' })).id,
        tTier1: (await post('tools', { mode: 'append', definitions: [lookup], namespace: TIER1 })).id,
        rGlobal: (await post('retention', { rules: { version: 1, anchor_parts: 1 } })).id,
        rSupport: (await post('retention', { rules: { version: 1, anchor_parts: 3 }, namespace: 'acme/support' })).id,
      }
    })

    it('appends instructions root first, merges tools nearest-wins, takes the nearest retention whole', async () => {
      const r = await resolved(TIER1)
      const text = ['Global rules.', 'Acme voice.', 'Support only.', 'Tier one.'].join('\n\n')
      expect(r.namespace).toBe(TIER1)
      expect(r.instructions).toBe(text)
      sameSet(r.tools, [searchAcme, calc, lookup])
      expect(r.retention).toEqual({ version: 1, anchor_parts: 3 })
      expect(r.versions).toEqual({
        instructions: [ids.iGlobal, ids.iAcme, ids.iSupport, ids.iTier1],
        retention_policy: ids.rSupport,
        tools: [ids.tGlobal, ids.tAcme, ids.tTier1],
      })
      sameSet(r.warnings, [
        { code: 'tool_shadowed', name: 'search', namespace: 'acme' },
        { code: 'retention_policy_overridden', namespace: 'acme/support', displaced: null },
      ])
      expect(r.estimated_tokens).toBe(estimateTokens(text) + [searchAcme, calc, lookup].map(estimateToolTokens).reduce((a, b) => a + b))
    })

    it('resolves a shallower namespace over its own lineage only', async () => {
      const r = await resolved('acme')
      expect(r.instructions).toBe('Global rules.\n\nAcme voice.')
      sameSet(r.tools, [searchAcme, calc])
      expect(r.retention).toEqual({ version: 1, anchor_parts: 1 })
      expect(r.versions).toEqual({ instructions: [ids.iGlobal, ids.iAcme], retention_policy: ids.rGlobal, tools: [ids.tGlobal, ids.tAcme] })
      expect(r.warnings).toEqual([{ code: 'tool_shadowed', name: 'search', namespace: 'acme' }])
    })

    it('the org-global scope sees only global configuration', async () => {
      const r = await resolved()
      expect(r.namespace).toBeNull()
      expect(r.instructions).toBe('Global rules.')
      sameSet(r.tools, [search, calc])
      expect(r.versions.retention_policy).toBe(ids.rGlobal)
      expect(r.warnings).toEqual([])
    })

    it('an unconfigured namespace below the tree inherits it', async () => {
      const r = await resolved(`${TIER1}/night/shift`)
      expect(r.namespace).toBe(`${TIER1}/night/shift`)
      expect(r.versions.instructions).toEqual([ids.iGlobal, ids.iAcme, ids.iSupport, ids.iTier1])
    })

    it('replace modes discard farther levels with their warnings', async () => {
      const iReplace = (await post('instructions', { body: 'Only this.', mode: 'replace', namespace: 'acme/support' })).id
      const tReplace = (await post('tools', { mode: 'replace', definitions: [tool('escalate', 'support')], namespace: 'acme/support' })).id
      const r = await resolved(TIER1)
      expect(r.instructions).toBe('Only this.\n\nTier one.')
      expect(r.versions.instructions).toEqual([iReplace, ids.iTier1])
      sameSet(r.tools, [tool('escalate', 'support'), lookup])
      expect(r.versions.tools).toEqual([tReplace, ids.tTier1])
      sameSet(r.warnings, [
        { code: 'global_instruction_replaced', namespace: 'acme/support' },
        { code: 'tool_shadowed', name: 'search', namespace: 'acme' },
        // search and calc: two distinct tools dropped.
        { code: 'global_tools_replaced', namespace: 'acme/support', dropped: 2 },
        { code: 'retention_policy_overridden', namespace: 'acme/support', displaced: null },
      ])
    })

    it('follows activation and withdrawal', async () => {
      const newer = (await post('instructions', { body: 'Acme voice v2.', mode: 'append', namespace: 'acme' })).id
      expect((await resolved('acme')).versions.instructions).toEqual([ids.iGlobal, newer])
      await api.post(`/api/v1/config/instructions/${ids.iAcme}/activate`)
      expect((await resolved('acme')).instructions).toBe('Global rules.\n\nAcme voice.')

      expect(await api.del('/api/v1/config/instructions/active?namespace=acme')).toEqual({ was_active: true })
      expect(await api.del('/api/v1/config/retention/active?namespace=acme/support')).toEqual({ was_active: true })
      expect(await api.del('/api/v1/config/tools/active?namespace=acme')).toEqual({ was_active: true })
      const r = await resolved(TIER1)
      expect(r.instructions).toBe('Global rules.\n\nSupport only.\n\nTier one.')
      sameSet(r.tools, [search, calc, lookup])
      expect(r.versions.retention_policy).toBe(ids.rGlobal)
      expect(r.warnings).toEqual([])
    })

    it('another organisation sees none of it', async () => {
      const other = client(ctx, ctx.org())
      const r = await other.get<Resolved>(`/api/v1/config/resolved?namespace=${TIER1}`)
      expect(r.instructions).toBeNull()
      expect(r.tools).toEqual([])
      expect(r.versions).toEqual({ instructions: [], retention_policy: null, tools: [] })
    })
  })

  it('sibling namespaces that share a prefix contribute nothing', async () => {
    for (const namespace of ['acme-x', 'acmex', 'acme/support-2', 'acme/supportive', 'acme/support/tier10', 'acme_/support']) {
      await post('instructions', { body: namespace, mode: 'replace', namespace })
      await post('tools', { mode: 'replace', definitions: [tool('sibling', namespace)], namespace })
      await post('retention', { rules: { version: 1, anchor_parts: 7 }, namespace })
    }
    const mine = (await post('instructions', { body: 'mine', mode: 'append', namespace: 'acme/support' })).id
    const r = await resolved(TIER1)
    expect(r.instructions).toBe('mine')
    expect(r.versions).toEqual({ instructions: [mine], retention_policy: null, tools: [] })
    expect(r.tools).toEqual([])
    expect(r.warnings).toEqual([])
  })

  it('a bad namespace query is 422', async () => {
    await expectRejectedUnwritten(ctx, () => api.call('GET', '/api/v1/config/resolved?namespace=Acme/Support'), 'query', '/namespace')
  })
})

describe('GET /api/v1/config/resolved-budget', () => {
  const budget = (headroom: number) => ({ version: 3, headroom })

  it('with nothing published: the platform default, source platform_default, echoing the scope and model asked', async () => {
    const d = await defaults()
    expect(await resolvedBudget()).toEqual({ budget: d.budget, source: { kind: 'platform_default' }, warnings: [], model_id: null, namespace: null })
    expect(await resolvedBudget(TIER1, MODEL_A)).toEqual({
      budget: d.budget,
      source: { kind: 'platform_default' },
      warnings: [],
      model_id: MODEL_A,
      namespace: TIER1,
    })
  })

  it('the org-global scope default answers without a warning', async () => {
    const [g] = await post<VersionBody[]>('budgets', { budget: budget(0.3) })
    expect(await resolvedBudget(TIER1, MODEL_A)).toEqual({
      budget: budget(0.3),
      source: { kind: 'policy', id: g!.id, namespace: null, tagged_model: null },
      warnings: [],
      model_id: MODEL_A,
      namespace: TIER1,
    })
  })

  describe('over a four-level tree', () => {
    let ids: Record<string, string>
    beforeEach(async () => {
      ids = {
        globalDefault: (await post<VersionBody[]>('budgets', { budget: budget(0.1) }))[0]!.id,
        globalA: (await post<VersionBody[]>('budgets', { budget: budget(0.2), model_ids: [MODEL_A] }))[0]!.id,
        acmeDefault: (await post<VersionBody[]>('budgets', { budget: budget(0.3), namespace: 'acme' }))[0]!.id,
        supportA: (await post<VersionBody[]>('budgets', { budget: budget(0.4), namespace: 'acme/support', model_ids: [MODEL_A] }))[0]!.id,
      }
    })

    const cases: [string, string | undefined, string | undefined, string, number, string | null, string | null][] = [
      // name, namespace asked, model asked, winning id key, headroom, level, tagged model
      ['a nearer tag wins over farther levels', TIER1, MODEL_A, 'supportA', 0.4, 'acme/support', MODEL_A],
      ['a nearer untagged policy beats a farther tag', TIER1, MODEL_B, 'acmeDefault', 0.3, 'acme', null],
      ['no model asked: only untagged policies count', TIER1, undefined, 'acmeDefault', 0.3, 'acme', null],
      ['at the global level a tag beats the untagged policy', undefined, MODEL_A, 'globalA', 0.2, null, MODEL_A],
    ]
    it.each(cases)('%s', async (_name, namespace, model, key, headroom, level, tagged) => {
      expect(await resolvedBudget(namespace, model)).toEqual({
        budget: budget(headroom),
        source: { kind: 'policy', id: ids[key], namespace: level, tagged_model: tagged },
        warnings: [{ code: 'context_budget_resolved_at', namespace: level, tagged_model: tagged }],
        model_id: model ?? null,
        namespace: namespace ?? null,
      })
    })

    it('the global scope default for another model is the plainest place: no warning', async () => {
      const r = await resolvedBudget(undefined, MODEL_B)
      expect(r.source).toEqual({ kind: 'policy', id: ids.globalDefault, namespace: null, tagged_model: null })
      expect(r.warnings).toEqual([])
    })

    it('follows withdrawal and re-activation of tags', async () => {
      expect(await api.del(`/api/v1/config/budgets/active?namespace=acme/support&model=${MODEL_A}`)).toEqual({ was_active: true })
      expect((await resolvedBudget(TIER1, MODEL_A)).source).toMatchObject({ id: ids.acmeDefault, namespace: 'acme', tagged_model: null })
      await api.post(`/api/v1/config/budgets/${ids.supportA}/activate`)
      expect((await resolvedBudget(TIER1, MODEL_A)).source).toMatchObject({ id: ids.supportA, tagged_model: MODEL_A })
    })

    it('another organisation gets the platform default', async () => {
      const other = client(ctx, ctx.org())
      expect((await other.get<ResolvedBudget>(`/api/v1/config/resolved-budget?namespace=${TIER1}&model=${MODEL_A}`)).source).toEqual({
        kind: 'platform_default',
      })
    })
  })

  it('sibling namespaces that share a prefix contribute nothing', async () => {
    await post('budgets', { budget: budget(0.5), namespace: 'acme/support-2' })
    await post('budgets', { budget: budget(0.6), namespace: 'acme/supportive', model_ids: [MODEL_A] })
    await post('budgets', { budget: budget(0.7), namespace: 'acmex' })
    expect((await resolvedBudget(TIER1, MODEL_A)).source).toEqual({ kind: 'platform_default' })
  })

  it.each([
    ['namespace=Bad', '/namespace'],
    ['model=gpt-4', '/model'],
  ])('a bad query %s is 422', async (query, pointer) => {
    await expectRejectedUnwritten(ctx, () => api.call('GET', `/api/v1/config/resolved-budget?${query}`), 'query', pointer)
  })
})

describe('every read-only configuration endpoint needs an API key', () => {
  it.each(['/api/v1/config/defaults', '/api/v1/config/namespaces', '/api/v1/config/resolved', '/api/v1/config/resolved-budget'])(
    '%s is 401 without a key or with an invalid one',
    async (url) => {
      const before = configSnapshot(ctx)
      expectError(await ctx.app.inject({ url }), 401, 'unauthorized')
      expectError(await ctx.app.inject({ url, headers: { authorization: 'Bearer pk_invalid' } }), 401, 'unauthorized')
      expectError(await ctx.app.inject({ url, headers: { authorization: org.key } }), 401, 'unauthorized')
      expect(configSnapshot(ctx)).toEqual(before)
    },
  )
})
