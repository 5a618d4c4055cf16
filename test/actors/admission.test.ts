import { Decimal } from 'decimal.js'
import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createChatActorHost, type ChatActorHost } from '../../src/actors/chat-actor-host.ts'
import { createContextHistory } from '../../src/actors/context-history.ts'
import { LEASE_TTL_MS } from '../../src/actors/run-deps.ts'
import { framesOf, nextEvent, settledOf, type RunChannel } from '../../src/actors/run-channel.ts'
import type { CatalogueEntry } from '../../src/domain/catalogue/catalogue-entry.ts'
import { estimatePartTokens } from '../../src/domain/context/estimate-part-tokens.ts'
import {
  ContextTooLargeError,
  IdempotencyKeyReusedError,
  InsufficientBalanceError,
  NotFoundError,
  RetryNotAllowedError,
  UpstreamError,
  type DomainError,
} from '../../src/domain/errors.ts'
import type { PartBody } from '../../src/domain/parts.ts'
import type { TurnRequest } from '../../src/domain/turns/submission.ts'
import { createConfigResolver } from '../../src/store/config-resolution.ts'
import { createStore, type Store } from '../../src/store/index.ts'
import { admitted } from '../helpers/admitted.ts'
import { openTempStore } from '../helpers/temp-store.ts'
import { echo, prepareTurn, prompt, sandboxCatalogue, snapshotRows, variantOf, withFakes } from '../helpers/turns.ts'

/**
 * The §4 admission rules as the chat actors apply them to the real store: each refusal is the
 * domain error (class, code, details) and writes nothing; each admission records what the rules
 * decided (max_tokens, reasoning effort, warnings) in its run's manifest and its stream's frames.
 * The rules themselves, as pure functions, are in test/domain/turns/ (decide-admission,
 * max-tokens-fit, coerce-reasoning-effort); what HTTP makes of these errors (status, envelope) is
 * test/http/routes/turn-admission.test.ts.
 */

const HOUR = 3600 * 1000
// Sandbox-answered entries with narrower capabilities, to see coercion.
const NO_REASONING = variantOf('sandbox/plain', '9c1d2e3f-3333-4c3c-8d3d-000000000001', { supports_reasoning: false, max_reasoning_effort: null })
const LOW_REASONING = variantOf('sandbox/low', '9c1d2e3f-3333-4c3c-8d3d-000000000002', { max_reasoning_effort: 'low' })
const CATALOGUE = [...sandboxCatalogue(), NO_REASONING, LOW_REASONING]
const ECHO_8K = CATALOGUE.find((m) => m.name === 'sandbox/echo-8k')!

let temp: ReturnType<typeof openTempStore>
let store: Store
let host: ChatActorHost
let stopHost: () => void
let offset = 0
let orgId: string
let chatId: string
let orgs = 0

const clock = () => new Date(Date.now() + offset)

// One store and host for the file, as the HTTP file had one app: each test gets a fresh organisation
// (its own balance and idempotency keys) and chat, and the clock back at 0. "Nothing is written"
// compares the whole database before and after, which holds as well in a shared one.
beforeAll(() => {
  temp = openTempStore()
  store = createStore(temp.db, { now: clock })
  host = createChatActorHost({
    store,
    resolver: createConfigResolver(store),
    languageModelFor: withFakes({}),
    modelById: (id) => CATALOGUE.find((m) => m.id === id),
    now: clock,
    nodeId: 'node-a',
    leaseTtlMs: LEASE_TTL_MS,
    history: createContextHistory(store),
  })
  stopHost = host.start()
})
afterAll(() => {
  stopHost()
  host.stopAll()
  temp.close()
})
beforeEach(() => {
  offset = 0
  orgId = newOrg()
  chatId = newChat()
})

