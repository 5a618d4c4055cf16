import { Decimal } from 'decimal.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { CatalogueEntry } from '../../../src/domain/catalogue/catalogue-entry.ts'
import { createCatalogueService, type ModelStats } from '../../../src/providers/catalogue/catalogue-service.ts'
import { loadCatalogue } from '../../../src/providers/catalogue/load-catalogue.ts'
import { expectError, UUID } from '../../helpers/http.ts'
import { createTestApp, type TestContext } from '../../helpers/test-app.ts'

/*
 * The catalogue routes over the real entries of catalogue/models.json: the two sandbox models
 * and one vendor model with a long-context cliff tier (spec §2.7, §4.1, §4.4, §5.3).
 */

const loaded = loadCatalogue()
const source = (name: string) => loaded.entries.find((m) => m.name === name)!
const ECHO = source('sandbox/echo')
const ECHO_1M = source('sandbox/echo-1m')
const GPT = source('openai/gpt-5.5')

// The models as the catalogue service serves them, with refreshed statistics for sandbox/echo.
const service = createCatalogueService(
  loaded,
  new Set(['sandbox', 'openai']),
  () => new Map<string, ModelStats>([[ECHO.id, { avgTimeToFirstTokenMs: 123.5, uptime: '0.9950' }]]),
)
service.refreshStats(new Date('2026-11-22T10:30:00Z'))
const MODELS: CatalogueEntry[] = [ECHO.name, ECHO_1M.name, GPT.name].map((name) => service.findByName(name)!)

const REQUIRED = ['id', 'name', 'display_name', 'provider', 'provider_label', 'model_family', 'context_window', 'max_output_tokens',
  'supports_reasoning', 'supports_tools', 'thinking', 'media', 'rates', 'tiers']
const OPTIONAL = ['avg_time_to_first_token_ms', 'icon_url', 'max_reasoning_effort', 'max_tool_definitions', 'uptime']

const eq = (actual: unknown, expected: string, label = '') => {
  expect(typeof actual, `${label} ${String(actual)}`).toBe('string')
  expect(new Decimal(actual as string).eq(expected), `${label}: ${String(actual)} = ${expected}`).toBe(true)
}
/** `rate` × (1 + percent/100), exactly. */
const priced = (rate: string, percent: string) => new Decimal(rate).mul(new Decimal(percent).div(100).plus(1)).toFixed()

type Json = Record<string, any>

/** Checks one served model against spec §2.7 and against its source entry priced at `percent`. */
function expectCatalogueModel(served: Json, entry: CatalogueEntry, percent: string, extra: string[] = []) {
  for (const key of REQUIRED) expect(served, `${entry.name} lacks ${key}`).toHaveProperty(key)
  for (const key of Object.keys(served)) expect([...REQUIRED, ...OPTIONAL, ...extra], `${entry.name}: unexpected ${key}`).toContain(key)
  expect(served.id).toMatch(UUID)
  expect(served).toMatchObject({
    id: entry.id,
    name: entry.name,
    display_name: entry.display_name,
    provider: entry.provider,
    provider_label: entry.provider_label,
    model_family: entry.model_family,
    context_window: entry.context_window,
    max_output_tokens: entry.max_output_tokens,
    supports_reasoning: entry.supports_reasoning,
    supports_tools: entry.supports_tools,
    thinking: entry.thinking,
    max_reasoning_effort: entry.max_reasoning_effort,
    max_tool_definitions: entry.max_tool_definitions,
  })
  expect(Number.isInteger(served.context_window)).toBe(true)
  expect(Number.isInteger(served.max_output_tokens)).toBe(true)
  expect('vendor_model_id' in served).toBe(false)

  // MediaCapabilities and MediaPolicy
  expect(Object.keys(served.media).sort()).toEqual(['assistant', 'configured', 'max_attachments_per_part', 'tool_result', 'user'])
  expect(served.media.max_attachments_per_part).toBe(20)
  expect(typeof served.media.configured).toBe('boolean')
  for (const carrier of ['user', 'tool_result', 'assistant']) {
    const policy = served.media[carrier]
    expect(Array.isArray(policy.mime_types)).toBe(true)
    expect(Number.isInteger(policy.max_bytes_per_attachment)).toBe(true)
    expect(policy.max_bytes_per_attachment).toBeLessThanOrEqual(20 * 1024 * 1024)
    expect(policy).toEqual(entry.media[carrier as 'user'])
  }

  // BilledRates: what the customer pays
  expect(served.rates.currency).toBe('USD')
  eq(served.rates.input, priced(entry.rates.input, percent), `${entry.name} input`)
  eq(served.rates.output, priced(entry.rates.output, percent), `${entry.name} output`)
  for (const kind of ['cache_read', 'cache_write'] as const) {
    const rate = entry.rates[kind]
    if (rate === null || rate === undefined) expect(served.rates[kind] ?? null).toBeNull()
    else eq(served.rates[kind], priced(rate, percent), `${entry.name} ${kind}`)
  }

  // BilledTier, marked up the same way
  expect(served.tiers).toHaveLength(entry.tiers.length)
  entry.tiers.forEach((tier, i) => {
    const t = served.tiers[i]
    expect(t).toMatchObject({ id: tier.id, metric: tier.metric, min: tier.min, mode: tier.mode, max: tier.max ?? null })
    for (const kind of ['input', 'output', 'cache_read', 'cache_write'] as const) {
      const rate = tier[kind]
      if (rate === null || rate === undefined) expect(t[kind] ?? null).toBeNull()
      else eq(t[kind], priced(rate, percent), `${entry.name} tier ${kind}`)
    }
  })
}

