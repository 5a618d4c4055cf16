import { Decimal } from 'decimal.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { CatalogueEntry } from '../../../src/domain/catalogue/catalogue-entry.ts'
import { expectError } from '../../helpers/http.ts'
import { createTestApp, type TestContext } from '../../helpers/test-app.ts'

const policy = { mime_types: ['image/png', 'application/pdf'], max_bytes_per_attachment: 5_000_000, max_attachments_per_request: 10 }
const MODEL: CatalogueEntry = {
  id: '0b9d3a52-6a4f-4f5e-9a53-2b6d7f1a0c11',
  name: 'vendor/model-a',
  vendor_model_id: 'model-a-2025-01-01',
  display_name: 'Model A',
  provider: 'vendor',
  provider_label: 'Vendor',
  model_family: 'a',
  context_window: 128_000,
  max_output_tokens: 8_192,
  max_request_bytes: 20_971_520,
  status: 'active',
  deprecated_at: null,
  retires_at: null,
  successor: null,
  supports_reasoning: true,
  supports_tools: true,
  thinking: 'adaptive',
  media: { user: policy, tool_result: policy, assistant: { mime_types: [], max_bytes_per_attachment: 0 }, max_attachments_per_part: 20, configured: true },
  rates: { input: '1.00', output: '2.00', currency: 'USD', cache_read: '0.10', cache_write: null },
  tiers: [{ id: 'long', metric: 'context_tokens', min: 200_000, mode: 'cliff', max: null, input: '2.00', output: '4.00', cache_read: null }],
  uptime: '0.999',
}

let ctx: TestContext

// One app for the file: every test that signs in makes its own organisation (decision 019).
beforeAll(async () => {
  ctx = await createTestApp({ catalogue: [MODEL] })
})
afterAll(async () => {
  await ctx.close()
})

const eq = (actual: string | null | undefined, expected: string) => {
  expect(typeof actual).toBe('string')
  expect(new Decimal(actual!).eq(expected), `${actual} = ${expected}`).toBe(true)
}

/** An organisation with its own markup and a console session cookie for it. */
function sessionFor(markup: string | null) {
  const org = ctx.org()
  if (markup !== null) ctx.store.organisations.setMarkup(org.orgId, markup)
  const { token } = ctx.store.consoleSessions.create(org.orgId)
  return { org, cookie: `console_session=${token}` }
}

describe('GET /v1/catalogue', () => {
  it('prices anonymously at the platform markup of 5 percent, exactly', async () => {
    const res = await ctx.app.inject({ url: '/v1/catalogue' })
    expect(res.statusCode).toBe(200)
    const body = res.json()
    expect(body.markup_percent).toBe('5')
    expect(body.organisation_specific).toBe(false)
    expect(body.models).toHaveLength(1)
    const model = body.models[0]
    expect(model.rates.input).toBe('1.05')
    eq(model.rates.output, '2.10')
    eq(model.rates.cache_read, '0.105')
    expect(model.rates.cache_write).toBeNull()
    expect(model.rates.currency).toBe('USD')
    eq(model.tiers[0].input, '2.10')
    eq(model.tiers[0].output, '4.20')
    expect(model.tiers[0].cache_read).toBeNull()
    // Everything but the prices is the entry as given, in CatalogueModel's fields only (spec §2.7).
    // The lifecycle and the request byte limit are ours (decision 041): not CatalogueModel fields.
    const { rates: _r, tiers: _t, vendor_model_id: _v, max_request_bytes: _b, status: _s, deprecated_at: _d, retires_at: _x, successor: _n, ...rest } = MODEL
    expect(model).toMatchObject(rest)
    const specFields = ['id', 'name', 'display_name', 'provider', 'provider_label', 'model_family', 'context_window', 'max_output_tokens',
      'supports_reasoning', 'supports_tools', 'thinking', 'media', 'rates', 'tiers', 'avg_time_to_first_token_ms', 'icon_url',
      'max_reasoning_effort', 'max_tool_definitions', 'uptime']
    for (const key of Object.keys(model)) expect(specFields, key).toContain(key)
  })

  it('prices at the organisation’s markup with a valid console session', async () => {
    const { cookie } = sessionFor('12.5')
    const body = (await ctx.app.inject({ url: '/v1/catalogue', headers: { cookie } })).json()
    expect(body.markup_percent).toBe('12.5')
    expect(body.organisation_specific).toBe(true)
    eq(body.models[0].rates.input, '1.125')
    eq(body.models[0].rates.output, '2.25')
  })

  it('uses the platform markup for a signed-in organisation without its own', async () => {
    const { cookie } = sessionFor(null)
    const body = (await ctx.app.inject({ url: '/v1/catalogue', headers: { cookie } })).json()
    expect(body).toMatchObject({ markup_percent: '5', organisation_specific: false })
  })

  it('treats an unknown or expired session as anonymous, not as an error', async () => {
    const org = ctx.org()
    ctx.store.organisations.setMarkup(org.orgId, '20')
    const expired = ctx.store.consoleSessions.create(org.orgId, new Date(Date.now() - 31 * 24 * 3600 * 1000))
    for (const cookie of ['console_session=cs_not-a-real-session', `console_session=${expired.token}`, 'console_session=']) {
      const res = await ctx.app.inject({ url: '/v1/catalogue', headers: { cookie } })
      expect(res.statusCode).toBe(200)
      expect(res.json()).toMatchObject({ markup_percent: '5', organisation_specific: false })
      expect(res.json().models[0].rates.input).toBe('1.05')
    }
  })

  it('ignores an API key: the catalogue is priced by console session only', async () => {
    const org = ctx.org()
    ctx.store.organisations.setMarkup(org.orgId, '20')
    const body = (await ctx.app.inject({ url: '/v1/catalogue', headers: org.auth })).json()
    expect(body).toMatchObject({ markup_percent: '5', organisation_specific: false })
  })
})

