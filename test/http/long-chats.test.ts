import { statusAt } from '../../src/domain/catalogue/lifecycle.ts'
import { inProcessVendorEnv } from '../e2e/vendor-server.ts'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import type { CatalogueEntry } from '../../src/domain/catalogue/catalogue-entry.ts'
import { estimatePartTokens } from '../../src/domain/context/estimate-part-tokens.ts'
import type { PartBody } from '../../src/domain/parts.ts'
import { loadCatalogue } from '../../src/providers/catalogue/load-catalogue.ts'
import { createLanguageModels } from '../../src/providers/language-models.ts'
import { client } from '../helpers/config-api.ts'
import { createTestApp, type TestContext, type TestOrg } from '../helpers/test-app.ts'
import { fundedOrg, getRun, newChat, postTurn, prompt, turn, type Turn } from '../helpers/turns.ts'
import { prose } from '../e2e/prose.ts'
import { DOCUMENTED_LIMITS, documentedLimits, type DocumentedLimits } from '../e2e/vendor-documented-limits.ts'
import { FIXTURES, type Vendor } from '../e2e/vendor-fixtures/index.ts'
import { requestFacts } from '../e2e/vendor-fixtures/request-texts.ts'
import { countInputTokens, startReplayServer, type RecordedRequest, type ReplayServer, type ReplayServerOptions } from '../e2e/vendor-replay-server.ts'

/**
 * Long chats on the vendors (issue 19): a chat packed to its model's input budget must send a
 * request every vendor takes. The vendors are the replay server with limit enforcement on: it counts
 * each request's input tokens (the project's estimator over every text of the request, times a
 * per-vendor factor standing in for the vendor's tokenizer) and refuses, with the vendor's error,
 * input plus output ceiling over the documented window, input over the documented input limit, and
 * an output ceiling over the documented output limit. The limits are the vendors' documented ones
 * (vendor-documented-limits.ts), not the catalogue's. The real app runs in process over a real
 * SQLite store with the real vendor packages pointed at the replay server; the chats' history is
 * appended through the store (hundreds of thousands of tokens of turns over HTTP would take
 * minutes), then one real turn runs.
 */

const VENDORS = Object.keys(FIXTURES) as Vendor[]

const CATALOGUE = loadCatalogue().entries
// Retired models are refused before any request (decision 041): the ones a chat can still name.
// The vendor models a turn may name today: a model past its retires_at is refused (decision 041),
// so the list follows the clock, and a deprecated model drops out of it on its retirement date.
const VENDOR_MODELS = CATALOGUE.filter((e) => e.provider !== 'sandbox' && statusAt(e, new Date()) !== 'retired')
const entry = (name: string): CatalogueEntry => CATALOGUE.find((e) => e.name === name)!
const limitsOf = (e: CatalogueEntry): DocumentedLimits => {
  const limits = documentedLimits(e.provider as Vendor, e.vendor_model_id)
  if (!limits) throw new Error(`${e.name} (${e.vendor_model_id}) has no documented limits in vendor-documented-limits.ts: add them, with their source`)
  return limits
}

/**
 * History parts: plain prose of about this many tokens each, alternately a prompt and an answer.
 * Each stays under the estimator's exact-count size (EXACT_MAX_CHARS, 4,096 UTF-16 units), so its
 * estimate is its exact count, and part i is the same text in every chat: estimateTokens memoizes
 * long texts, so the replay server's counting of a 2M-token request costs map look-ups, not BPE.
 */
const PART_TOKENS = 800
const pool: PartBody[] = []
const partBody = (i: number): PartBody => {
  while (pool.length <= i) {
    const n = pool.length
    pool.push({ type: n % 2 === 0 ? 'prompt' : 'message', text: prose(n, PART_TOKENS) })
  }
  return pool[i]!
}

