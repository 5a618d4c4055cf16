import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { inProcessVendorEnv } from './vendor-server.ts'
import type { CatalogueEntry } from '../../src/domain/catalogue/catalogue-entry.ts'
import { statusAt } from '../../src/domain/catalogue/lifecycle.ts'
import { estimatePartTokens } from '../../src/domain/context/estimate-part-tokens.ts'
import type { PartBody } from '../../src/domain/parts.ts'
import { readContextRefusal } from '../../src/providers/read-context-refusal.ts'
import { loadCatalogue } from '../../src/providers/catalogue/load-catalogue.ts'
import { createLanguageModels } from '../../src/providers/language-models.ts'
import { client } from '../helpers/config-api.ts'
import { seededRandom, textOfClass, type ContentClass } from '../helpers/content-classes.ts'
import { pngOfSize } from '../helpers/sized-files.ts'
import { createTestApp, type TestContext, type TestOrg } from '../helpers/test-app.ts'
import { fundedOrg, getRun, newChat, postTurn, prompt, streamOf } from '../helpers/turns.ts'
import { documentedLimits } from './vendor-documented-limits.ts'
import type { Vendor } from './vendor-fixtures/index.ts'
import { limitError } from './vendor-fixtures/limit-errors.ts'
import { startReplayServer, type RecordedRequest, type ReplayServer } from './vendor-replay-server.ts'

/**
 * Near the window, from a cold start (issue 33): for every ACTIVE vendor model of the catalogue, a chat
 * filled past its window with one kind of content (English prose, code, JSON with base64 thumbnails,
 * Chinese), then one turn with a tool and (where the model takes images) an image, against the vendor
 * double with its limits enforced. The double counts with each vendor's own tokenizer or documented
 * ratio (vendor-fixtures/vendor-token-count.ts), never Parley's estimator, and no token correction has
 * been learned for the model (its row is deleted before each case): what is seen is the estimator's
 * error as the vendor would see it.
 *
 * What a vendor does with a request over its window is refuse it before any byte, billing nothing.
 * Parley's refit (docs/decisions/044-context-refusal-refit.md) learns from such a refusal and resends
 * once, repacked. So each case holds: the turn streams to done with no error frame, taken on its
 * first request or after one refused request, which is a context refusal Parley can read and which
 * the run's manifest shows as its refit.
 */


const CATALOGUE = loadCatalogue().entries
const ACTIVE = CATALOGUE.filter((e) => e.provider !== 'sandbox' && statusAt(e, new Date()) === 'active')
const KINDS = ['prose', 'code', 'json-base64', 'cjk'] as const satisfies readonly ContentClass[]
type Kind = (typeof KINDS)[number]

/** History parts of one kind, about 3,000 UTF-16 units each, made once and shared by every model (the double remembers their counts). */
const PART_UNITS = 3_000
const pools = new Map<Kind, PartBody[]>()
function partOf(kind: Kind, i: number): PartBody {
  let pool = pools.get(kind)
  if (!pool) pools.set(kind, (pool = []))
  while (pool.length <= i) {
    const n = pool.length
    // Each part from its own seed, so part n is the same text whatever was made before it.
    const text = textOfClass(kind, PART_UNITS, seededRandom(1 + n * 7919 + KINDS.indexOf(kind)))
    pool.push({ type: n % 2 === 0 ? 'prompt' : 'message', text })
  }
  return pool[i]!
}

/** Appends parts of `kind` until the chat holds at least `tokens` estimated tokens. */
function seedHistory(ctx: TestContext, chatId: string, kind: Kind, tokens: number): void {
  const parts: { body: PartBody; tokens: number }[] = []
  let total = 0
  for (let i = 0; total < tokens; i++) {
    const body = partOf(kind, i)
    const estimate = estimatePartTokens(body)
    parts.push({ body, tokens: estimate })
    total += estimate
  }
  ctx.store.parts.append(chatId, parts)
}

const takesImages = (e: CatalogueEntry) => e.media.user.mime_types.includes('image/png')
const IMAGE = pngOfSize(40_000, 800, 600).toString('base64')
const TOOL = { name: 'lookup_mooring', description: 'Finds a free mooring in the harbour by its name.', input_schema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } }

type Outcome = { requests: RecordedRequest[]; status: number; events: string[]; body: string }
const outcomes = new Map<string, Outcome>()
const key = (model: string, kind: Kind) => `${model} ${kind}`

