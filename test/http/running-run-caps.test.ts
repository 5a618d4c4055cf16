import type { LanguageModelV4 } from '@ai-sdk/provider'
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createSandboxLanguageModel } from '../../src/providers/sandbox/sandbox-language-model.ts'
import { DEFAULT_MAX_CONCURRENT_TURNS, DEFAULT_MAX_RUNNING_RUNS_PER_ORG, readSettings } from '../../src/settings.ts'
import { RUNNING_CUSTOMER_RUNS_OF_ORG_SQL } from '../../src/store/runs.ts'
import { expectError } from '../helpers/http.ts'
import { createTestApp, type TestContext, type TestOrg } from '../helpers/test-app.ts'
import {
  countOf,
  deferred,
  finishPart,
  fundedOrg,
  insertRun,
  newChat,
  postTurn,
  prompt,
  sandboxCatalogue,
  scriptedModel,
  snapshotRows,
  streamOf,
  turn,
} from '../helpers/turns.ts'

/**
 * Issue 22, items 7 and 8 (docs/decisions/033-running-run-caps.md): one organisation may have at
 * most MAX_RUNNING_RUNS_PER_ORG running customer runs (429 `rate_limited` past it, others
 * unaffected), and one node serves at most MAX_CONCURRENT_TURNS turns at once (503 `unavailable`
 * past it). Runs are held open without any timing: a prompt holding `HOLD` waits at the vendor
 * call until the test opens the gate (the run is admitted and written by then, its stream not yet
 * open); one holding `MIDWAY` opens its stream, sends a delta, then waits at the same gate.
 */

let gate = deferred()
let arrived = 0
let waiters: { n: number; resolve: () => void }[] = []
/** Resolves once `n` held vendor calls have arrived (their runs are written and `running`). */
const heldCalls = (n: number) => new Promise<void>((resolve) => (arrived >= n ? resolve() : waiters.push({ n, resolve })))
const arrive = () => {
  arrived++
  waiters = waiters.filter((w) => (arrived >= w.n ? (w.resolve(), false) : true))
}

const midway = scriptedModel(async (emit) => {
  emit({ type: 'stream-start', warnings: [] })
  emit({ type: 'text-start', id: 't' })
  emit({ type: 'text-delta', id: 't', delta: 'half way' })
  arrive()
  await gate.promise
  emit({ type: 'text-end', id: 't' })
  emit(finishPart())
})

const gatedSandbox = (vendorModelId: string): LanguageModelV4 => {
  const sandbox = createSandboxLanguageModel(vendorModelId)
  return {
    ...sandbox,
    async doStream(options) {
      const text = JSON.stringify(options.prompt)
      if (text.includes('MIDWAY')) return midway.doStream(options)
      if (text.includes('HOLD')) {
        arrive()
        await gate.promise
      }
      return sandbox.doStream(options)
    },
  }
}

let ctx: TestContext | null = null
async function appWith(options: { maxRunningRunsPerOrg?: number; maxConcurrentTurns?: number }): Promise<TestContext> {
  ctx = await createTestApp({ catalogue: sandboxCatalogue(), languageModelFor: (entry) => gatedSandbox(entry.vendor_model_id), ...options })
  return ctx
}

afterEach(async () => {
  gate.resolve()
  await ctx?.close()
  ctx = null
  gate = deferred()
  arrived = 0
  waiters = []
})

const ask = (text: string) => ({ model: 'sandbox/echo', input: [prompt(text)] })

/** A held turn on a chat of its own: resolves with its whole answer once the gate opens. */
async function heldTurn(c: TestContext, org: TestOrg) {
  const chatId = await newChat(c, org.auth)
  return postTurn(c, org.auth, chatId, ask('HOLD this run open'))
}