/** Appends history to the chat until it holds at least `tokens` estimated tokens; returns what it holds. */
function seedHistory(ctx: TestContext, chatId: string, tokens: number): number {
  const parts: { body: PartBody; tokens: number }[] = []
  let total = 0
  for (let i = 0; total < tokens; i++) {
    const body = partBody(i)
    const estimate = estimatePartTokens(body)
    parts.push({ body, tokens: estimate })
    total += estimate
  }
  ctx.store.parts.append(chatId, parts)
  return total
}

/** The one vendor request a turn made, which must have been answered 200. */
function onlyRequest(replay: ReplayServer, vendor: Vendor, before: number): RecordedRequest {
  const sent = replay.requestsTo(vendor).slice(before)
  expect(sent.map((r) => r.status), JSON.stringify(sent.map((r) => [r.breach, r.countedInputTokens, r.outputCeiling]))).toHaveLength(1)
  return sent[0]!
}

/**
 * The request a turn's run was taken with: its first, or the second after the one automatic refit
 * (docs/decisions/044-context-refusal-refit.md), which the run's manifest must show.
 */
function takenRequest(replay: ReplayServer, vendor: Vendor, before: number, manifest: { refit: { refusal: { vendor_count: number | null } } | null }): RecordedRequest {
  const sent = replay.requestsTo(vendor).slice(before)
  const what = JSON.stringify(sent.map((r) => ({ status: r.status, breach: r.breach })))
  if (manifest.refit === null) expect(sent.map((r) => r.status), what).toEqual([200])
  else {
    expect(sent.map((r) => r.status), what).toEqual([400, 200])
    expect(sent[0]!.breach, what).not.toBeNull()
  }
  return sent.at(-1)!
}

/**
 * The request within the vendor's documented limits, and taken: input plus output ceiling within
 * the window in force, input within the input limit, output ceiling within the output limit.
 */
function expectWithinDocumentedLimits(request: RecordedRequest, limits: DocumentedLimits) {
  expect(request.limits, 'the replay server knows the model').toBe(limits)
  const input = request.countedInputTokens!
  const output = request.outputCeiling
  const what = `${limits.vendorModelId}: ${input} input + ${output} output (window ${request.window}, input limit ${limits.inputLimit}, output limit ${limits.outputLimit})`
  expect(request.breach, what).toBeNull()
  expect(request.status, what).toBe(200)
  expect(output, `${what}: an output ceiling is sent`).not.toBeNull()
  expect(output!, what).toBeGreaterThanOrEqual(1)
  if (request.window !== null) expect(input + output!, what).toBeLessThanOrEqual(request.window)
  if (limits.inputLimit !== null) expect(input, what).toBeLessThanOrEqual(limits.inputLimit)
  if (limits.outputLimit !== null) expect(output!, what).toBeLessThanOrEqual(limits.outputLimit)
}

function expectAnswered(t: Turn) {
  expect(t.events.at(-1), JSON.stringify(t.frames.at(-1))).toBe('done')
  expect(t.of('error')).toEqual([])
}

const historyDropped = (t: Turn) => t.of('config_warnings')[0]!.data.warnings.find((w: { code: string }) => w.code === 'history_dropped')

const optInHeader = (request: RecordedRequest) => String(request.headers['anthropic-beta'] ?? '').split(',').map((s) => s.trim())

/** The most input a model's documented limits let one request hold (its opt-in window for Sonnet 4.5). */
const documentedInputBound = (limits: DocumentedLimits) => Math.min(limits.inputLimit ?? Number.POSITIVE_INFINITY, limits.window ?? Number.POSITIVE_INFINITY)

/**
 * The app in process over a real store, every vendor on a replay server started with `options`, and a
 * funded organisation whose budget is headroom 0 (packing may fill the whole window, which must still
 * leave the output its room) with drop_oldest (what does not fit is left out: no compaction run).
 * Registers its own teardown with the describe block that calls it.
 */
