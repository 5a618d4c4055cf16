import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import {
  client,
  configSnapshot,
  expectRejectedUnwritten,
  MODEL_A,
  MODEL_B,
  q,
  type VersionBody,
} from '../../helpers/config-api.ts'
import { createTestApp, type TestContext } from '../../helpers/test-app.ts'
import { variantOf } from '../../helpers/turns.ts'

const BASE = '/api/v1/config/budgets'
const BUDGET = { version: 3, headroom: 0.2, history_mode: 'drop_oldest', eager_compaction: { mode: 'at_fill', at: 0.75 }, max_history_tokens: 64_000 }

let ctx: TestContext
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
  api = client(ctx, ctx.org())
})

const publish = (body: Record<string, unknown>) => api.post<VersionBody[]>(BASE, body)
const active = (namespace?: string) => api.get<VersionBody[]>(`${BASE}${q({ namespace })}`)
const versions = (namespace?: string, model?: string) => api.get<VersionBody[]>(`${BASE}/versions${q({ namespace, model })}`)
const withdraw = (namespace?: string, model?: string) => api.del<{ was_active: boolean }>(`${BASE}/active${q({ namespace, model })}`)
const byModel = (rows: VersionBody[]) => Object.fromEntries(rows.map((r) => [r.model_id ?? 'default', r]))

describe('budget publishing fans out over model_ids', () => {
  it('writes one version row per model id, each with the same document', async () => {
    const before = configSnapshot(ctx).versions
    const rows = await publish({ budget: BUDGET, model_ids: [MODEL_A, MODEL_B], namespace: 'acme' })
    expect(rows).toHaveLength(2)
    expect(configSnapshot(ctx).versions).toBe(before + 2)
    expect(rows.map((r) => r.model_id).sort()).toEqual([MODEL_A, MODEL_B].sort())
    for (const row of rows) {
      expect(row).toMatchObject({ version: 1, is_active: true, namespace: 'acme', budget: BUDGET })
      expect(row.mode ?? null).toBeNull()
    }
    expect(rows[0]!.id).not.toBe(rows[1]!.id)
    // Both are active at the scope; no scope default was published.
    const listed = byModel(await active('acme'))
    expect(Object.keys(listed).sort()).toEqual([MODEL_A, MODEL_B].sort())
    expect(await versions('acme')).toEqual([])
  })

  it.each([
    ['absent', undefined],
    ['empty', []],
  ])('an %s model_ids publishes the scope default (model_id null)', async (_name, model_ids) => {
    const rows = await publish({ budget: BUDGET, ...(model_ids ? { model_ids } : {}) })
    expect(rows).toHaveLength(1)
    expect(rows[0]!.model_id ?? null).toBeNull()
    expect(rows[0]!.version).toBe(1)
    expect((await versions()).map((v) => v.id)).toEqual([rows[0]!.id])
  })

  it('versions count per (scope, model): the default, each tag and each scope have their own sequence', async () => {
    const d1 = (await publish({ budget: BUDGET }))[0]!
    const [a1] = await publish({ budget: BUDGET, model_ids: [MODEL_A] })
    const d2 = (await publish({ budget: { ...BUDGET, headroom: 0.3 } }))[0]!
    const second = byModel(await publish({ budget: { ...BUDGET, headroom: 0.4 }, model_ids: [MODEL_A, MODEL_B] }))
    const acme = (await publish({ budget: BUDGET, namespace: 'acme', model_ids: [MODEL_A] }))[0]!

    expect([d1.version, d2.version]).toEqual([1, 2])
    expect([a1!.version, second[MODEL_A]!.version, second[MODEL_B]!.version]).toEqual([1, 2, 1])
    expect(acme.version).toBe(1)

    expect((await versions()).map((v) => [v.version, v.is_active, v.model_id ?? null])).toEqual([
      [2, true, null],
      [1, false, null],
    ])
    expect((await versions(undefined, MODEL_A)).map((v) => [v.version, v.is_active, v.budget])).toEqual([
      [2, true, { ...BUDGET, headroom: 0.4 }],
      [1, false, BUDGET],
    ])
    expect((await versions(undefined, MODEL_B)).map((v) => v.version)).toEqual([1])
    expect((await versions('acme', MODEL_A)).map((v) => v.id)).toEqual([acme.id])
    expect(await versions('acme')).toEqual([])

    // The active list at the global scope has the default and each model's newest tag.
    const listed = byModel(await active())
    expect(Object.keys(listed).sort()).toEqual(['default', MODEL_A, MODEL_B].sort())
    expect(listed.default!.id).toBe(d2.id)
    expect(listed[MODEL_A]!.id).toBe(second[MODEL_A]!.id)
  })

  it('a repeated model id is published once', async () => {
    const rows = await publish({ budget: BUDGET, model_ids: [MODEL_A, MODEL_A] })
    expect(rows).toHaveLength(1)
    expect((await versions(undefined, MODEL_A)).length).toBe(1)
  })

  it('GET by id and activate work on tagged rows and keep their model', async () => {
    const [old] = await publish({ budget: BUDGET, model_ids: [MODEL_A] })
    const [newer] = await publish({ budget: { ...BUDGET, headroom: 0 }, model_ids: [MODEL_A] })
    const def = (await publish({ budget: BUDGET }))[0]!

    const got = await api.get<VersionBody>(`${BASE}/${old!.id}`)
    expect(got).toMatchObject({ id: old!.id, version: 1, is_active: false, model_id: MODEL_A, budget: BUDGET })

    const activated = await api.post<VersionBody>(`${BASE}/${old!.id}/activate`)
    expect(activated).toMatchObject({ id: old!.id, is_active: true, model_id: MODEL_A })
    expect((await api.get<VersionBody>(`${BASE}/${newer!.id}`)).is_active).toBe(false)
    // The scope default is a different (scope, model): untouched.
    expect((await api.get<VersionBody>(`${BASE}/${def.id}`)).is_active).toBe(true)
  })
})