describe('GET /v1/catalogue/{name}', () => {
  it('resolves a name containing a slash and adds markup_percent', async () => {
    const res = await ctx.app.inject({ url: '/v1/catalogue/vendor/model-a' })
    expect(res.statusCode).toBe(200)
    const body = res.json()
    expect(body.name).toBe('vendor/model-a')
    expect(body.markup_percent).toBe('5')
    expect(body.rates.input).toBe('1.05')
  })

  it('prices at the session organisation’s markup', async () => {
    const { cookie } = sessionFor('7.5')
    const body = (await ctx.app.inject({ url: '/v1/catalogue/vendor/model-a', headers: { cookie } })).json()
    expect(body.markup_percent).toBe('7.5')
    eq(body.rates.input, '1.075')
  })

  it('answers 404 not_found for a name not in the catalogue', async () => {
    expectError(await ctx.app.inject({ url: '/v1/catalogue/unknown' }), 404, 'not_found')
    expectError(await ctx.app.inject({ url: '/v1/catalogue/vendor/unknown' }), 404, 'not_found')
    expectError(await ctx.app.inject({ url: '/v1/catalogue/vendor' }), 404, 'not_found')
  })
})

describe('GET /v1/catalogue/models.md', () => {
  it('is text/markdown with a table of models at the caller’s prices', async () => {
    const res = await ctx.app.inject({ url: '/v1/catalogue/models.md' })
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toMatch(/^text\/markdown/)
    const row = res.body.split('\n').find((line) => line.startsWith('| vendor/model-a | vendor |'))
    expect(row).toBeDefined()
    expect(row).toContain('| 128000 | 8192 |')
    expect(row).toContain('| 1.05 |')
    expect(res.body).toContain('image/png')
    expect(res.body).toMatch(/cliff/)

    const { cookie } = sessionFor('12.5')
    const signedIn = await ctx.app.inject({ url: '/v1/catalogue/models.md', headers: { cookie } })
    expect(signedIn.body).toContain('| 1.125 |')
  })
})

describe('GET /api/v1/models', () => {
  it('needs an API key', async () => {
    expectError(await ctx.app.inject({ url: '/api/v1/models' }), 401, 'unauthorized')
  })

  it('lists the models at the key organisation’s prices', async () => {
    const plain = ctx.org()
    const res = await ctx.app.inject({ url: '/api/v1/models', headers: plain.auth })
    expect(res.statusCode).toBe(200)
    const models = res.json()
    expect(models).toHaveLength(1)
    expect(models[0].name).toBe('vendor/model-a')
    expect(models[0].rates.input).toBe('1.05')

    const marked = ctx.org()
    ctx.store.organisations.setMarkup(marked.orgId, '0')
    const atCost = (await ctx.app.inject({ url: '/api/v1/models', headers: marked.auth })).json()
    eq(atCost[0].rates.input, '1.00')
  })
})

describe('an empty catalogue', () => {
  it('still serves every catalogue route', async () => {
    const empty = await createTestApp()
    try {
      const catalogue = await empty.app.inject({ url: '/v1/catalogue' })
      expect(catalogue.statusCode).toBe(200)
      expect(catalogue.json()).toEqual({ models: [], markup_percent: '5', organisation_specific: false })
      expect((await empty.app.inject({ url: '/v1/catalogue/models.md' })).statusCode).toBe(200)
      expectError(await empty.app.inject({ url: '/v1/catalogue/sandbox/echo' }), 404, 'not_found')
      const org = empty.org()
      expect((await empty.app.inject({ url: '/api/v1/models', headers: org.auth })).json()).toEqual([])
    } finally {
      await empty.close()
    }
  })
})