function appOnTheDouble(options: ReplayServerOptions) {
  const on = {} as { replay: ReplayServer; ctx: TestContext; org: TestOrg }
  beforeAll(async () => {
    on.replay = await startReplayServer(options)
    on.ctx = await createTestApp({ catalogue: CATALOGUE, languageModelFor: createLanguageModels(inProcessVendorEnv(on.replay)) })
    on.org = fundedOrg(on.ctx, '100000')
    await client(on.ctx, on.org).post('/api/v1/config/budgets', { budget: { version: 3, headroom: 0, history_mode: 'drop_oldest' } })
  })
  afterAll(async () => {
    await on.ctx?.close()
    await on.replay?.close()
  })
  return on
}

describe('long chats on the vendors: a chat packed to its input budget is taken', () => {
  const on = appOnTheDouble({ enforceLimits: true, reportCountedUsage: true })

  /**
   * A new chat seeded with at least `tokens` of history, then one turn on the catalogue model `name`
   * with the prompt `text`: the model's documented limits, the turn, and the one vendor request it made.
   */
  const seededTurn = async (name: string, tokens: number, text: string) => {
    const model = entry(name)
    const limits = limitsOf(model)
    const vendor = model.provider as Vendor
    const chatId = await newChat(on.ctx, on.org.auth)
    seedHistory(on.ctx, chatId, tokens)
    const before = on.replay.requestsTo(vendor).length
    const t = await turn(on.ctx, on.org.auth, chatId, { model: model.name, input: [prompt(text)] })
    return { limits, t, request: onlyRequest(on.replay, vendor, before) }
  }

  test('the documented limits cover every vendor model of the catalogue', () => {
    expect(VENDOR_MODELS.length).toBeGreaterThan(0)
    for (const e of VENDOR_MODELS) expect(documentedLimits(e.provider as Vendor, e.vendor_model_id), e.name).toBeDefined()
    for (const limits of DOCUMENTED_LIMITS) for (const source of limits.sources) expect(source.url, limits.vendorModelId).toMatch(/^https:\/\//)
  })

  test.each(VENDOR_MODELS.map((e) => [e.name, e] as const))('%s: a chat past its input budget is packed to it, and the request is within the documented limits', async (_name, model) => {
    const limits = limitsOf(model)
    const vendor = model.provider as Vendor
    const chatId = await newChat(on.ctx, on.org.auth)
    // More than any budget could take: past the documented input bound and the catalogue's window.
    const seeded = seedHistory(on.ctx, chatId, Math.max(documentedInputBound(limits), model.context_window) + 8 * PART_TOKENS)
    const before = on.replay.requestsTo(vendor).length

    const t = await turn(on.ctx, on.org.auth, chatId, { model: model.name, input: [prompt('Where did we leave the harbour plans?')] })

    const request = takenRequest(on.replay, vendor, before, (await getRun(on.ctx, on.org.auth, t.runId)).manifest)
    expectWithinDocumentedLimits(request, limits)
    expectAnswered(t)
    // Packed to the budget: the oldest history was left out, and what was sent fills the budget to
    // within one history part.
    expect(historyDropped(t), 'history_dropped').toBeDefined()
    const manifest = (await getRun(on.ctx, on.org.auth, t.runId)).manifest
    const context = manifest.context
    expect(context.tokens.total).toBeLessThanOrEqual(context.input_budget)
    expect(context.tokens.total).toBeGreaterThan(context.input_budget - 2 * PART_TOKENS)
    expect(request.countedInputTokens!).toBeLessThan(seeded)
    // The manifest says what was sent: the output ceiling, and the window it had to fit.
    expect(manifest.max_tokens).toBe(request.outputCeiling)
    if (request.window !== null) expect(manifest.limits.window).toBeLessThanOrEqual(request.window)
    if (limits.longContext) {
      // Past the standard window only with the opt-in.
      expect(request.countedInputTokens!).toBeGreaterThan(limits.longContext.standardWindow)
      expect(optInHeader(request)).toContain(limits.longContext.value)
      expect(manifest.limits.long_context).toBe(true)
    }
  })

  test('Claude Haiku 4.5 at its budget: input plus max_tokens within its 200k window', async () => {
    const { limits, t, request } = await seededTurn('anthropic/claude-haiku-4.5', 200_000 + 8 * PART_TOKENS, 'And the lighthouse?')
    expect(request.window).toBe(200_000)
    expect(optInHeader(request)).not.toContain('context-1m-2025-08-07')
    expectWithinDocumentedLimits(request, limits)
    expect(request.countedInputTokens!).toBeGreaterThan(200_000 - 64_000)
    expectAnswered(t)
    expect(historyDropped(t)).toBeDefined()
  })

  test('deepseek-v4-flash: a chat of about 700k tokens is taken (its 384K output ceiling lowered to fit 1M)', async () => {
    const { limits, t, request } = await seededTurn('deepseek/deepseek-v4-flash', 700_000, 'Which moorings are free?')
    // With the whole 384K output ceiling this request would be over the 1,048,576 window.
    expect(request.countedInputTokens! + limits.outputLimit!).toBeGreaterThan(limits.window!)
    expectWithinDocumentedLimits(request, limits)
    expectAnswered(t)
    expect(historyDropped(t)).toBeUndefined()
  })

  test('gpt-5: a chat past 272k tokens is capped by the input limit, not the 400k window', async () => {
    const { limits, t, request } = await seededTurn('openai/gpt-5', 300_000, 'Where are the sandbanks?')
    expectWithinDocumentedLimits(request, limits)
    expect(request.countedInputTokens!).toBeLessThanOrEqual(272_000)
    expect(request.countedInputTokens!).toBeGreaterThan(272_000 - 4 * PART_TOKENS)
    expectAnswered(t)
    expect(historyDropped(t)).toBeDefined()
    expect((await getRun(on.ctx, on.org.auth, t.runId)).manifest.context.input_budget).toBeLessThanOrEqual(272_000)
  })
})

describe('token calibration: a vendor that counts 25% more than the estimator', () => {
  const FACTOR = 1.25
  /** Settled runs of at least 1,024 estimated tokens before the turn that must be corrected. */
  const CALIBRATION_RUNS = 5
  const MODEL = 'anthropic/claude-haiku-4.5'
  // Usage reports the counted tokens split as Anthropic splits them: fresh input, cache read,
  // cache write; the vendor's count is their sum.
  const on = appOnTheDouble({ enforceLimits: true, tokenFactors: { anthropic: FACTOR }, reportCountedUsage: { cacheReadShare: 0.5, cacheWriteShare: 0.25 } })

  test('after the calibration runs, a turn packed to the budget fits in the vendor’s count; the manifest and the run show the correction', async () => {
    const model = entry(MODEL)
    const limits = limitsOf(model)
    const chatId = await newChat(on.ctx, on.org.auth)
    /** What each calibration run's request was counted at by the vendor double, over Parley's estimate. */
    const ratios: number[] = []
    for (let i = 0; i < CALIBRATION_RUNS; i++) {
      const before = on.replay.requestsTo('anthropic').length
      // Two parts of 700 tokens, each counted exactly (a text past 4,096 characters is estimated from
      // samples with a margin, decision 042, and would teach a ratio lower than exact counts have).
      const t = await turn(on.ctx, on.org.auth, chatId, { model: MODEL, input: [prompt(prose(10_000 + i, 700)), prompt(prose(20_000 + i, 700))] })
      expectAnswered(t)
      const request = onlyRequest(on.replay, 'anthropic', before)
      const run = await getRun(on.ctx, on.org.auth, t.runId)
      expect(run.manifest.estimated_input_tokens).toBeGreaterThanOrEqual(1024)
      // The vendor (its own count, a quarter up) counted more than the estimate, and said so in its usage.
      expect(run.token_estimate.reported).toBe(request.countedInputTokens)
      ratios.push(request.countedInputTokens! / run.manifest.estimated_input_tokens)
    }
    expect(Math.min(...ratios)).toBeGreaterThan(1.1)

    seedHistory(on.ctx, chatId, 200_000 + 8 * PART_TOKENS)
    const before = on.replay.requestsTo('anthropic').length
    const t = await turn(on.ctx, on.org.auth, chatId, { model: MODEL, input: [prompt('What is left to do?')] })
    const request = onlyRequest(on.replay, 'anthropic', before)
    expectWithinDocumentedLimits(request, limits)
    expectAnswered(t)
    expect(historyDropped(t)).toBeDefined()
    // Within the input budget (headroom 0: the window) in the vendor's count, not only in ours.
    expect(request.countedInputTokens!).toBeLessThanOrEqual(model.context_window)

    const run = await getRun(on.ctx, on.org.auth, t.runId)
    const estimate = run.manifest.token_estimate
    // The highest ratio the runs taught, stepped up to 0.025 (decision 027).
    expect(estimate.correction).toBeGreaterThanOrEqual(Math.max(...ratios))
    expect(estimate.correction).toBeLessThan(Math.max(...ratios) + 0.025)
    expect(estimate.runs).toBeGreaterThanOrEqual(CALIBRATION_RUNS)
    expect(estimate.estimated).toBe(run.manifest.estimated_input_tokens)
    expect(estimate.corrected).toBe(Math.ceil(estimate.estimated * estimate.correction))
    // Packed to the corrected budget: the estimate of what was sent fills it to within one history
    // part, and the estimate corrected is what the vendor was expected to count, within the window.
    expect(run.manifest.context.tokens.total).toBeLessThanOrEqual(run.manifest.context.input_budget)
    expect(run.manifest.context.tokens.total).toBeGreaterThan(run.manifest.context.input_budget - 2 * PART_TOKENS)
    expect(estimate.corrected + request.outputCeiling!).toBeLessThanOrEqual(limits.window!)
    // What the request had to fit, and the output ceiling it was sent with.
    expect(run.manifest.limits).toEqual({ window: limits.window, input_limit: null, long_context: false })
    expect(run.manifest.max_tokens).toBe(request.outputCeiling)

    // The run reports what the vendor counted (input + cache read + cache write) against the estimate.
    expect(run.token_estimate).toMatchObject({ estimated: estimate.estimated, correction: estimate.correction, corrected: estimate.corrected })
    expect(run.token_estimate.reported).toBe(request.countedInputTokens)
    expect(run.token_estimate.reported / run.token_estimate.estimated).toBeLessThanOrEqual(estimate.correction)
  })
})

describe('a context refusal recovers: the vendor refuses the first request for its context, the turn is packed again once', () => {
  // docs/decisions/044-context-refusal-refit.md. Cold start: no run has taught the model's correction yet.
  const MODEL = 'anthropic/claude-haiku-4.5'
  // The vendor counts a quarter more than the estimator, and (with no correction learned) Parley
  // packs a chat past its window to 200k of its own count: Anthropic refuses it, naming its count.
  const on = appOnTheDouble({ enforceLimits: true, tokenFactors: { anthropic: 1.25 }, reportCountedUsage: true })

  test('the turn streams to done with no error frame, the manifest shows the refit, and the correction has moved', async () => {
    const model = entry(MODEL)
    const limits = limitsOf(model)
    expect(on.ctx.store.tokenCorrections.correctionFor(model.id)).toEqual({ correction: 1, runs: 0 })
    const chatId = await newChat(on.ctx, on.org.auth)
    seedHistory(on.ctx, chatId, 200_000 + 8 * PART_TOKENS)
    const before = on.replay.requestsTo('anthropic').length

    const t = await turn(on.ctx, on.org.auth, chatId, { model: MODEL, input: [prompt('Is the ferry running?')] })

    const sent = on.replay.requestsTo('anthropic').slice(before)
    expect(sent.map((r) => r.status)).toEqual([400, 200])
    const [refused, taken] = sent as [RecordedRequest, RecordedRequest]
    expect(refused.breach).not.toBeNull()
    expectWithinDocumentedLimits(taken, limits)
    expectAnswered(t)
    // Nothing of the refused request reached the client: one run frame, one set of warnings.
    expect(t.of('run')).toHaveLength(1)
    expect(t.of('translation_warnings')).toHaveLength(1)

    const run = await getRun(on.ctx, on.org.auth, t.runId)
    expect(run.status).toBe('succeeded')
    const refit = run.manifest.refit
    expect(refit.refusal.vendor_count).toBe(refused.countedInputTokens)
    expect(refit.refusal.limit).toBe(limits.window)
    expect(refit.before.max_tokens).toBe(refused.outputCeiling)
    expect(refit.after.max_tokens).toBe(taken.outputCeiling)
    expect(refit.after.estimated_input_tokens).toBeLessThan(refit.before.estimated_input_tokens)
    // The correction learned from the refusal at once: the vendor's count over the estimate it refused.
    expect(refit.after.correction).toBeGreaterThanOrEqual(refused.countedInputTokens! / refit.before.estimated_input_tokens)
    expect(run.manifest.token_estimate.correction).toBe(refit.after.correction)
    const learned = on.ctx.store.tokenCorrections.correctionFor(model.id)
    expect(learned.correction).toBeGreaterThan(1)
    expect(learned.runs).toBeGreaterThanOrEqual(2)
  })

  test('a retry_of after a second refusal is packed with the correction the refusals taught', async () => {
    // A vendor counting two and a half times the estimate: past the most a correction may be (2),
    // so the refit is refused too. The client gets 422 context_too_large naming the run, not a bare 502.
    on.replay.setTokenFactor('anthropic', 2.5)
    try {
      const chatId = await newChat(on.ctx, on.org.auth)
      seedHistory(on.ctx, chatId, 200_000 + 8 * PART_TOKENS)
      const before = on.replay.requestsTo('anthropic').length
      const res = await postTurn(on.ctx, on.org.auth, chatId, { model: MODEL, input: [prompt('And the harbour master?')] })
      expect(res.statusCode, res.body).toBe(422)
      const { error } = res.json()
      expect(error.code).toBe('context_too_large')
      expect(error.message).toMatch(/context size/)
      expect(error.message).toMatch(/packed again/)
      const sent = on.replay.requestsTo('anthropic').slice(before)
      expect(sent.map((r) => r.status)).toEqual([400, 400])
      const run = await getRun(on.ctx, on.org.auth, error.details.run_id)
      expect(run.status).toBe('failed')
      expect(run.usage).toBeNull()

      // The vendor counts as it did before; retry_of packs with what the refusals taught, and is taken.
      on.replay.setTokenFactor('anthropic', 1.25)
      const retry = await turn(on.ctx, on.org.auth, chatId, { model: MODEL, input: [], retry_of: run.id })
      expectAnswered(retry)
      const retried = on.replay.requestsTo('anthropic').slice(before + 2)
      expect(retried.map((r) => r.status)).toEqual([200])
      expect((await getRun(on.ctx, on.org.auth, retry.runId)).manifest.refit).toBeNull()
    } finally {
      on.replay.setTokenFactor('anthropic', 1.25)
    }
  })
})

/** A streaming request in the vendor's own shape: one user message holding `texts`, asking for `output` tokens at most. */
function vendorCall(limits: DocumentedLimits, texts: string[], output: number) {
  const model = limits.vendorModelId
  const base = FIXTURES[limits.vendor].basePath
  switch (limits.vendor) {
    case 'anthropic':
      return { path: `${base}/messages`, body: { model, max_tokens: output, stream: true, messages: [{ role: 'user', content: texts.map((text) => ({ type: 'text', text })) }] } }
    case 'openai':
    case 'xai':
      return { path: `${base}/responses`, body: { model, max_output_tokens: output, stream: true, input: [{ role: 'user', content: texts.map((text) => ({ type: 'input_text', text })) }] } }
    case 'google':
      return { path: `${base}/models/${model}:streamGenerateContent?alt=sse`, body: { contents: [{ role: 'user', parts: texts.map((text) => ({ text })) }], generationConfig: { maxOutputTokens: output } } }
    default:
      return { path: `${base}/chat/completions`, body: { model, max_tokens: output, stream: true, messages: texts.map((content) => ({ role: 'user', content })) } }
  }
}

/** Pool texts adding up to at least `tokens` as the double counts them for `limits`' model (or, with `atMost`, to the most that stays within it). */
function textsOf(limits: DocumentedLimits, tokens: number, atMost = false): { texts: string[]; counted: number } {
  const texts: string[] = []
  let counted = 0
  for (let i = 0; atMost ? true : counted < tokens; i++) {
    const text = (partBody(i) as { text: string }).text
    const n = countInputTokens(limits.vendor, limits.vendorModelId, [text])
    if (atMost && counted + n > tokens) break
    texts.push(text)
    counted += n
  }
  return { texts, counted }
}

describe('the vendor double: requests are held to the documented limits as the vendor holds them', () => {
  let replay: ReplayServer

  beforeAll(async () => {
    replay = await startReplayServer({ enforceLimits: true, reportCountedUsage: true })
  })
  afterAll(async () => {
    await replay?.close()
  })

  async function send(limits: DocumentedLimits, texts: string[], output: number, headers: Record<string, string> = {}) {
    const call = vendorCall(limits, texts, output)
    const res = await fetch(`${replay.url}${call.path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(call.body) })
    const text = await res.text()
    const recorded = replay.requests.at(-1)!
    expect(recorded.status).toBe(res.status)
    return { status: res.status, text, recorded }
  }

  test('every text of a request is counted: system, messages, reasoning, tool definitions, tool calls and results', () => {
    const marks = ['SYSTEM-MARK', 'USER-MARK', 'ASSISTANT-MARK', 'TOOLDEF-MARK', 'CALLARGS-MARK', 'RESULT-MARK']
    const bodies: Record<Vendor, [any, string]> = {
      anthropic: [
        {
          system: [{ type: 'text', text: marks[0] }],
          tools: [{ name: 'lookup', description: marks[3], input_schema: { type: 'object' } }],
          messages: [
            { role: 'user', content: [{ type: 'text', text: marks[1] }] },
            { role: 'assistant', content: [{ type: 'text', text: marks[2] }, { type: 'tool_use', id: 't', name: 'lookup', input: { q: marks[4] } }] },
            { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: [{ type: 'text', text: marks[5] }] }] },
          ],
        },
        '/anthropic/v1/messages',
      ],
      openai: [
        {
          instructions: marks[0],
          tools: [{ type: 'function', name: 'lookup', description: marks[3], parameters: { type: 'object' } }],
          input: [
            { role: 'user', content: [{ type: 'input_text', text: marks[1] }] },
            { role: 'assistant', content: [{ type: 'output_text', text: marks[2] }] },
            { type: 'function_call', call_id: 'c', name: 'lookup', arguments: JSON.stringify({ q: marks[4] }) },
            { type: 'function_call_output', call_id: 'c', output: marks[5] },
          ],
        },
        '/openai/v1/responses',
      ],
      google: [
        {
          systemInstruction: { parts: [{ text: marks[0] }] },
          tools: [{ functionDeclarations: [{ name: 'lookup', description: marks[3], parameters: { type: 'object' } }] }],
          contents: [
            { role: 'user', parts: [{ text: marks[1] }] },
            { role: 'model', parts: [{ text: marks[2] }, { functionCall: { name: 'lookup', args: { q: marks[4] } } }] },
            { role: 'user', parts: [{ functionResponse: { name: 'lookup', response: { name: 'lookup', content: marks[5] } } }] },
          ],
        },
        '/google/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse',
      ],
      mistral: [null, ''],
      // @ai-sdk/xai 5: the Responses API, the system prompt as an input item.
      xai: [
        {
          tools: [{ type: 'function', name: 'lookup', description: marks[3], parameters: { type: 'object' } }],
          input: [
            { role: 'system', content: marks[0] },
            { role: 'user', content: [{ type: 'input_text', text: marks[1] }] },
            { role: 'assistant', content: marks[2] },
            { type: 'function_call', call_id: 'c', name: 'lookup', arguments: JSON.stringify({ q: marks[4] }) },
            { type: 'function_call_output', call_id: 'c', output: marks[5] },
          ],
        },
        '/xai/v1/responses',
      ],
      deepseek: [null, ''],
    }
    const chat = {
      tools: [{ type: 'function', function: { name: 'lookup', description: marks[3], parameters: { type: 'object' } } }],
      messages: [
        { role: 'system', content: marks[0] },
        { role: 'user', content: marks[1] },
        { role: 'assistant', content: marks[2], tool_calls: [{ id: 'c', type: 'function', function: { name: 'lookup', arguments: JSON.stringify({ q: marks[4] }) } }] },
        { role: 'tool', tool_call_id: 'c', content: marks[5] },
      ],
    }
    for (const vendor of VENDORS) {
      const [body, path] = bodies[vendor][0] ? bodies[vendor] : [chat, `/${vendor}/chat/completions`]
      const texts = requestFacts(vendor, body, path).texts.join('\n')
      for (const mark of marks) expect(texts, `${vendor} counts ${mark}`).toContain(mark)
    }
  })

  test.each(DOCUMENTED_LIMITS.map((l) => [l.vendorModelId, l] as const))('%s: over the input bound is refused with the vendor\'s error; input plus output ceiling is held to the window to the token', async (_id, limits) => {
    const bound = Math.min(limits.inputLimit ?? Number.POSITIVE_INFINITY, limits.longContext?.standardWindow ?? limits.window ?? Number.POSITIVE_INFINITY)
    const over = textsOf(limits, bound + 1)
    const refused = await send(limits, over.texts, 1)
    expect(refused.recorded.countedInputTokens).toBe(over.counted)
    expect(refused.status, refused.text).toBe(400)
    expect(refused.recorded.breach).toEqual({ limit: 'input', input: over.counted, max: bound })
    expect(refused.text).toContain(String(bound))
    expect(refused.text).toContain(String(over.counted))

    if (limits.outputLimit !== null) {
      const small = textsOf(limits, PART_TOKENS)
      expect((await send(limits, small.texts, limits.outputLimit + 1)).status).toBe(400)
      const taken = await send(limits, small.texts, limits.outputLimit)
      expect(taken.status, taken.text).toBe(200)
      // The counted-usage answer reports the counted input tokens.
      expect(taken.text).toContain(String(small.counted))
    }

    const window = limits.longContext?.standardWindow ?? limits.window
    if (window !== null) {
      const near = textsOf(limits, window - 2_000, true)
      const room = window - near.counted
      if ((limits.inputLimit === null || near.counted <= limits.inputLimit) && (limits.outputLimit === null || room <= limits.outputLimit)) {
        const fits = await send(limits, near.texts, room)
        expect(fits.status, fits.text).toBe(200)
        const past = await send(limits, near.texts, room + 1)
        expect(past.status, past.text).toBe(400)
        expect(past.recorded.breach).toEqual({ limit: 'window', input: near.counted, output: room + 1, max: window })
      }
    }

    if (limits.longContext) {
      // The opt-in header lifts the standard window to the long one.
      const header = { [limits.longContext.header]: `some-other-beta,${limits.longContext.value}` }
      const call = vendorCall(limits, over.texts, 1)
      const res = await fetch(`${replay.url}${call.path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...header }, body: JSON.stringify(call.body) })
      await res.text()
      expect(res.status).toBe(200)
      expect(replay.requests.at(-1)!.window).toBe(limits.window)
    }
  })

  test('a token factor stands in for a tokenizer that counts more: the counted tokens, and the usage reported, scale with it', async () => {
    const limits = documentedLimits('deepseek', 'deepseek-chat')!
    const { texts, counted } = textsOf(limits, 2_000)
    replay.setTokenFactor('deepseek', 1.25)
    try {
      const taken = await send(limits, texts, 100)
      expect(taken.status).toBe(200)
      expect(taken.recorded.countedInputTokens).toBe(Math.ceil(counted * 1.25))
      expect(taken.text).toContain(`"prompt_tokens":${Math.ceil(counted * 1.25)}`)
    } finally {
      replay.setTokenFactor('deepseek', 1)
    }
  })
})