describe('the per-organisation cap on running runs (MAX_RUNNING_RUNS_PER_ORG)', () => {
  it('past the cap a turn answers 429 rate_limited with Retry-After and writes nothing; another organisation is unaffected; once the runs end the organisation starts turns again', async () => {
    const c = await appWith({ maxRunningRunsPerOrg: 2 })
    const a = fundedOrg(c)
    const b = fundedOrg(c)
    const first = heldTurn(c, a)
    const second = heldTurn(c, a)
    await heldCalls(2)
    expect(c.store.runs.runningCustomerRunsOfOrg(a.orgId, 100)).toBe(2)

    const third = await newChat(c, a.auth)
    const before = snapshotRows(c.store)
    const refused = await postTurn(c, a.auth, third, { ...ask('one more'), idempotency_key: 'third-turn' })
    const error = expectError(refused, 429, 'rate_limited')
    expect(refused.headers['retry-after']).toBe('1')
    expect(error.details).toEqual({ reason: 'running_runs', limit: 2, retry_after_seconds: 1 })
    expect(error.message).toMatch(/2 running runs/)
    expect((error as { hint?: string }).hint).toMatch(/finish|cancel/)
    // Nothing written: no part, no run, no idempotency key, no balance entry.
    expect(snapshotRows(c.store)).toEqual(before)
    expect(countOf(c.store, 'runs', third)).toBe(0)
    expect(countOf(c.store, 'parts', third)).toBe(0)

    // Organisation B, at the same time: its own turns go through.
    const other = await turn(c, b.auth, await newChat(c, b.auth), ask('hello from B'))
    expect(other.events.at(-1)).toBe('done')

    gate.resolve()
    for (const res of await Promise.all([first, second])) expect(streamOf(res).events.at(-1)).toBe('done')
    // The refused turn's chat takes a turn now, and the key it sent was never recorded.
    const again = await turn(c, a.auth, third, { ...ask('one more'), idempotency_key: 'third-turn' })
    expect(again.events.at(-1)).toBe('done')
  })

  it('is atomic: of six turns of one organisation submitted at once on six chats, exactly the cap are admitted', async () => {
    const c = await appWith({ maxRunningRunsPerOrg: 2 })
    const a = fundedOrg(c)
    const chats = await Promise.all(Array.from({ length: 6 }, () => newChat(c, a.auth)))
    let answered = 0
    // A third run admitted would be the bug: open the gate then too, so the test fails instead of waiting.
    void heldCalls(3).then(() => gate.resolve())
    const responses = chats.map((chatId) =>
      postTurn(c, a.auth, chatId, ask('HOLD at once')).then((res) => {
        // The four refusals answer while the two admitted runs are held.
        if (++answered === 4) gate.resolve()
        return res
      }),
    )
    const all = await Promise.all(responses)
    expect(all.filter((r) => r.statusCode === 200)).toHaveLength(2)
    const refused = all.filter((r) => r.statusCode !== 200)
    expect(refused).toHaveLength(4)
    for (const res of refused) expectError(res, 429, 'rate_limited')
    expect(arrived).toBe(2)
    expect(c.store.db.prepare(`SELECT count(*) AS n FROM runs WHERE org_id = ?`).get(a.orgId)).toEqual({ n: 2 })
  })

  it('compaction runs do not count, and a run of another organisation does not either', async () => {
    const c = await appWith({ maxRunningRunsPerOrg: 2 })
    const a = fundedOrg(c)
    const b = fundedOrg(c)
    for (let i = 0; i < 2; i++) insertRun(c.store, { org_id: a.orgId, chat_id: crypto.randomUUID(), origin: 'compaction' })
    for (let i = 0; i < 2; i++) insertRun(c.store, { org_id: b.orgId, chat_id: crypto.randomUUID() })
    expect(c.store.runs.runningCustomerRunsOfOrg(a.orgId, 100)).toBe(0)
    expect(c.store.runs.runningCustomerRunsOfOrg(b.orgId, 100)).toBe(2)
    expect((await turn(c, a.auth, await newChat(c, a.auth), ask('hello'))).events.at(-1)).toBe('done')
    expectError(await postTurn(c, b.auth, await newChat(c, b.auth), ask('hello')), 429, 'rate_limited')
  })

  it('counts through migration 0012 index of running customer runs by organisation', async () => {
    const c = await appWith({})
    const plan = c.store.db
      .prepare(`EXPLAIN QUERY PLAN ${RUNNING_CUSTOMER_RUNS_OF_ORG_SQL}`)
      .all('org') as { detail: string }[]
    expect(plan.map((p) => p.detail).join('\n')).toMatch(/USING (COVERING )?INDEX runs_org_running_customer/)
  })
})

