import { Decimal } from 'decimal.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ChargeType, CreditType } from '../../../src/store/balance.ts'
import { expectError, expectProblem, UUID } from '../../helpers/http.ts'
import { createTestApp, type TestContext, type TestOrg } from '../../helpers/test-app.ts'

/*
 * GET /api/v1/usage (spec §2.8 UsageReport, §4.4; decisions §7 window; docs/decisions/006) over
 * seeded balance entries. The clock is 2026-11-22T10:30:00Z, so every window ends at 11:00.
 */

let clock = new Date('2026-11-22T10:30:00.000Z')
let ctx: TestContext
let acme: TestOrg
let secondKeyId: string
let other: TestOrg
let empty: TestOrg

const ECHO = { id: '76051394-1c5e-4b05-bc0d-9828efd13d4c', name: 'sandbox/echo' }
const SONNET = { id: '155c76fc-a902-4d19-918e-f1a10511c1a8', name: 'anthropic/claude-sonnet-4.5' }

type Tokens = { input_tokens?: number; output_tokens?: number; reasoning_tokens?: number; cache_read_tokens?: number; cache_write_tokens?: number }
type Seeded = {
  run: string
  type: ChargeType
  key: 'k1' | 'k2' | null
  model: typeof ECHO
  namespace: string | null
  at: string
  tokens: Tokens
  cost: string
}