let ctx: TestContext

beforeAll(async () => {
  ctx = await createTestApp({ catalogue: MODELS })
})
afterAll(async () => {
  await ctx.close()
})

/** An organisation with `markup` (or none) and a console session cookie for it. */
function session(markup: string | null) {
  const org = ctx.org()
  if (markup !== null) ctx.store.organisations.setMarkup(org.orgId, markup)
  const { token } = ctx.store.consoleSessions.create(org.orgId)
  return { org, cookie: `console_session=${token}` }
}

describe('GET /v1/catalogue with the real sandbox and vendor entries', () => {
  it('returns every CatalogueModel field, priced at the 5 percent platform markup', async () => {
    const res = await ctx.app.inject({ url: '/v1/catalogue' })
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toMatch(/^application\/json/)
    const body = res.json()
    expect(Object.keys(body).sort()).toEqual(['markup_percent', 'models', 'organisation_specific'])
    expect(body.markup_percent).toBe('5')
    expect(body.organisation_specific).toBe(false)
    expect(body.models.map((m: Json) => m.name)).toEqual(['sandbox/echo', 'sandbox/echo-1m', 'openai/gpt-5.5'])
    body.models.forEach((m: Json, i: number) => expectCatalogueModel(m, MODELS[i]!, '5'))
  })

  it('marks up the sandbox prices of decisions §6 by 5 percent', async () => {
    const [echo, echo1m, gpt] = (await ctx.app.inject({ url: '/v1/catalogue' })).json().models
    // 1.00 × 1.05 = 1.05; 2.00 × 1.05 = 2.10; 0.10 × 1.05 = 0.105
    expect(echo.rates.input).toBe('1.05')
    eq(echo.rates.output, '2.10')
    eq(echo.rates.cache_read, '0.105')
    expect(echo.rates.cache_write ?? null).toBeNull()
    // the cliff tier of echo-1m doubles: 2.00 → 2.10, 4.00 → 4.20, 0.20 → 0.21
    expect(echo1m.tiers).toHaveLength(1)
    expect(echo1m.tiers[0]).toMatchObject({ metric: 'context_tokens', min: 200000, mode: 'cliff' })
    eq(echo1m.tiers[0].input, '2.10')
    eq(echo1m.tiers[0].output, '4.20')
    eq(echo1m.tiers[0].cache_read, '0.21')
    expect(echo1m.tiers[0].cache_write ?? null).toBeNull()
    // gpt-5.5: 5.00 → 5.25, 30.00 → 31.50, 0.50 → 0.525, no cache write; tier 10.00 → 10.50, 45.00 → 47.25, 1.00 → 1.05
    eq(gpt.rates.input, '5.25')
    eq(gpt.rates.output, '31.50')
    eq(gpt.rates.cache_read, '0.525')
    expect(gpt.rates.cache_write).toBeNull()
    eq(gpt.tiers[0].input, '10.50')
    eq(gpt.tiers[0].output, '47.25')
    eq(gpt.tiers[0].cache_read, '1.05')
    expect(gpt.tiers[0].cache_write).toBeNull()
  })

  it('serves the refreshed statistics, null where there are no samples', async () => {
    const [echo, echo1m] = (await ctx.app.inject({ url: '/v1/catalogue' })).json().models
    expect(echo.avg_time_to_first_token_ms).toBe(123.5)
    eq(echo.uptime, '0.995')
    expect(echo1m.avg_time_to_first_token_ms).toBeNull()
    expect(echo1m.uptime).toBeNull()
  })

  it('prices at the organisation’s own markup with a valid console session', async () => {
    const { cookie } = session('7.5')
    const res = await ctx.app.inject({ url: '/v1/catalogue', headers: { cookie } })
    expect(res.statusCode).toBe(200)
    const body = res.json()
    expect(body.markup_percent).toBe('7.5')
    expect(body.organisation_specific).toBe(true)
    body.models.forEach((m: Json, i: number) => expectCatalogueModel(m, MODELS[i]!, '7.5'))
    // 1.00 × 1.075 = 1.075; echo-1m tier 4.00 × 1.075 = 4.30
    eq(body.models[0].rates.input, '1.075')
    eq(body.models[1].tiers[0].output, '4.30')
  })

  it('prices at cost for an organisation whose markup is zero', async () => {
    const { cookie } = session('0')
    const body = (await ctx.app.inject({ url: '/v1/catalogue', headers: { cookie } })).json()
    expect(body).toMatchObject({ markup_percent: '0', organisation_specific: true })
    eq(body.models[2].rates.output, '30.00')
  })

  it('treats an invalid session as anonymous', async () => {
    session('20')
    for (const cookie of ['console_session=cs_forged-token', 'console_session=', 'other=1']) {
      const res = await ctx.app.inject({ url: '/v1/catalogue', headers: { cookie } })
      expect(res.statusCode, cookie).toBe(200)
      expect(res.json()).toMatchObject({ markup_percent: '5', organisation_specific: false })
      expect(res.json().models[0].rates.input).toBe('1.05')
    }
  })
})