describe('budget withdraw addresses (scope, model)', () => {
  it('with a model withdraws only that tag; without one only the scope default', async () => {
    await publish({ budget: BUDGET, namespace: 'acme' })
    await publish({ budget: BUDGET, namespace: 'acme', model_ids: [MODEL_A, MODEL_B] })

    expect(await withdraw('acme', MODEL_A)).toEqual({ was_active: true })
    expect(Object.keys(byModel(await active('acme'))).sort()).toEqual(['default', MODEL_B].sort())
    expect(await withdraw('acme', MODEL_A)).toEqual({ was_active: false })

    expect(await withdraw('acme')).toEqual({ was_active: true })
    expect(Object.keys(byModel(await active('acme')))).toEqual([MODEL_B])
    expect(await withdraw('acme')).toEqual({ was_active: false })

    // The withdrawn versions stay restorable.
    expect((await versions('acme', MODEL_A))[0]!.is_active).toBe(false)
    expect((await versions('acme')).length).toBe(1)
  })

  it('for a model with no tag is was_active false even when the scope default exists', async () => {
    await publish({ budget: BUDGET })
    expect(await withdraw(undefined, MODEL_A)).toEqual({ was_active: false })
    expect((await active()).length).toBe(1)
  })
})

describe('budget model ids are validated', () => {
  it('a malformed model id in model_ids is 422 and writes nothing, not even the valid ones', async () => {
    await expectRejectedUnwritten(
      ctx,
      () => api.call('POST', BASE, { budget: BUDGET, model_ids: [MODEL_A, 'gpt-4'] }),
      'body',
      '/model_ids/1',
    )
  })

  it('a well-formed id of no catalogue model is 422 validation_failed pointing at it, and writes nothing', async () => {
    const unknown = '5e4d3c2b-1a09-4f8e-9d7c-6b5a4f3e2d1c'
    await expectRejectedUnwritten(ctx, () => api.call('POST', BASE, { budget: BUDGET, model_ids: [MODEL_A, unknown] }), 'body', '/model_ids/1')
  })

  it('model_ids must be an array', async () => {
    await expectRejectedUnwritten(ctx, () => api.call('POST', BASE, { budget: BUDGET, model_ids: MODEL_A }), 'body', '/model_ids')
  })

  it.each([`${BASE}/versions`, `${BASE}/active`])('a malformed model query on %s is 422', async (path) => {
    const method = path.endsWith('active') ? 'DELETE' : 'GET'
    await expectRejectedUnwritten(ctx, () => api.call(method, `${path}?model=not-a-uuid`), 'query', '/model')
  })
})