const run = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`

/*
 * The acme organisation's run charges. r1..r6 lie in the 24h window [2026-11-21T11:00, 2026-11-22T11:00);
 * r7, r8 only in 7d; r10 only in 30d; r11 only in 90d; r9 is at `to` and r12 just before the 90d `from`.
 */
const CHARGES: Seeded[] = [
  { run: run(1), type: 'usage', key: 'k1', model: ECHO, namespace: 'acme', at: '2026-11-22T10:15:00.000Z',
    tokens: { input_tokens: 100, output_tokens: 50, reasoning_tokens: 20, cache_read_tokens: 10 }, cost: '0.0001234567' },
  { run: run(2), type: 'usage', key: 'k2', model: SONNET, namespace: 'acme/support', at: '2026-11-22T10:45:00.000Z',
    tokens: { input_tokens: 1000, output_tokens: 200, cache_write_tokens: 300 }, cost: '0.0150000001' },
  { run: run(3), type: 'compaction', key: 'k1', model: ECHO, namespace: 'acme/support/tier2', at: '2026-11-22T09:05:00.000Z',
    tokens: { input_tokens: 500, output_tokens: 100 }, cost: '0.0000000009' },
  { run: run(4), type: 'usage', key: null, model: SONNET, namespace: null, at: '2026-11-21T23:59:59.999Z',
    tokens: { input_tokens: 2000, output_tokens: 300, reasoning_tokens: 100 }, cost: '0.25' },
  { run: run(5), type: 'usage', key: 'k2', model: ECHO, namespace: 'acme2', at: '2026-11-21T11:00:00.000Z',
    tokens: { input_tokens: 10, output_tokens: 5 }, cost: '0.00001' },
  { run: run(6), type: 'usage', key: 'k1', model: SONNET, namespace: 'beta', at: '2026-11-22T00:00:00.000Z',
    tokens: { input_tokens: 7, output_tokens: 3 }, cost: '0.3333333333' },
  { run: run(7), type: 'usage', key: 'k1', model: ECHO, namespace: 'acme', at: '2026-11-21T10:59:59.999Z',
    tokens: { input_tokens: 1, output_tokens: 1 }, cost: '1.00' },
  { run: run(8), type: 'usage', key: 'k2', model: SONNET, namespace: 'acme/support', at: '2026-11-18T12:00:00.000Z',
    tokens: { input_tokens: 1, output_tokens: 1 }, cost: '2.00' },
  { run: run(9), type: 'usage', key: 'k1', model: ECHO, namespace: 'acme', at: '2026-11-22T11:00:00.000Z',
    tokens: { input_tokens: 1, output_tokens: 1 }, cost: '100.00' },
  { run: run(10), type: 'compaction', key: 'k1', model: ECHO, namespace: 'acme', at: '2026-11-01T00:00:00.000Z',
    tokens: { input_tokens: 1, output_tokens: 1 }, cost: '3.00' },
  { run: run(11), type: 'usage', key: null, model: SONNET, namespace: null, at: '2026-09-01T00:00:00.000Z',
    tokens: { input_tokens: 1, output_tokens: 1 }, cost: '4.00' },
  { run: run(12), type: 'usage', key: 'k2', model: ECHO, namespace: 'acme', at: '2026-08-24T10:59:59.999Z',
    tokens: { input_tokens: 1, output_tokens: 1 }, cost: '50.00' },
]
/** The acme organisation's credits: inside the 24h window, and one outside every window. */
const CREDITS: { type: CreditType; amount: string; at: string }[] = [
  { type: 'topup', amount: '10.00', at: '2026-11-22T08:20:00.000Z' },
  { type: 'promotional_credit', amount: '5.5', at: '2026-11-21T15:00:00.000Z' },
  { type: 'refund', amount: '1.25', at: '2026-11-22T11:30:00.000Z' },
]

type Json = Record<string, any>

function seed() {
  const keyOf = (key: Seeded['key']) => (key === 'k1' ? acme.keyId : key === 'k2' ? secondKeyId : null)
  for (const c of CHARGES) {
    const written = ctx.store.balance.charge({
      orgId: acme.orgId,
      type: c.type,
      runId: c.run,
      apiKeyId: keyOf(c.key),
      modelId: c.model.id,
      modelName: c.model.name,
      namespace: c.namespace,
      usage: { input_tokens: 0, output_tokens: 0, reasoning_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0, ...c.tokens },
      cost: c.cost,
      occurredAt: c.at,
    })
    expect(written).not.toBeNull()
  }
  for (const c of CREDITS) ctx.store.balance.add(acme.orgId, c.type, c.amount, c.at)

  // Another organisation with the same models, namespaces and hours: never visible to acme.
  ctx.store.balance.charge({
    orgId: other.orgId,
    type: 'usage',
    runId: run(901),
    apiKeyId: other.keyId,
    modelId: ECHO.id,
    modelName: ECHO.name,
    namespace: 'acme',
    usage: { input_tokens: 9999, output_tokens: 999, reasoning_tokens: 99, cache_read_tokens: 9, cache_write_tokens: 9 },
    cost: '9.99',
    occurredAt: '2026-11-22T10:10:00.000Z',
  })
  ctx.store.balance.add(other.orgId, 'topup', '100', '2026-11-22T10:05:00.000Z')
}

beforeAll(async () => {
  ctx = await createTestApp({ now: () => clock })
  acme = ctx.org('acme')
  secondKeyId = ctx.store.apiKeys.create(acme.orgId, 'second').id
  other = ctx.org('other')
  empty = ctx.org('empty')
  seed()
})
afterAll(async () => {
  await ctx.close()
})

async function usage(query: string, org: TestOrg = acme): Promise<Json> {
  const res = await ctx.app.inject({ url: `/api/v1/usage?${query}`, headers: org.auth })
  expect(res.statusCode, res.body).toBe(200)
  expect(res.headers['content-type']).toMatch(/^application\/json/)
  return res.json()
}

type Totals = { runs: number; input_tokens: number; output_tokens: number; reasoning_tokens: number; cache_read_tokens: number; cache_write_tokens: number; cost: string }
const ZERO: Totals = { runs: 0, input_tokens: 0, output_tokens: 0, reasoning_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0, cost: '0' }
const totals = (t: Partial<Totals>): Totals => ({ ...ZERO, ...t })

/** A row's UsageTotals equal `expected`; cost compared as an exact decimal. */
function expectTotals(row: Json, expected: Totals, label = '') {
  const { cost, ...counts } = expected
  expect(row, label).toMatchObject(counts)
  expect(typeof row.cost, label).toBe('string')
  expect(row.cost, label).toMatch(/^-?\d+(\.\d{1,10})?$/)
  expect(new Decimal(row.cost).eq(cost), `${label} cost ${row.cost} = ${cost}`).toBe(true)
  expect(new Decimal(row.cost).isNegative(), `${label} spend is not negative`).toBe(false)
}

const ROW_KEYS = ['cache_read_tokens', 'cache_write_tokens', 'cost', 'input_tokens', 'output_tokens', 'reasoning_tokens', 'runs']
function expectRowShape(row: Json) {
  for (const key of ROW_KEYS) expect(row).toHaveProperty(key)
  for (const key of Object.keys(row)) expect([...ROW_KEYS, 'bucket', 'group']).toContain(key)
  for (const key of ROW_KEYS.filter((k) => k !== 'cost')) expect(Number.isInteger(row[key]) && row[key] >= 0, key).toBe(true)
}

// The 24h window's totals, worked by hand from r1..r6 (credits add no runs, tokens or cost):
//   runs 6; input 100+1000+500+2000+10+7 = 3617; output 50+200+100+300+5+3 = 658; reasoning 20+100 = 120
//   cache read 10; cache write 300
//   cost 0.0001234567 + 0.0150000001 + 0.0000000009 + 0.25 + 0.00001 + 0.3333333333 = 0.598466791
const DAY_TOTALS = totals({ runs: 6, input_tokens: 3617, output_tokens: 658, reasoning_tokens: 120, cache_read_tokens: 10, cache_write_tokens: 300, cost: '0.598466791' })

describe('GET /api/v1/usage: the window (decisions §7)', () => {
  it('ends at the start of the next whole hour after now and spans the range', async () => {
    const expected = {
      '24h': '2026-11-21T11:00:00.000Z',
      '7d': '2026-11-15T11:00:00.000Z',
      '30d': '2026-10-23T11:00:00.000Z',
      '90d': '2026-08-24T11:00:00.000Z',
    }
    for (const [range, from] of Object.entries(expected)) {
      const body = await usage(`range=${range}`)
      expect(new Date(body.window.from).toISOString(), range).toBe(from)
      expect(new Date(body.window.to).toISOString(), range).toBe('2026-11-22T11:00:00.000Z')
    }
  })

  it('moves to the next hour when now is exactly on the hour, and at the last millisecond of one', async () => {
    try {
      clock = new Date('2026-11-22T10:00:00.000Z')
      expect((await usage('range=24h')).window).toEqual({ from: '2026-11-21T11:00:00.000Z', to: '2026-11-22T11:00:00.000Z' })
      clock = new Date('2026-11-22T10:59:59.999Z')
      expect((await usage('range=24h')).window).toEqual({ from: '2026-11-21T11:00:00.000Z', to: '2026-11-22T11:00:00.000Z' })
      clock = new Date('2026-12-31T23:10:00.000Z')
      expect((await usage('range=7d', empty)).window).toEqual({ from: '2026-12-25T00:00:00.000Z', to: '2027-01-01T00:00:00.000Z' })
    } finally {
      clock = new Date('2026-11-22T10:30:00.000Z')
    }
  })

  it('counts each range’s entries, half-open: from included, to excluded', async () => {
    // 24h: r1..r6 (r5 is exactly at `from`; r9 exactly at `to` is out; r7 one millisecond before `from` is out)
    expectTotals((await usage('range=24h')).rows[0], DAY_TOTALS, '24h')
    // 7d adds r7 (1.00) and r8 (2.00)
    expectTotals((await usage('range=7d')).rows[0], { ...DAY_TOTALS, runs: 8, input_tokens: 3619, output_tokens: 660, cost: '3.598466791' }, '7d')
    // 30d adds r10 (3.00)
    expectTotals((await usage('range=30d')).rows[0], { ...DAY_TOTALS, runs: 9, input_tokens: 3620, output_tokens: 661, cost: '6.598466791' }, '30d')
    // 90d adds r11 (4.00); r12 is one millisecond before its `from`
    expectTotals((await usage('range=90d')).rows[0], { ...DAY_TOTALS, runs: 10, input_tokens: 3621, output_tokens: 662, cost: '10.598466791' }, '90d')
  })
})

describe('GET /api/v1/usage: validation and access', () => {
  it('needs an API key', async () => {
    expectError(await ctx.app.inject({ url: '/api/v1/usage?range=24h' }), 401, 'unauthorized')
    expectError(await ctx.app.inject({ url: '/api/v1/usage?range=24h', headers: { authorization: 'Bearer pk_nope' } }), 401, 'unauthorized')
  })

  it('requires range', async () => {
    expectProblem(await ctx.app.inject({ url: '/api/v1/usage', headers: acme.auth }), 'query', '/range')
    expectProblem(await ctx.app.inject({ url: '/api/v1/usage?bin=hour', headers: acme.auth }), 'query', '/range')
  })

  it('rejects an unknown range, bin, group_by or a malformed namespace', async () => {
    for (const range of ['1d', '24H', '365d', '']) {
      expectProblem(await ctx.app.inject({ url: `/api/v1/usage?range=${range}`, headers: acme.auth }), 'query', '/range')
    }
    for (const bin of ['week', 'minute', 'HOUR']) {
      expectProblem(await ctx.app.inject({ url: `/api/v1/usage?range=24h&bin=${bin}`, headers: acme.auth }), 'query', '/bin')
    }
    for (const dimension of ['customer', 'models', 'key']) {
      expectProblem(await ctx.app.inject({ url: `/api/v1/usage?range=24h&group_by=${dimension}`, headers: acme.auth }), 'query', '/group_by')
    }
    for (const namespace of ['Acme', 'acme/', '/acme', 'a%20b']) {
      expectProblem(await ctx.app.inject({ url: `/api/v1/usage?range=24h&namespace=${namespace}`, headers: acme.auth }), 'query', '/namespace')
    }
  })
})

describe('GET /api/v1/usage: totals (no bin, no group)', () => {
  it('is one row of the window’s totals, with the report’s own fields', async () => {
    const body = await usage('range=24h')
    expect(body.cached).toBe(true)
    expect(body.bin ?? null).toBeNull()
    expect(body.group_by ?? null).toBeNull()
    expect(body.namespace ?? null).toBeNull()
    expect(body.rows).toHaveLength(1)
    const [row] = body.rows
    expectRowShape(row)
    expect(row.bucket ?? null).toBeNull()
    expect(row.group ?? null).toBeNull()
    expectTotals(row, DAY_TOTALS)
  })

  it('is one zero row for an organisation with no entries', async () => {
    const body = await usage('range=24h', empty)
    expect(body.rows).toHaveLength(1)
    expectRowShape(body.rows[0])
    expectTotals(body.rows[0], ZERO)
    expect(body.cached).toBe(true)
  })

  it('is one zero row for a window that holds only credits', async () => {
    const credited = ctx.org('credited')
    ctx.store.balance.add(credited.orgId, 'topup', '25.00', '2026-11-22T09:00:00.000Z')
    ctx.store.balance.add(credited.orgId, 'adjustment', '-2.5', '2026-11-22T09:30:00.000Z')
    const body = await usage('range=24h', credited)
    expect(body.rows).toHaveLength(1)
    expectTotals(body.rows[0], ZERO)
  })

  it('never shows another organisation’s entries', async () => {
    const body = await usage('range=24h', other)
    // other's single run: 9999 input, cost 9.99; acme's entries are not there
    expectTotals(body.rows[0], totals({ runs: 1, input_tokens: 9999, output_tokens: 999, reasoning_tokens: 99, cache_read_tokens: 9, cache_write_tokens: 9, cost: '9.99' }))
  })
})

describe('GET /api/v1/usage: bins', () => {
  it('bins by hour, listing only hours with entries, in order', async () => {
    const body = await usage('range=24h&bin=hour')
    expect(body.bin).toBe('hour')
    expect(body.cached).toBe(true)
    for (const row of body.rows) {
      expectRowShape(row)
      expect(row.group ?? null).toBeNull()
    }
    const buckets = body.rows.map((r: Json) => new Date(r.bucket).toISOString())
    expect(buckets).toEqual([
      '2026-11-21T11:00:00.000Z', // r5
      '2026-11-21T15:00:00.000Z', // promotional credit: an entry, so a (zero) bucket
      '2026-11-21T23:00:00.000Z', // r4 at 23:59:59.999
      '2026-11-22T00:00:00.000Z', // r6
      '2026-11-22T08:00:00.000Z', // topup
      '2026-11-22T09:00:00.000Z', // r3
      '2026-11-22T10:00:00.000Z', // r1 + r2
    ])
    const at = (iso: string) => body.rows.find((r: Json) => new Date(r.bucket).toISOString() === iso)
    expectTotals(at('2026-11-21T11:00:00.000Z'), totals({ runs: 1, input_tokens: 10, output_tokens: 5, cost: '0.00001' }))
    expectTotals(at('2026-11-21T15:00:00.000Z'), ZERO)
    expectTotals(at('2026-11-21T23:00:00.000Z'), totals({ runs: 1, input_tokens: 2000, output_tokens: 300, reasoning_tokens: 100, cost: '0.25' }))
    expectTotals(at('2026-11-22T08:00:00.000Z'), ZERO)
    // r1 + r2: input 1100, output 250, reasoning 20, cache read 10, cache write 300, cost 0.0001234567 + 0.0150000001
    expectTotals(at('2026-11-22T10:00:00.000Z'),
      totals({ runs: 2, input_tokens: 1100, output_tokens: 250, reasoning_tokens: 20, cache_read_tokens: 10, cache_write_tokens: 300, cost: '0.0151234568' }))
  })

  it('bins by UTC day', async () => {
    const body = await usage('range=24h&bin=day')
    expect(body.bin).toBe('day')
    expect(body.rows.map((r: Json) => new Date(r.bucket).toISOString())).toEqual(['2026-11-21T00:00:00.000Z', '2026-11-22T00:00:00.000Z'])
    // 21st: r5 + r4 (+ promotional credit) = runs 2, input 2010, output 305, reasoning 100, cost 0.25001
    expectTotals(body.rows[0], totals({ runs: 2, input_tokens: 2010, output_tokens: 305, reasoning_tokens: 100, cost: '0.25001' }))
    // 22nd: r6 + r3 + r1 + r2 (+ topup) = runs 4, input 1607, output 353, reasoning 20, cost 0.348456791
    expectTotals(body.rows[1],
      totals({ runs: 4, input_tokens: 1607, output_tokens: 353, reasoning_tokens: 20, cache_read_tokens: 10, cache_write_tokens: 300, cost: '0.348456791' }))
  })

  it('bins by day over 7 days, including days before the 24h window', async () => {
    const body = await usage('range=7d&bin=day')
    const days = body.rows.map((r: Json) => new Date(r.bucket).toISOString())
    expect(days).toEqual(['2026-11-18T00:00:00.000Z', '2026-11-21T00:00:00.000Z', '2026-11-22T00:00:00.000Z'])
    // the 21st now also holds r7 (1.00) at 10:59:59.999
    expectTotals(body.rows[1], totals({ runs: 3, input_tokens: 2011, output_tokens: 306, reasoning_tokens: 100, cost: '1.25001' }))
  })

  it('has no rows when binning an organisation with no entries', async () => {
    expect((await usage('range=24h&bin=hour', empty)).rows).toEqual([])
  })
})

/** The row whose group matches `group` (all listed fields equal). */
function rowWith(rows: Json[], group: Json): Json {
  const found = rows.filter((r) => Object.entries(group).every(([k, v]) => r.group?.[k] === v))
  expect(found, JSON.stringify(group)).toHaveLength(1)
  return found[0]!
}

describe('GET /api/v1/usage: group_by', () => {
  it('model: model_id and model_name, with the null model for credits', async () => {
    const body = await usage('range=24h&group_by=model')
    expect(body.group_by).toBe('model')
    expect(body.cached).toBe(true)
    expect(body.rows).toHaveLength(3)
    for (const row of body.rows) {
      expectRowShape(row)
      expect(Object.keys(row.group).sort()).toEqual(['dimension', 'model_id', 'model_name'])
      expect(row.group.dimension).toBe('model')
    }
    // echo: r1 + r3 + r5 = runs 3, input 610, output 155, reasoning 20, cache read 10
    //   cost 0.0001234567 + 0.0000000009 + 0.00001 = 0.0001334576
    expectTotals(rowWith(body.rows, { model_id: ECHO.id, model_name: ECHO.name }),
      totals({ runs: 3, input_tokens: 610, output_tokens: 155, reasoning_tokens: 20, cache_read_tokens: 10, cost: '0.0001334576' }))
    // sonnet: r2 + r4 + r6 = runs 3, input 3007, output 503, reasoning 100, cache write 300
    //   cost 0.0150000001 + 0.25 + 0.3333333333 = 0.5983333334
    expectTotals(rowWith(body.rows, { model_id: SONNET.id, model_name: SONNET.name }),
      totals({ runs: 3, input_tokens: 3007, output_tokens: 503, reasoning_tokens: 100, cache_write_tokens: 300, cost: '0.5983333334' }))
    // the two credits: the null model, zero everything
    expectTotals(rowWith(body.rows, { model_id: null, model_name: null }), ZERO)
  })

  it('namespace: each namespace exactly, and null for the org-global scope', async () => {
    const body = await usage('range=24h&group_by=namespace')
    expect(body.group_by).toBe('namespace')
    for (const row of body.rows) expect(Object.keys(row.group).sort()).toEqual(['dimension', 'namespace'])
    expect(body.rows.map((r: Json) => r.group.namespace).sort()).toEqual(
      ['acme', 'acme/support', 'acme/support/tier2', 'acme2', 'beta', null].sort(),
    )
    expectTotals(rowWith(body.rows, { namespace: 'acme' }), totals({ runs: 1, input_tokens: 100, output_tokens: 50, reasoning_tokens: 20, cache_read_tokens: 10, cost: '0.0001234567' }))
    expectTotals(rowWith(body.rows, { namespace: 'acme/support' }), totals({ runs: 1, input_tokens: 1000, output_tokens: 200, cache_write_tokens: 300, cost: '0.0150000001' }))
    expectTotals(rowWith(body.rows, { namespace: 'acme/support/tier2' }), totals({ runs: 1, input_tokens: 500, output_tokens: 100, cost: '0.0000000009' }))
    expectTotals(rowWith(body.rows, { namespace: 'acme2' }), totals({ runs: 1, input_tokens: 10, output_tokens: 5, cost: '0.00001' }))
    expectTotals(rowWith(body.rows, { namespace: 'beta' }), totals({ runs: 1, input_tokens: 7, output_tokens: 3, cost: '0.3333333333' }))
    // null: r4 and the credits
    expectTotals(rowWith(body.rows, { namespace: null }), totals({ runs: 1, input_tokens: 2000, output_tokens: 300, reasoning_tokens: 100, cost: '0.25' }))
  })

  it('api_key: each key, and null for console-initiated work and credits', async () => {
    const body = await usage('range=24h&group_by=api_key')
    expect(body.group_by).toBe('api_key')
    expect(body.rows).toHaveLength(3)
    for (const row of body.rows) expect(Object.keys(row.group).sort()).toEqual(['api_key_id', 'dimension'])
    // k1: r1 + r3 + r6 = 0.0001234567 + 0.0000000009 + 0.3333333333 = 0.3334567909
    expectTotals(rowWith(body.rows, { api_key_id: acme.keyId }),
      totals({ runs: 3, input_tokens: 607, output_tokens: 153, reasoning_tokens: 20, cache_read_tokens: 10, cost: '0.3334567909' }))
    // k2: r2 + r5 = 0.0150000001 + 0.00001 = 0.0150100001
    expectTotals(rowWith(body.rows, { api_key_id: secondKeyId }),
      totals({ runs: 2, input_tokens: 1010, output_tokens: 205, cache_write_tokens: 300, cost: '0.0150100001' }))
    expectTotals(rowWith(body.rows, { api_key_id: null }), totals({ runs: 1, input_tokens: 2000, output_tokens: 300, reasoning_tokens: 100, cost: '0.25' }))
    expect(body.rows.map((r: Json) => r.group.api_key_id)).not.toContain(other.keyId)
  })

  it('entry_type: usage and compaction spend; credits as zero rows', async () => {
    const body = await usage('range=24h&group_by=entry_type')
    expect(body.group_by).toBe('entry_type')
    for (const row of body.rows) expect(Object.keys(row.group).sort()).toEqual(['dimension', 'entry_type'])
    expect(body.rows.map((r: Json) => r.group.entry_type).sort()).toEqual(['compaction', 'promotional_credit', 'topup', 'usage'])
    // usage: r1, r2, r4, r5, r6 = 0.598466791 − 0.0000000009 = 0.5984667901
    expectTotals(rowWith(body.rows, { entry_type: 'usage' }),
      totals({ runs: 5, input_tokens: 3117, output_tokens: 558, reasoning_tokens: 120, cache_read_tokens: 10, cache_write_tokens: 300, cost: '0.5984667901' }))
    expectTotals(rowWith(body.rows, { entry_type: 'compaction' }), totals({ runs: 1, input_tokens: 500, output_tokens: 100, cost: '0.0000000009' }))
    expectTotals(rowWith(body.rows, { entry_type: 'topup' }), ZERO)
    expectTotals(rowWith(body.rows, { entry_type: 'promotional_credit' }), ZERO)
  })

  it('organisation: the caller’s organisation only, with id, name and slug', async () => {
    const body = await usage('range=24h&group_by=organisation')
    expect(body.group_by).toBe('organisation')
    expect(body.rows).toHaveLength(1)
    const [row] = body.rows
    expect(row.group).toEqual({ dimension: 'organisation', organisation_id: acme.orgId, name: 'acme', slug: 'acme' })
    expectTotals(row, DAY_TOTALS)
  })

  it('run: one line per run with its fields, newest first, read from the entries (not cached)', async () => {
    const body = await usage('range=24h&group_by=run')
    expect(body.group_by).toBe('run')
    expect(body.cached).toBe(false)
    for (const row of body.rows) {
      expectRowShape(row)
      expect(Object.keys(row.group).sort()).toEqual(['api_key_id', 'dimension', 'entry_type', 'last_occurred_at', 'model_name', 'namespace', 'run_id'])
    }
    const charges = body.rows.filter((r: Json) => r.group.run_id !== null)
    expect(charges.map((r: Json) => r.group.run_id)).toEqual([run(2), run(1), run(3), run(6), run(4), run(5)])
    // ordered by last_occurred_at, newest first, credits included
    const times = body.rows.map((r: Json) => new Date(r.group.last_occurred_at).getTime())
    expect(times).toEqual([...times].sort((a, b) => b - a))
    expect(body.rows.map((r: Json) => new Date(r.group.last_occurred_at).toISOString())).toEqual([
      '2026-11-22T10:45:00.000Z', // r2
      '2026-11-22T10:15:00.000Z', // r1
      '2026-11-22T09:05:00.000Z', // r3
      '2026-11-22T08:20:00.000Z', // topup
      '2026-11-22T00:00:00.000Z', // r6
      '2026-11-21T23:59:59.999Z', // r4
      '2026-11-21T15:00:00.000Z', // promotional credit
      '2026-11-21T11:00:00.000Z', // r5
    ])

    const r3 = rowWith(body.rows, { run_id: run(3) })
    expect(r3.group).toEqual({
      dimension: 'run',
      entry_type: 'compaction',
      run_id: run(3),
      api_key_id: acme.keyId,
      model_name: ECHO.name,
      namespace: 'acme/support/tier2',
      last_occurred_at: r3.group.last_occurred_at,
    })
    expectTotals(r3, totals({ runs: 1, input_tokens: 500, output_tokens: 100, cost: '0.0000000009' }))
    const r4 = rowWith(body.rows, { run_id: run(4) })
    expect(r4.group).toMatchObject({ entry_type: 'usage', api_key_id: null, model_name: SONNET.name, namespace: null })
    expectTotals(r4, totals({ runs: 1, input_tokens: 2000, output_tokens: 300, reasoning_tokens: 100, cost: '0.25' }))
    const topup = rowWith(body.rows, { entry_type: 'topup' })
    expect(topup.group).toMatchObject({ run_id: null, api_key_id: null, model_name: null, namespace: null })
    expectTotals(topup, ZERO)
    for (const row of body.rows) if (row.group.run_id !== null) expect(row.group.run_id).toMatch(UUID)
    expect(body.rows.map((r: Json) => r.group.run_id)).not.toContain(run(901))
  })

  it('sums of every grouping equal the ungrouped totals', async () => {
    for (const dimension of ['model', 'namespace', 'api_key', 'entry_type', 'organisation', 'run']) {
      const rows = (await usage(`range=24h&group_by=${dimension}`)).rows as Json[]
      const sum = rows.reduce(
        (acc, r) => ({ runs: acc.runs + r.runs, input: acc.input + r.input_tokens, cost: acc.cost.plus(r.cost) }),
        { runs: 0, input: 0, cost: new Decimal(0) },
      )
      expect(sum.runs, dimension).toBe(DAY_TOTALS.runs)
      expect(sum.input, dimension).toBe(DAY_TOTALS.input_tokens)
      expect(sum.cost.eq(DAY_TOTALS.cost), `${dimension} ${sum.cost.toFixed()}`).toBe(true)
    }
  })

  it('combines a bin and a group', async () => {
    const body = await usage('range=24h&bin=day&group_by=model')
    expect(body).toMatchObject({ bin: 'day', group_by: 'model', cached: true })
    const day22 = body.rows.filter((r: Json) => new Date(r.bucket).toISOString() === '2026-11-22T00:00:00.000Z')
    // 22nd: echo r1 + r3; sonnet r2 + r6; topup the null model
    expectTotals(rowWith(day22, { model_name: ECHO.name }), totals({ runs: 2, input_tokens: 600, output_tokens: 150, reasoning_tokens: 20, cache_read_tokens: 10, cost: '0.0001234576' }))
    expectTotals(rowWith(day22, { model_name: SONNET.name }), totals({ runs: 2, input_tokens: 1007, output_tokens: 203, cache_write_tokens: 300, cost: '0.3483333334' }))
    expectTotals(rowWith(day22, { model_name: null }), ZERO)
    expect(body.rows).toHaveLength(6) // 21st: echo (r5), sonnet (r4), credit; 22nd: the three above
  })
})

describe('GET /api/v1/usage: namespace filter (the namespace and its subtree)', () => {
  it('acme includes acme/support and acme/support/tier2 but not acme2', async () => {
    const body = await usage('range=24h&namespace=acme')
    expect(body.namespace).toBe('acme')
    // r1 + r2 + r3: input 1600, output 350, reasoning 20, cache read 10, cache write 300
    //   cost 0.0001234567 + 0.0150000001 + 0.0000000009 = 0.0151234577
    expectTotals(body.rows[0],
      totals({ runs: 3, input_tokens: 1600, output_tokens: 350, reasoning_tokens: 20, cache_read_tokens: 10, cache_write_tokens: 300, cost: '0.0151234577' }))
    const grouped = await usage('range=24h&namespace=acme&group_by=namespace')
    expect(grouped.rows.map((r: Json) => r.group.namespace).sort()).toEqual(['acme', 'acme/support', 'acme/support/tier2'])
  })

  it('a nested namespace includes its own subtree only', async () => {
    const body = await usage('range=24h&namespace=acme/support')
    expectTotals(body.rows[0], totals({ runs: 2, input_tokens: 1500, output_tokens: 300, cache_write_tokens: 300, cost: '0.0150000010' }))
    const runs = await usage('range=24h&namespace=acme/support&group_by=run')
    expect(runs.rows.map((r: Json) => r.group.run_id)).toEqual([run(2), run(3)])
  })

  it('acme2 is its own namespace, not a child of acme', async () => {
    expectTotals((await usage('range=24h&namespace=acme2')).rows[0], totals({ runs: 1, input_tokens: 10, output_tokens: 5, cost: '0.00001' }))
  })

  it('leaves out credits and org-global work, and other organisations', async () => {
    const byType = await usage('range=24h&namespace=acme&group_by=entry_type')
    expect(byType.rows.map((r: Json) => r.group.entry_type).sort()).toEqual(['compaction', 'usage'])
    // other's run in namespace "acme" is not acme's
    const apiKeys = await usage('range=24h&namespace=acme&group_by=api_key')
    expect(apiKeys.rows.map((r: Json) => r.group.api_key_id)).not.toContain(other.keyId)
  })

  it('a namespace with no entries gives one zero row', async () => {
    expectTotals((await usage('range=24h&namespace=nobody')).rows[0], ZERO)
    expect((await usage('range=24h&namespace=acm')).rows[0].runs).toBe(0)
  })

  it('applies to longer ranges and bins', async () => {
    // 7d & acme: r1, r2, r3 and r7 (acme, 1.00) and r8 (acme/support, 2.00)
    const body = await usage('range=7d&namespace=acme&bin=day')
    expect(body.rows.map((r: Json) => new Date(r.bucket).toISOString())).toEqual([
      '2026-11-18T00:00:00.000Z',
      '2026-11-21T00:00:00.000Z',
      '2026-11-22T00:00:00.000Z',
    ])
    expectTotals(body.rows[0], totals({ runs: 1, input_tokens: 1, output_tokens: 1, cost: '2.00' }))
    expectTotals(body.rows[1], totals({ runs: 1, input_tokens: 1, output_tokens: 1, cost: '1.00' }))
  })
})

describe('GET /api/v1/usage: runs count distinct runs', () => {
  it('counts a run once however its charge is grouped, and credits as no run', async () => {
    const body = await usage('range=24h&group_by=run')
    for (const row of body.rows) expect(row.runs).toBe(row.group.run_id === null ? 0 : 1)
  })

  it('does not count a second settlement of the same run', async () => {
    const solo = ctx.org('solo')
    const charge = (cost: string) =>
      ctx.store.balance.charge({
        orgId: solo.orgId,
        type: 'usage',
        runId: run(555),
        apiKeyId: solo.keyId,
        modelId: ECHO.id,
        modelName: ECHO.name,
        namespace: null,
        usage: { input_tokens: 3, output_tokens: 4, reasoning_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0 },
        cost,
        occurredAt: '2026-11-22T10:00:00.000Z',
      })
    expect(charge('0.01')).not.toBeNull()
    expect(charge('0.01')).toBeNull()
    expectTotals((await usage('range=24h', solo)).rows[0], totals({ runs: 1, input_tokens: 3, output_tokens: 4, cost: '0.01' }))
  })
})
