import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Decimal } from 'decimal.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { importCatalogue } from '../../src/providers/catalogue/catalogue-import.ts'
import { DEFAULT_CATALOGUE_FILE } from '../../src/providers/catalogue/load-catalogue.ts'
import { createTestApp, type TestContext } from '../helpers/test-app.ts'
import { fundedOrg, newChat, postTurn, prompt, sandboxCatalogue, streamOf, variantOf } from '../helpers/turns.ts'

/**
 * Decision 041 through the HTTP app: a turn naming a retired model is refused with its successor named,
 * a deprecated one runs with a warning, status follows the clock, and a run is priced with the catalogue of its start.
 */
let clock = new Date('2026-11-28T12:00:00Z')
const RETIRED = variantOf('sandbox/echo-old', '7c0e9a1b-0000-4a00-8000-000000000001', {
  status: 'retired',
  deprecated_at: '2026-01-01T00:00:00Z',
  retires_at: '2026-02-01T00:00:00Z',
  successor: 'sandbox/echo',
})
const DEPRECATED = variantOf('sandbox/echo-soon', '7c0e9a1b-0000-4a00-8000-000000000002', {
  status: 'deprecated',
  deprecated_at: '2026-11-01T00:00:00Z',
  retires_at: '2026-12-01T00:00:00Z',
  successor: 'sandbox/echo',
})

describe('a turn naming a deprecated or retired model (decision 041)', () => {
  let ctx: TestContext
  beforeAll(async () => {
    ctx = await createTestApp({ catalogue: [...sandboxCatalogue(), RETIRED, DEPRECATED], now: () => clock })
  })
  afterAll(() => ctx.close())

  it('refuses a retired model with a 422 naming its successor, and starts no run', async () => {
    clock = new Date('2026-11-28T12:00:00Z')
    const org = fundedOrg(ctx)
    const chatId = await newChat(ctx, org.auth)
    const res = await postTurn(ctx, org.auth, chatId, { model: 'sandbox/echo-old', input: [prompt('hello')] })
    expect(res.statusCode).toBe(422)
    expect(res.body).toContain('\\"sandbox/echo-old\\" was retired at 2026-02-01T00:00:00Z; use its successor \\"sandbox/echo\\"')
    expect(ctx.store.db.prepare('SELECT COUNT(*) AS n FROM runs WHERE chat_id = ?').get(chatId)).toEqual({ n: 0 })
  })

  it('runs a deprecated model with a model_deprecated warning naming retirement and successor', async () => {
    clock = new Date('2026-11-28T12:00:00Z')
    const org = fundedOrg(ctx)
    const chatId = await newChat(ctx, org.auth)
    const turn = streamOf(await postTurn(ctx, org.auth, chatId, { model: 'sandbox/echo-soon', input: [prompt('hello')] }))
    expect(turn.events.at(-1)).toBe('done')
    const warnings = turn.of('translation_warnings').flatMap((f) => f.data.warnings ?? f.data)
    expect(warnings).toContainEqual(expect.objectContaining({ code: 'model_deprecated', details: { model: 'sandbox/echo-soon', retires_at: '2026-12-01T00:00:00Z', successor: 'sandbox/echo' } }))
  })

  it('lists the deprecated model with its status and leaves the retired one out', async () => {
    clock = new Date('2026-11-28T12:00:00Z')
    const models = (await ctx.app.inject({ url: '/v1/catalogue' })).json().models as { name: string; status?: string }[]
    expect(models.map((m) => m.name)).toContain('sandbox/echo-soon')
    expect(models.map((m) => m.name)).not.toContain('sandbox/echo-old')
  })

  it('refuses the deprecated model once the clock passes its retires_at', async () => {
    clock = new Date('2026-12-01T00:00:00Z')
    const org = fundedOrg(ctx)
    const chatId = await newChat(ctx, org.auth)
    const res = await postTurn(ctx, org.auth, chatId, { model: 'sandbox/echo-soon', input: [prompt('hello')] })
    expect(res.statusCode).toBe(422)
    expect(res.body).toContain('use its successor \\"sandbox/echo\\"')
  })
})

describe('prices billed match the catalogue of the day (decision 041)', () => {
  let ctx: TestContext
  beforeAll(async () => {
    clock = new Date('2026-11-28T12:00:00Z')
    ctx = await createTestApp({ catalogue: sandboxCatalogue(), now: () => clock })
  })
  afterAll(() => ctx.close())

  const costOf = async () => {
    const org = fundedOrg(ctx)
    const chatId = await newChat(ctx, org.auth)
    const turn = streamOf(await postTurn(ctx, org.auth, chatId, { model: 'sandbox/echo', input: [prompt('the same words each time')] }))
    return new Decimal(turn.of('done')[0]!.data.cost as string)
  }

  it('bills runs before an imported price change at the old rates and runs after it at the new ones', async () => {
    const before = await costOf()
    const data = JSON.parse(readFileSync(DEFAULT_CATALOGUE_FILE, 'utf8')) as { models: Record<string, any>[] }
    const echo = data.models.find((m) => m.name === 'sandbox/echo')!
    echo.rates = { ...echo.rates, input: '10.00', output: '20.00', cache_read: '1.00' }
    const file = join(ctx.dir, 'tenfold.json')
    writeFileSync(file, JSON.stringify(data))
    importCatalogue(ctx.store, file, { effectiveAt: new Date('2026-12-01T00:00:00Z') })
    expect(await costOf()).toEqual(before)
    clock = new Date('2026-12-01T00:00:00Z')
    const after = await costOf()
    expect(after.div(before).toNumber()).toBeCloseTo(10, 6)
  })
})

describe('the models document (decision 041)', () => {
  let ctx: TestContext
  beforeAll(async () => {
    clock = new Date('2026-11-28T12:00:00Z')
    ctx = await createTestApp({ catalogue: [...sandboxCatalogue(), RETIRED, DEPRECATED], now: () => clock })
  })
  afterAll(() => ctx.close())

  it('names each deprecated model with its retirement and successor, and leaves the retired out', async () => {
    const md = (await ctx.app.inject({ url: '/v1/catalogue/models.md' })).body
    expect(md).toContain('- sandbox/echo-soon is deprecated; it retires at 2026-12-01T00:00:00Z; its successor is sandbox/echo.')
    expect(md).not.toContain('sandbox/echo-old')
  })
})