function newOrg(credit = '10'): string {
  const slug = `org-${++orgs}`
  const id = store.organisations.create(slug, slug).id
  if (credit !== '0') store.balance.add(id, 'topup', credit)
  return id
}
const newChat = (org = orgId) => store.chats.create({ orgId: org, namespace: null, title: null, description: null, userMetadata: {} }).id

type Opts = { chat?: string; org?: string; model?: CatalogueEntry }
const send = (request: Partial<TurnRequest>, { chat = chatId, org = orgId, model = echo() }: Opts = {}): RunChannel =>
  host.submit(prepareTurn(org, chat, { model: model.name, ...request }, model))

/** A turn that must be admitted; waits for its settlement. */
async function run(request: Partial<TurnRequest>, opts: Opts = {}) {
  const { runId, log } = await admitted(send(request, opts))
  await settledOf(log)
  const frames = framesOf(log)
  const row = store.runs.getById(runId)!
  return {
    runId,
    row,
    manifest: JSON.parse(row.manifest) as Record<string, any>,
    events: frames.map((f) => f.event),
    of: (event: string) => frames.filter((f) => f.event === event).map((f) => f.data as any),
  }
}

/** A turn that must be refused with `type` and `code`, and must write nothing at all. */
async function refused<E extends DomainError>(request: Partial<TurnRequest>, type: new (...args: never[]) => E, code: string, opts: Opts = {}): Promise<E> {
  const org = opts.org ?? orgId
  const before = snapshotRows(store)
  const balance = store.balance.balanceOf(org)
  const error = await admitted(send(request, opts)).then(
    ({ runId }) => {
      throw new Error(`admitted as ${runId}`)
    },
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(type)
  expect((error as E).code).toBe(code)
  expect(snapshotRows(store)).toEqual(before)
  expect(store.balance.balanceOf(org)).toBe(balance)
  return error as E
}

/** A run the sandbox fails before its stream opens (/fail, /flaky): the host's `failed_before_stream`. */
async function failedRun(text = '/fail\nx', opts: Opts = {}, request: Partial<TurnRequest> = {}): Promise<string> {
  const { runId, log } = await admitted(send({ input: [prompt(text) as never], ...request }, opts))
  const { event } = await nextEvent(log, ['opened', 'failed_before_stream'])
  expect(event.type).toBe('failed_before_stream')
  expect((event as { error: unknown }).error).toBeInstanceOf(UpstreamError)
  await settledOf(log)
  expect(store.runs.getById(runId)!.status).toBe('failed')
  return runId
}

const input = (text: string) => [prompt(text) as never]
const partsOf = (chat: string): PartBody[] =>
  (temp.db.prepare('SELECT body FROM parts WHERE chat_id = ? ORDER BY ordinal').all(chat) as { body: string }[]).map((r) => JSON.parse(r.body))

describe('idempotency', () => {
  it('reusing a key is IdempotencyKeyReusedError naming the first run in message and details.run_id; nothing is written', async () => {
    const first = await run({ input: input('once'), idempotency_key: 'key-1' })
    const error = await refused({ input: input('once'), idempotency_key: 'key-1' }, IdempotencyKeyReusedError, 'idempotency_key_reused')
    expect(error.details).toEqual({ run_id: first.runId })
    expect(error.message).toContain(first.runId)
  })

  it('names the first run whatever its outcome (a failed run too)', async () => {
    const failed = await failedRun('/fail\nx', {}, { idempotency_key: 'key-f' })
    const error = await refused({ input: input('again'), idempotency_key: 'key-f' }, IdempotencyKeyReusedError, 'idempotency_key_reused')
    expect(error.details).toEqual({ run_id: failed })
  })

  it('submitted at once on several chats, one key admits exactly one turn; the others are refused naming it, with nothing written', async () => {
    const chats = [chatId, ...Array.from({ length: 5 }, () => newChat())]
    const before = snapshotRows(store)
    // Sent together, so the admissions share one group commit: the key must still hold across them.
    const answers = await Promise.allSettled(chats.map((chat) => admitted(send({ input: input('same key'), idempotency_key: 'together' }, { chat }))))
    const won = answers.flatMap((a) => (a.status === 'fulfilled' ? [a.value] : []))
    expect(won).toHaveLength(1)
    for (const answer of answers.filter((a) => a.status === 'rejected')) {
      expect(answer.reason).toBeInstanceOf(IdempotencyKeyReusedError)
      expect(answer.reason.details).toEqual({ run_id: won[0]!.runId })
    }
    await won[0]!.channel.settled
    const after = snapshotRows(store)
    expect(after.runs - before.runs).toBe(1)
    expect(after.idempotency_keys - before.idempotency_keys).toBe(1)
    // The winner's prompt and answer; no other chat got a part.
    expect(after.parts - before.parts).toBe(2)
  })

  it('is organisation-scoped and spans chats', async () => {
    const first = await run({ input: input('a'), idempotency_key: 'shared' })
    const otherChat = newChat()
    const error = await refused({ input: input('b'), idempotency_key: 'shared' }, IdempotencyKeyReusedError, 'idempotency_key_reused', { chat: otherChat })
    expect(error.details).toEqual({ run_id: first.runId })

    const other = newOrg()
    const theirs = await run({ input: input('c'), idempotency_key: 'shared' }, { org: other, chat: newChat(other) })
    expect(theirs.events.at(-1)).toBe('done')
  })

  it('is honoured for 24 hours, then may be used again', async () => {
    await run({ input: input('a'), idempotency_key: 'daily' })
    offset = 23 * HOUR
    await refused({ input: input('b'), idempotency_key: 'daily' }, IdempotencyKeyReusedError, 'idempotency_key_reused')
    offset = 24 * HOUR + 60_000
    const later = await run({ input: input('c'), idempotency_key: 'daily' })
    expect(later.events.at(-1)).toBe('done')
  })
})

describe('retry_of', () => {
  it('of the latest failed run: admitted with no new input, and /flaky succeeds on the retry', async () => {
    const failed = await failedRun('/flaky\nretry me')
    const partsBefore = partsOf(chatId).length
    const t = await run({ input: [], retry_of: failed, idempotency_key: 'retry-1' })
    expect(t.events.at(-1)).toBe('done')
    expect(t.row.status).toBe('succeeded')
    const parts = partsOf(chatId)
    expect(parts).toHaveLength(partsBefore + 1)
    expect(parts.at(-1)).toEqual({ type: 'message', text: 'echo: retry me' })
  })

  it('of a succeeded run: RetryNotAllowedError, nothing written', async () => {
    const ok = await run({ input: input('fine') })
    await refused({ input: [], retry_of: ok.runId }, RetryNotAllowedError, 'retry_not_allowed')
  })

  it('of a failed run that is no longer the latest: retry_not_allowed', async () => {
    const failed = await failedRun()
    await run({ input: input('moved on') })
    await refused({ input: [], retry_of: failed }, RetryNotAllowedError, 'retry_not_allowed')
  })

  it('of a failed run already retried successfully: retry_not_allowed', async () => {
    const failed = await failedRun('/flaky\nonce')
    await run({ input: [], retry_of: failed })
    await refused({ input: [], retry_of: failed }, RetryNotAllowedError, 'retry_not_allowed')
  })

  it('of another chat’s failed run: retry_not_allowed', async () => {
    const failed = await failedRun('/fail\nx', { chat: newChat() })
    await refused({ input: [], retry_of: failed }, RetryNotAllowedError, 'retry_not_allowed')
  })

  it('of a missing run, or another organisation’s: NotFoundError', async () => {
    await refused({ input: [], retry_of: randomUUID() }, NotFoundError, 'not_found')
    const other = newOrg()
    const theirRun = await failedRun('/fail', { org: other, chat: newChat(other) })
    await refused({ input: [], retry_of: theirRun }, NotFoundError, 'not_found')
  })
})

describe('balance', () => {
  it('InsufficientBalanceError when the organisation has nothing; nothing is written', async () => {
    const broke = newOrg('0')
    const chat = newChat(broke)
    await refused({ input: input('free lunch?') }, InsufficientBalanceError, 'insufficient_balance', { org: broke, chat })
    expect(partsOf(chat)).toEqual([])
  })

  it('refused exactly when the balance cannot pay the estimated input plus one output token', async () => {
    // Learn the input estimate of this exact turn in an empty chat of a funded organisation.
    const probe = await run({ input: input('price me'), max_tokens: 1 })
    const inputTokens = probe.manifest.estimated_input_tokens as number
    const oneToken = new Decimal(inputTokens).mul('1.00').plus('2.00').div(1_000_000).mul('1.05')

    const justShort = newOrg(oneToken.minus('0.0000000001').toFixed())
    await refused({ input: input('price me') }, InsufficientBalanceError, 'insufficient_balance', { org: justShort, chat: newChat(justShort) })

    const exact = newOrg(oneToken.toFixed())
    const t = await run({ input: input('price me') }, { org: exact, chat: newChat(exact) })
    expect(t.manifest.max_tokens).toBe(1)
  })

  it('lowers max_tokens to what the balance pays for, with a max_tokens_lowered warning, and the run never overdraws', async () => {
    const poor = newOrg('0.0001')
    const t = await run({ input: input('/long 500'), max_tokens: 1000 }, { org: poor, chat: newChat(poor) })
    const inputCost = new Decimal(t.manifest.estimated_input_tokens).mul('1.00').div(1_000_000).mul('1.05')
    const affordable = new Decimal('0.0001').minus(inputCost).mul(1_000_000).div('2.10').floor().toNumber()
    expect(affordable).toBeLessThan(1000)
    expect(t.manifest.max_tokens).toBe(affordable)

    const warnings = t.of('translation_warnings')[0]!.warnings
    const lowered = warnings.find((w: { code: string }) => w.code === 'max_tokens_lowered')
    expect(lowered).toMatchObject({ code: 'max_tokens_lowered', message: expect.any(String), details: { requested: 1000, applied: affordable } })
    expect(t.manifest.warnings.translation).toEqual(warnings)

    expect(t.of('done')[0]!.stop_reason).toBe('max_tokens')
    expect(new Decimal(store.balance.balanceOf(poor)).gte(0)).toBe(true)
  })

  it('lowers max_tokens to the model’s ceiling, with a warning', async () => {
    const t = await run({ input: input('big'), max_tokens: 100_000 })
    expect(t.manifest.max_tokens).toBe(echo().max_output_tokens)
    expect(t.of('translation_warnings')[0]!.warnings).toEqual([
      { code: 'max_tokens_lowered', message: expect.any(String), details: { requested: 100_000, applied: echo().max_output_tokens } },
    ])
  })

  it('never raises max_tokens and warns about nothing when it already fits', async () => {
    const t = await run({ input: input('small'), max_tokens: 64 })
    expect(t.manifest.max_tokens).toBe(64)
    expect(t.of('translation_warnings')[0]!.warnings).toEqual([])
  })
})

describe('reasoning_effort', () => {
  it('is coerced to off with a warning on a model that does not reason', async () => {
    const t = await run({ input: input('think hard'), reasoning_effort: 'high' }, { model: NO_REASONING })
    expect(t.events.at(-1)).toBe('done')
    const warnings = t.of('translation_warnings')[0]!.warnings
    expect(warnings).toEqual([{ code: 'reasoning_effort_coerced', message: expect.any(String), details: { requested: 'high', applied: 'off' } }])
    expect(t.manifest.reasoning_effort).toBe('off')
    expect(t.manifest.warnings.translation).toEqual(warnings)
  })

  it('is coerced down to the model’s maximum with a warning', async () => {
    const t = await run({ input: input('think harder'), reasoning_effort: 'max' }, { model: LOW_REASONING })
    expect(t.of('translation_warnings')[0]!.warnings).toEqual([
      { code: 'reasoning_effort_coerced', message: expect.any(String), details: { requested: 'max', applied: 'low' } },
    ])
    expect(t.manifest.reasoning_effort).toBe('low')
  })

  it('is kept, without a warning, when the model can honour it', async () => {
    const low = await run({ input: input('a'), reasoning_effort: 'low' }, { model: LOW_REASONING })
    expect(low.of('translation_warnings')[0]!.warnings).toEqual([])
    const off = await run({ input: input('b'), reasoning_effort: 'off' }, { model: NO_REASONING })
    expect(off.of('translation_warnings')[0]!.warnings).toEqual([])
    const max = await run({ input: input('c'), reasoning_effort: 'max' })
    expect(max.of('translation_warnings')[0]!.warnings).toEqual([])
    expect(max.manifest.reasoning_effort).toBe('max')
  })
})

describe('context', () => {
  it('ContextTooLargeError when the fixed parts exceed the input budget, naming what each takes; nothing is written; a wider model takes it', async () => {
    // sandbox/echo-8k: input budget floor(8192 × 0.9) = 7372 under the platform default.
    const long = input('word '.repeat(8000))
    const error = await refused({ input: long }, ContextTooLargeError, 'context_too_large', { model: ECHO_8K })
    expect(error.message).toMatch(/input budget is 7372/)
    // 8,000 words: at least their exact 8,000 tokens (a text this long is estimated from samples, with a margin).
    const current = Number(/instructions 0, tools 0, anchor parts 0, the current exchange (\d+)$/.exec(error.message)?.[1])
    expect(current).toBeGreaterThanOrEqual(8000)
    expect(error.details).toMatchObject({ fixed_tokens: { current } })
    expect(error.details).toMatchObject({ input_budget: 7372, fixed_tokens: { instructions: 0, tools: 0, anchors: 0 } })
    const wide = await run({ input: long })
    expect(wide.events.at(-1)).toBe('done')
  })

  it('a history over the window is summarised, never refused: the turn compacts after its stream opened', async () => {
    // The first two parts are the platform default's anchors; the long prompt after them cannot fit.
    const bodies: PartBody[] = [
      { type: 'prompt', text: 'hello' },
      { type: 'message', text: 'hi' },
      { type: 'prompt', text: 'word '.repeat(8000) },
      { type: 'message', text: 'noted' },
    ]
    const [, , long] = store.parts.append(chatId, bodies.map((body) => ({ body, tokens: estimatePartTokens(body) })))
    const t = await run({ input: input('summarise') }, { model: ECHO_8K })
    expect(t.events.at(-1)).toBe('done')
    expect(t.events.slice(0, 4)).toEqual(['run', 'config_warnings', 'translation_warnings', 'compacting'])
    expect(t.of('compacting')[0]).toEqual({ blocks: 1, in_progress_elsewhere: 0 })
    expect(t.of('config_warnings')[0]!.warnings).toEqual([])
    expect(t.of('done')[0]!.compaction).toEqual({ blocks_generated: 1, blocks_reused: 0, in_progress_elsewhere: 0 })
    const summaries = store.summaries.ofChat(chatId)
    expect(summaries).toHaveLength(1)
    // The anchors are in no block: the summary begins after them (decisions §5.2).
    expect(summaries[0]).toMatchObject({ firstOrdinal: long!.ordinal, lastOrdinal: long!.ordinal })
    expect(summaries[0]!.text).toMatch(new RegExp(`^Summary of ordinals ${long!.ordinal}-${long!.ordinal}: word word`))
  })

  it('a history that fits sandbox/echo’s input budget is taken', async () => {
    store.parts.append(chatId, [{ body: { type: 'prompt', text: 'a long document' }, tokens: 100_000 }])
    const t = await run({ input: input('summarise') })
    expect(t.events.at(-1)).toBe('done')
  })
})