describe('ContextBudget validation: 422 validation_failed with a pointer, nothing written', () => {
  const cases: [string, Record<string, unknown>, string][] = [
    ['version 2', { ...BUDGET, version: 2 }, '/budget/version'],
    ['version 4', { ...BUDGET, version: 4 }, '/budget/version'],
    ['version as a string', { ...BUDGET, version: '3' }, '/budget/version'],
    ['version missing', { headroom: 0.1 }, '/budget/version'],
    ['headroom below 0', { ...BUDGET, headroom: -0.01 }, '/budget/headroom'],
    ['headroom above 0.9', { ...BUDGET, headroom: 0.91 }, '/budget/headroom'],
    ['headroom 1', { ...BUDGET, headroom: 1 }, '/budget/headroom'],
    ['headroom missing', { version: 3 }, '/budget/headroom'],
    ['headroom as a string', { ...BUDGET, headroom: '0.1' }, '/budget/headroom'],
    ['eager_compaction.at 0', { ...BUDGET, eager_compaction: { mode: 'at_fill', at: 0 } }, '/budget/eager_compaction/at'],
    ['eager_compaction.at negative', { ...BUDGET, eager_compaction: { mode: 'at_fill', at: -0.5 } }, '/budget/eager_compaction/at'],
    ['eager_compaction.at above 1', { ...BUDGET, eager_compaction: { mode: 'at_fill', at: 1.01 } }, '/budget/eager_compaction/at'],
    ['eager_compaction at_fill without at', { ...BUDGET, eager_compaction: { mode: 'at_fill' } }, '/budget/eager_compaction/at'],
    ['eager_compaction with an unknown mode', { ...BUDGET, eager_compaction: { mode: 'sometimes' } }, '/budget/eager_compaction/mode'],
    ['eager_compaction without mode', { ...BUDGET, eager_compaction: {} }, '/budget/eager_compaction/mode'],
    ['history_mode unknown', { ...BUDGET, history_mode: 'forget' }, '/budget/history_mode'],
    ['max_history_tokens 31999', { ...BUDGET, max_history_tokens: 31_999 }, '/budget/max_history_tokens'],
    ['max_history_tokens 0', { ...BUDGET, max_history_tokens: 0 }, '/budget/max_history_tokens'],
    ['max_history_tokens not an integer', { ...BUDGET, max_history_tokens: 32_000.5 }, '/budget/max_history_tokens'],
    ['max_history_tokens above int32', { ...BUDGET, max_history_tokens: 2 ** 31 }, '/budget/max_history_tokens'],
    ['an unknown top-level budget property', { ...BUDGET, window: 128_000 }, '/budget/window'],
    ['an unknown property inside eager_compaction off', { ...BUDGET, eager_compaction: { mode: 'off', at: 0.5 } }, '/budget/eager_compaction/at'],
    [
      'an unknown property inside eager_compaction at_fill',
      { ...BUDGET, eager_compaction: { mode: 'at_fill', at: 0.5, extra: true } },
      '/budget/eager_compaction/extra',
    ],
  ]

  it.each(cases)('%s', async (_name, budget, pointer) => {
    await publish({ budget: BUDGET, namespace: 'acme' })
    const before = await versions('acme')
    for (const extra of [{}, { model_ids: [MODEL_A, MODEL_B] }]) {
      await expectRejectedUnwritten(ctx, () => api.call('POST', BASE, { budget, namespace: 'acme', ...extra }), 'body', pointer)
    }
    expect(await versions('acme')).toEqual(before)
    expect(await versions('acme', MODEL_A)).toEqual([])
  })

  it('the budget must be an object', async () => {
    await expectRejectedUnwritten(ctx, () => api.call('POST', BASE, { budget: 3 }), 'body', '/budget')
  })

  it.each<[string, Record<string, unknown>]>([
    ['headroom 0', { version: 3, headroom: 0 }],
    ['headroom 0.9', { version: 3, headroom: 0.9 }],
    ['eager_compaction.at 1', { version: 3, headroom: 0.1, eager_compaction: { mode: 'at_fill', at: 1 } }],
    ['eager_compaction.at just above 0', { version: 3, headroom: 0.1, eager_compaction: { mode: 'at_fill', at: 0.001 } }],
    ['eager_compaction off', { version: 3, headroom: 0.1, eager_compaction: { mode: 'off' } }],
    ['max_history_tokens 32000', { version: 3, headroom: 0.1, max_history_tokens: 32_000 }],
    ['max_history_tokens null', { version: 3, headroom: 0.1, max_history_tokens: null }],
    ['history_mode summarize', { version: 3, headroom: 0.1, history_mode: 'summarize' }],
  ])('accepts the boundary: %s, and stores it as sent', async (_name, budget) => {
    const [row] = await publish({ budget })
    expect(row!.budget).toEqual(budget)
    expect((await api.get<VersionBody>(`${BASE}/${row!.id}`)).budget).toEqual(budget)
  })
})