describe('near the window from a cold start: every active model, four kinds of content, a tool and an image', () => {
  let replay: ReplayServer
  let ctx: TestContext
  let org: TestOrg

  beforeAll(async () => {
    replay = await startReplayServer({ enforceLimits: true, reportCountedUsage: true })
    // The double counts a window's worth of text with a real tokenizer, synchronously and in this
    // process (up to 20 s for a 1M-token window of base64 on a loaded machine): time no vendor spends
    // silent. The first-byte timeout is not what is tested here, so it does not race the double.
    const env = { ...inProcessVendorEnv(replay), VENDOR_FIRST_BYTE_TIMEOUT_MS: '600000' }
    ctx = await createTestApp({ catalogue: CATALOGUE, languageModelFor: createLanguageModels(env) })
    org = fundedOrg(ctx, '100000')
    // Headroom 0 and drop_oldest: packing fills the whole input budget, the nearest a turn comes to the window.
    await client(ctx, org).post('/api/v1/config/budgets', { budget: { version: 3, headroom: 0, history_mode: 'drop_oldest' } })
  })
  afterAll(async () => {
    await ctx?.close()
    await replay?.close()
    // What the estimator's error looks like near the window, per model and kind: the first request's
    // count by the vendor's tokenizer against the bound it was held to (the report issue 33 asks for).
    const rows = [...outcomes].map(([name, o]) => {
      const first = o.requests[0]
      const bound = first ? Math.min(first.window ?? Infinity, first.limits?.inputLimit ?? Infinity) : null
      return `${name}: ${first?.breach ? `REFUSED (${first.breach.limit})` : 'taken'}, ${first?.countedInputTokens} counted + ${first?.outputCeiling} out, bound ${bound}`
    })
    console.info(`near the window, first requests:\n${rows.join('\n')}`)
  })

  test('the catalogue has active vendor models, each with documented limits', () => {
    expect(ACTIVE.length).toBeGreaterThan(0)
    for (const e of ACTIVE) expect(documentedLimits(e.provider as Vendor, e.vendor_model_id), e.name).toBeDefined()
  })

  const cases = ACTIVE.flatMap((e) => KINDS.map((kind) => [e.name, kind, e] as const))

  test.each(cases)('%s, %s: streams to done, taken on the first request or after the one refit the manifest shows', async (_name, kind, model) => {
    const vendor = model.provider as Vendor
    // Cold start: no correction learned for the model. Cleared from a connection of its own, as an
    // operator would: the server's connection keeps read-mostly rows until another commits (src/store/read-mostly.ts).
    const operator = new Database(ctx.store.db.name)
    operator.prepare('DELETE FROM token_corrections WHERE model_id = ?').run(model.id)
    operator.close()
    const chatId = await newChat(ctx, org.auth)
    seedHistory(ctx, chatId, kind, model.context_window + 4 * PART_UNITS)
    const before = replay.requestsTo(vendor).length
    const text = textOfClass(kind, 1_500, seededRandom(77))
    const res = await postTurn(ctx, org.auth, chatId, {
      model: model.name,
      input: [prompt(text, takesImages(model) ? { media: [{ mime: 'image/png', data_base64: IMAGE }] } : {})],
      tools: [TOOL],
    })
    const requests = replay.requestsTo(vendor).slice(before)
    const events = res.statusCode === 200 ? streamOf(res).events : []
    outcomes.set(key(model.name, kind), { requests, status: res.statusCode, events, body: res.body })

    const what = requests.map((r) => `${r.status}: ${r.countedInputTokens} counted + ${r.outputCeiling} out, window ${r.window}, input limit ${r.limits?.inputLimit}`).join('; ')
    expect(requests.length, what).toBeGreaterThanOrEqual(1)
    const refused = requests.filter((r) => r.breach !== null)
    expect(refused.length, what).toBeLessThanOrEqual(1)
    expect(requests.length, what).toBeLessThanOrEqual(2)
    expect(res.statusCode, res.body).toBe(200)
    expect(events.at(-1), what).toBe('done')
    expect(events, what).not.toContain('error')
    expect(requests.at(-1)!.breach, what).toBeNull()
    const manifest = (await getRun(ctx, org.auth, streamOf(res).runId)).manifest
    if (refused.length === 1) {
      expect(manifest.refit, what).not.toBeNull()
      expect(manifest.refit.refusal.vendor_count, what).toBe(refused[0]!.countedInputTokens)
      // Only the first may be refused, and only for its size in tokens: what a refit can cure.
      expect(requests[0]!.breach, what).not.toBeNull()
      expect(['input', 'window'], what).toContain(requests[0]!.breach!.limit)
      // The double answered it with the vendor's error for that breach (limit-errors.ts); Parley must read it as a context refusal.
      const refusal = requests[0]!
      const body = JSON.stringify(limitError(vendor, refusal.breach!, model.vendor_model_id).body)
      expect(readContextRefusal(refusal.status, body).value, `${what}: ${body}`).not.toBeNull()
    } else expect(manifest.refit, what).toBeNull()
  })
})