describe('GET /v1/catalogue/{name}', () => {
  it('resolves a name with a slash and adds markup_percent', async () => {
    const res = await ctx.app.inject({ url: '/v1/catalogue/sandbox/echo-1m' })
    expect(res.statusCode).toBe(200)
    const body = res.json()
    expect(body.markup_percent).toBe('5')
    expectCatalogueModel(body, MODELS[1]!, '5', ['markup_percent'])
    expect(body.name).toBe('sandbox/echo-1m')
  })

  it('resolves the vendor model and a name with a dot', async () => {
    const body = (await ctx.app.inject({ url: '/v1/catalogue/openai/gpt-5.5' })).json()
    expectCatalogueModel(body, MODELS[2]!, '5', ['markup_percent'])
  })

  it('prices at the session organisation’s markup', async () => {
    const { cookie } = session('12.5')
    const body = (await ctx.app.inject({ url: '/v1/catalogue/sandbox/echo-1m', headers: { cookie } })).json()
    expect(body.markup_percent).toBe('12.5')
    // 1.00 × 1.125 = 1.125; tier 2.00 × 1.125 = 2.25
    eq(body.rates.input, '1.125')
    eq(body.tiers[0].input, '2.25')
  })

  it('answers 404 for a model not in the catalogue, or not active', async () => {
    expectError(await ctx.app.inject({ url: '/v1/catalogue/sandbox/echo-2m' }), 404, 'not_found')
    expectError(await ctx.app.inject({ url: '/v1/catalogue/openai/gpt-5' }), 404, 'not_found')
    expectError(await ctx.app.inject({ url: '/v1/catalogue/sandbox' }), 404, 'not_found')
    expectError(await ctx.app.inject({ url: '/v1/catalogue/echo' }), 404, 'not_found')
  })
})

/** The rows of the first markdown table after `heading` (header and separator skipped), as trimmed cells. */
function tableAfter(md: string, heading: string | null): string[][] {
  const lines = md.split('\n')
  let i = heading === null ? 0 : lines.findIndex((l) => l.trim() === heading)
  expect(i, `heading ${heading}`).toBeGreaterThanOrEqual(0)
  while (i < lines.length && !lines[i]!.startsWith('|')) i++
  const rows: string[][] = []
  for (i += 2; i < lines.length && lines[i]!.startsWith('|'); i++) rows.push(lines[i]!.split('|').slice(1, -1).map((c) => c.trim()))
  return rows
}