/** A turn over a real socket, for hanging up. */
function openTurn(port: number, org: TestOrg, chatId: string, text: string): { req: ClientRequest; response: Promise<IncomingMessage> } {
  const body = JSON.stringify(ask(text))
  const req = httpRequest({
    host: '127.0.0.1',
    port,
    method: 'POST',
    path: `/api/v1/chats/${chatId}/responses`,
    headers: { ...org.auth, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
  })
  req.on('error', () => undefined)
  const response = new Promise<IncomingMessage>((resolve) => req.on('response', resolve))
  req.end(body)
  return { req, response }
}

describe('the node-wide cap on concurrent turns (MAX_CONCURRENT_TURNS)', () => {
  it('past the cap a turn answers 503 unavailable with Retry-After at once, before its body is read; other routes are served; the count goes back down', async () => {
    const c = await appWith({ maxConcurrentTurns: 2 })
    const a = fundedOrg(c)
    const b = fundedOrg(c)
    // Turns refused before their stream opens give their place back.
    expectError(await postTurn(c, a.auth, '00000000-0000-4000-8000-000000000000', ask('no such chat')), 404, 'not_found')
    expectError(await postTurn(c, a.auth, await newChat(c, a.auth), { model: 'sandbox/none', input: [prompt('x')] }), 422, 'validation_failed')
    expectError(await postTurn(c, a.auth, await newChat(c, a.auth), { model: 'sandbox/echo' }), 422, 'validation_failed')

    const first = heldTurn(c, a)
    const second = heldTurn(c, a)
    await heldCalls(2)

    const chatB = await newChat(c, b.auth)
    const before = snapshotRows(c.store)
    const refused = await postTurn(c, b.auth, chatB, ask('hello'))
    const error = expectError(refused, 503, 'unavailable')
    expect(refused.headers['retry-after']).toBe('1')
    expect(error.details).toEqual({ reason: 'concurrent_turns', limit: 2, retry_after_seconds: 1 })
    // Before the body is read: malformed JSON gets the same 503, not a 400.
    const malformed = await c.app.inject({ method: 'POST', url: `/api/v1/chats/${chatB}/responses`, headers: { ...b.auth, 'content-type': 'application/json' }, payload: '{"model":' })
    expectError(malformed, 503, 'unavailable')
    // The key is still checked first.
    expectError(await postTurn(c, { authorization: 'Bearer nope' }, chatB, ask('hello')), 401, 'unauthorized')
    expect(snapshotRows(c.store)).toEqual(before)
    // Everything else is served.
    expect((await c.app.inject({ url: '/api/v1/chats', headers: b.auth })).statusCode).toBe(200)

    gate.resolve()
    for (const res of await Promise.all([first, second])) expect(streamOf(res).events.at(-1)).toBe('done')
    expect((await turn(c, b.auth, chatB, ask('hello'))).events.at(-1)).toBe('done')

    // Back to none in flight: two held turns fit again, a third does not (refusals took no place).
    gate = deferred()
    const third = heldTurn(c, a)
    const fourth = heldTurn(c, b)
    await heldCalls(4)
    expectError(await postTurn(c, b.auth, chatB, ask('hello')), 503, 'unavailable')
    gate.resolve()
    for (const res of await Promise.all([third, fourth])) expect(streamOf(res).events.at(-1)).toBe('done')
  })

  it('a client that hangs up, before its stream opens or in the middle of it, gives its place back', async () => {
    const c = await appWith({ maxConcurrentTurns: 2 })
    const a = fundedOrg(c)
    await c.app.listen({ port: 0, host: '127.0.0.1' })
    const port = (c.app.server.address() as { port: number }).port

    // One waits at the vendor (no response yet), the other has an open stream with a delta in it.
    const beforeOpening = openTurn(port, a, await newChat(c, a.auth), 'HOLD before the stream opens')
    await heldCalls(1)
    const midStream = openTurn(port, a, await newChat(c, a.auth), 'MIDWAY through the stream')
    const streaming = await midStream.response
    expect(streaming.statusCode).toBe(200)
    await new Promise((resolve) => streaming.once('data', resolve))
    await heldCalls(2)
    expectError(await postTurn(c, a.auth, await newChat(c, a.auth), ask('hello')), 503, 'unavailable')

    beforeOpening.req.destroy()
    midStream.req.destroy()
    // Both runs go on (a run outlives its connection), but their turns no longer hold a place:
    // two turns at once are served as soon as the server has seen both connections close.
    const probe = await newChat(c, a.auth)
    const probe2 = await newChat(c, a.auth)
    await vi.waitFor(
      async () => {
        const [one, two] = await Promise.all([postTurn(c, a.auth, probe, ask('probe')), postTurn(c, a.auth, probe2, ask('probe'))])
        expect([one.statusCode, two.statusCode]).toEqual([200, 200])
      },
      { timeout: 10_000, interval: 20 },
    )
    // Exactly none in flight: two held turns fit, a third does not.
    const third = heldTurn(c, a)
    const fourth = heldTurn(c, a)
    await heldCalls(4)
    expectError(await postTurn(c, a.auth, probe, ask('hello')), 503, 'unavailable')
    expect(c.store.runs.runningCustomerRunsOfOrg(a.orgId, 100)).toBe(4)
    gate.resolve()
    for (const res of await Promise.all([third, fourth])) expect(streamOf(res).events.at(-1)).toBe('done')
  })
})

describe('settings', () => {
  it('reads MAX_RUNNING_RUNS_PER_ORG and MAX_CONCURRENT_TURNS, with defaults of 64 and 1024', () => {
    expect(DEFAULT_MAX_RUNNING_RUNS_PER_ORG).toBe(64)
    expect(DEFAULT_MAX_CONCURRENT_TURNS).toBe(1024)
    expect(readSettings({})).toMatchObject({ maxRunningRunsPerOrg: 64, maxConcurrentTurns: 1024 })
    expect(readSettings({ MAX_RUNNING_RUNS_PER_ORG: '5', MAX_CONCURRENT_TURNS: '10' })).toMatchObject({ maxRunningRunsPerOrg: 5, maxConcurrentTurns: 10 })
    for (const bad of ['0', '-1', '1.5', 'many']) {
      expect(() => readSettings({ MAX_RUNNING_RUNS_PER_ORG: bad })).toThrow(/MAX_RUNNING_RUNS_PER_ORG/)
      expect(() => readSettings({ MAX_CONCURRENT_TURNS: bad })).toThrow(/MAX_CONCURRENT_TURNS/)
    }
  })
})