describe('GET /v1/catalogue/models.md', () => {
  it('is text/markdown with one row per model: name, provider, context, max output, reasoning, tools and four prices', async () => {
    const res = await ctx.app.inject({ url: '/v1/catalogue/models.md' })
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toMatch(/^text\/markdown/)
    const rows = tableAfter(res.body, null)
    expect(rows.map((r) => r[0])).toEqual(MODELS.map((m) => m.name))
    rows.forEach((cells, i) => {
      const m = MODELS[i]!
      expect(cells).toHaveLength(10)
      expect(cells.slice(1, 4)).toEqual([m.provider, String(m.context_window), String(m.max_output_tokens)])
      eq(cells[6], priced(m.rates.input, '5'), `${m.name} input`)
      eq(cells[7], priced(m.rates.output, '5'), `${m.name} output`)
      eq(cells[8], priced(m.rates.cache_read!, '5'), `${m.name} cache read`)
    })
    // Neither GPT-5.5 nor the sandbox meters cache writes.
    expect(rows[2]![9]).not.toMatch(/\d/)
    expect(rows[0]![9]).not.toMatch(/\d/)
  })

  it('has an attachments section with a row per model', async () => {
    const md = (await ctx.app.inject({ url: '/v1/catalogue/models.md' })).body
    const rows = tableAfter(md, '## Attachments')
    expect(rows.map((r) => r[0])).toEqual(MODELS.map((m) => m.name))
    for (const row of rows) expect(row.join(' ')).toContain('application/pdf')
    expect(rows.map((r) => r.at(-1))).toEqual(['20', '20', '20'])
  })

  it('states the pricing conditions: the cliff tiers and the date the prices were taken', async () => {
    const md = (await ctx.app.inject({ url: '/v1/catalogue/models.md' })).body
    expect(md).toContain(loaded.pricesAsOf)
    const conditions = md.slice(md.indexOf('## Pricing conditions'))
    expect(md.indexOf('## Pricing conditions')).toBeGreaterThan(0)
    for (const [name, min] of [['sandbox/echo-1m', '200000'], ['openai/gpt-5.5', '272000']]) {
      const line = conditions.split('\n').find((l) => l.includes(name!))
      expect(line, name).toBeDefined()
      expect(line).toMatch(/cliff/)
      expect(line).toContain(min)
      expect(line).toMatch(/whole request/)
    }
    expect(conditions.split('\n').some((l) => l.includes('sandbox/echo ') || l.includes('sandbox/echo:'))).toBe(false)
    // the tier prices include the markup too: echo-1m's 2.00 input is 2.1
    const echo1m = conditions.split('\n').find((l) => l.includes('sandbox/echo-1m'))!
    expect(echo1m).toMatch(/input 2\.10?\b/)
    expect(md).toMatch(/5 ?%/)
  })

  it('prices at the session organisation’s markup', async () => {
    const { cookie } = session('10')
    const md = (await ctx.app.inject({ url: '/v1/catalogue/models.md', headers: { cookie } })).body
    const rows = tableAfter(md, null)
    eq(rows[0]![6], '1.10')
    eq(rows[2]![7], '33.00')
  })
})

describe('GET /api/v1/models', () => {
  it('needs an API key', async () => {
    expectError(await ctx.app.inject({ url: '/api/v1/models' }), 401, 'unauthorized')
    expectError(await ctx.app.inject({ url: '/api/v1/models', headers: { authorization: 'Bearer pk_not-a-key' } }), 401, 'unauthorized')
  })

  it('lists the active models at the platform markup for an organisation without its own', async () => {
    const org = ctx.org()
    const res = await ctx.app.inject({ url: '/api/v1/models', headers: org.auth })
    expect(res.statusCode).toBe(200)
    const models = res.json()
    expect(Array.isArray(models)).toBe(true)
    expect(models.map((m: Json) => m.name)).toEqual(MODELS.map((m) => m.name))
    models.forEach((m: Json, i: number) => expectCatalogueModel(m, MODELS[i]!, '5'))
  })

  it('uses the caller organisation’s markup, not a console session’s', async () => {
    const org = ctx.org()
    ctx.store.organisations.setMarkup(org.orgId, '7.5')
    const other = session('50')
    const res = await ctx.app.inject({ url: '/api/v1/models', headers: { ...org.auth, cookie: other.cookie } })
    const models = res.json()
    models.forEach((m: Json, i: number) => expectCatalogueModel(m, MODELS[i]!, '7.5'))
    eq(models[0].rates.input, '1.075')
  })
})
