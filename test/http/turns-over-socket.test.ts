import { randomUUID } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest'
import { bootstrapDevOrganisation } from '../../src/store/bootstrap-dev-organisation.ts'
import { deltaText, moneyUnits, postTurn, request, type HttpAnswer, type SseFrame, type TurnStream } from '../e2e/turn-client.ts'
import { createTestApp, type TestContext } from '../helpers/test-app.ts'
import { sandboxCatalogue } from '../helpers/turns.ts'

/**
 * Streamed turns over real HTTP against an app in process listening on a loopback port (moved from
 * test/e2e/turns.test.ts: none of it needs a server process; a socket, for frames read as they
 * arrive and a connection dropped mid-stream) (spec §4.2, §6; decisions §3, §4, §6): every sandbox
 * magic line, the frame order, frames arriving as they are produced, a dropped connection, retry,
 * cancel, tool calls, attachments and other organisations. Slow prompts only hold runs open;
 * nothing asserts on durations. Idempotency and 402 are asserted in test/http/routes/turn-admission.test.ts
 * and test/actors/admission.test.ts; the server process's stderr after such turns, in test/e2e/turns.test.ts.
 */

/** A 3×2 RGB PNG, built for this test (width and height differ, so a swap would show). */
const PNG_3X2_BASE64 = 'iVBORw0KGgoAAAANSUhEUgAAAAMAAAACCAIAAAASFvFNAAAAG0lEQVR4nAXBAQEAAACCIDe5qbHOCgCHIeSyPCtwBd1HI03nAAAAAElFTkSuQmCC'
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const MODEL = 'sandbox/echo'
const DELTA_KIND: Record<string, string> = { text: 'text', reasoning: 'reasoning', refusal: 'refusal', tool_call: 'tool_input' }

/**
 * Spec §6 as a grammar: `run`, `config_warnings`, `translation_warnings`, then blocks
 * (block_start, its deltas, block_stop), then exactly one `done` or `error`, and nothing after.
 * Only an `error` may cut a block short.
 */
function expectWellFormed(frames: SseFrame[]): void {
  const events = frames.map((f) => f.event)
  expect(events.slice(0, 3), events.join(',')).toEqual(['run', 'config_warnings', 'translation_warnings'])
  const terminal = events.at(-1)!
  expect(['done', 'error'], events.join(',')).toContain(terminal)
  let open: string | null = null
  for (const f of frames.slice(3, -1)) {
    if (f.event === 'block_start') {
      expect(open, events.join(',')).toBeNull()
      open = f.data.kind
    } else if (f.event === 'delta') {
      expect(open, events.join(',')).not.toBeNull()
      expect(f.data.kind).toBe(DELTA_KIND[open!])
      expect(typeof f.data.text).toBe('string')
    } else if (f.event === 'block_stop') {
      expect(open, events.join(',')).not.toBeNull()
      open = null
    } else {
      throw new Error(`unexpected ${f.event} frame inside the stream: ${events.join(',')}`)
    }
  }
  if (terminal === 'done') expect(open).toBeNull()
  expect(frames[0]!.data).toMatchObject({ run_id: expect.stringMatching(UUID), chat_id: expect.stringMatching(UUID) })
  expect(Array.isArray(frames[0]!.data.closed_tool_calls)).toBe(true)
  expect(Array.isArray(frames[1]!.data.warnings)).toBe(true)
  expect(Array.isArray(frames[2]!.data.warnings)).toBe(true)
}

type Finished = {
  frames: SseFrame[]
  events: string[]
  runId: string
  headers: Headers
  of: (event: string) => SseFrame[]
  last: SseFrame
}

const finishedOf = (stream: TurnStream): Finished => ({
  frames: stream.frames,
  events: stream.frames.map((f) => f.event),
  runId: stream.frames[0]!.data.run_id,
  headers: stream.headers,
  of: (event) => stream.frames.filter((f) => f.event === event),
  last: stream.frames.at(-1)!,
})

describe('streamed turns over real HTTP against an app listening on a loopback port', () => {
  let ctx: TestContext
  let server: { url: string } | undefined
  let devKey = ''
  /** An organisation with a key and no balance. */
  let poor = { id: '', key: '' }

  const api = (path: string, init: { method?: string; key?: string; body?: unknown } = {}) =>
    request(server!.url, path, { key: devKey, ...init })

  const newChat = async (key = devKey): Promise<string> => {
    const res = await api('/api/v1/chats', { method: 'POST', key, body: {} })
    expect(res.status, res.text).toBe(201)
    return res.json().id
  }

  /** Opens a turn that must answer 200 text/event-stream. */
  const open = async (chatId: string, body: Record<string, unknown>, key = devKey): Promise<TurnStream> => {
    const answer = await postTurn(server!.url, key, chatId, { model: MODEL, ...body })
    if (!answer.ok) throw new Error(`expected a stream, got HTTP ${answer.status}: ${answer.text}`)
    expect(answer.headers.get('content-type')).toMatch(/^text\/event-stream/)
    return answer
  }

  /** A whole turn: the stream must be ended by the server and well formed. */
  const turn = async (chatId: string, body: Record<string, unknown>, key = devKey): Promise<Finished> => {
    const stream = await open(chatId, body, key)
    expect(await stream.closed).toBe('end')
    expectWellFormed(stream.frames)
    return finishedOf(stream)
  }

  /** A turn that must be refused before the first byte. */
  const refused = async (chatId: string, body: Record<string, unknown>, key = devKey): Promise<HttpAnswer> => {
    const answer = await postTurn(server!.url, key, chatId, { model: MODEL, ...body })
    if (answer.ok) {
      answer.abort()
      throw new Error(`expected an HTTP error, got a stream: ${answer.frames.map((f) => f.event).join(',')}`)
    }
    expect(answer.headers.get('content-type')).toMatch(/^application\/json/)
    return answer
  }

  const prompt = (text: string, extra: Record<string, unknown> = {}) => ({ type: 'prompt', text, ...extra })

  const getRun = async (runId: string) => {
    const res = await api(`/api/v1/runs/${runId}`)
    expect(res.status, res.text).toBe(200)
    return res.json()
  }

  const history = async (chatId: string, query = '') => {
    const res = await api(`/api/v1/chats/${chatId}/history${query}`)
    expect(res.status, res.text).toBe(200)
    return res.json() as { data: any[]; first_ordinal: number | null; last_ordinal: number | null; has_more: boolean }
  }
  const bodies = async (chatId: string) => (await history(chatId)).data.map((p) => p.part)

  /** The balance entries of a run, straight from the database. */
  const entriesOf = (runId: string) =>
    ctx.store.db.prepare('SELECT entry_type, amount_units FROM balance_entries WHERE run_id = ?').safeIntegers(true).all(runId) as {
      entry_type: string
      amount_units: bigint
    }[]

  /** Settled once: exactly one `usage` entry, debiting what the run says it cost. */
  const expectChargedOnce = (run: { id: string; cost: string | null }) => {
    const entries = entriesOf(run.id)
    expect(entries).toHaveLength(1)
    expect(entries[0]!.entry_type).toBe('usage')
    expect(run.cost).not.toBeNull()
    expect(-entries[0]!.amount_units).toBe(moneyUnits(run.cost!))
  }

  beforeAll(async () => {
    ctx = await createTestApp({ catalogue: sandboxCatalogue() })
    devKey = bootstrapDevOrganisation(ctx.store)!.key
    const org = ctx.org('poor')
    poor = { id: org.orgId, key: org.key }
    await ctx.app.listen({ port: 0, host: '127.0.0.1' })
    server = { url: `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}` }
  })

  afterAll(async () => {
    await ctx?.close()
  })

  describe('frames', () => {
    test('a plain prompt: text/event-stream with run, config_warnings, translation_warnings, one text block, done; run and history agree', async () => {
      const chatId = await newChat()
      const t = await turn(chatId, { input: [prompt('hello over the wire')] })
      expect(t.events.slice(3)).toEqual(['block_start', ...Array(t.of('delta').length).fill('delta'), 'block_stop', 'done'])
      expect(t.of('delta').length).toBeGreaterThan(1)
      expect(t.frames[0]!.data).toEqual({ chat_id: chatId, run_id: t.runId, closed_tool_calls: [] })
      expect(t.of('block_start')[0]!.data).toEqual({ kind: 'text' })
      expect(deltaText(t.frames, 'text')).toBe('echo: hello over the wire')

      const done = t.last.data
      expect(done).toMatchObject({ stop_reason: 'end_turn', cost_currency: 'USD', pending_tool_calls: [], compaction: null })
      expect(done.usage.input_tokens).toBeGreaterThan(0)
      expect(done.usage.output_tokens).toBeGreaterThan(0)

      const run = await getRun(t.runId)
      expect(run).toMatchObject({
        id: t.runId,
        chat_id: chatId,
        model: MODEL,
        origin: 'customer',
        status: 'succeeded',
        is_live: false,
        error: null,
        cost: done.cost,
        usage: done.usage,
      })
      expect(run.completed_at).not.toBeNull()
      expect(run.settled_at).not.toBeNull()
      expectChargedOnce(run)
      expect(await bodies(chatId)).toEqual([
        { type: 'prompt', text: 'hello over the wire' },
        { type: 'message', text: 'echo: hello over the wire' },
      ])
    })

    test('translation_warnings carries warnings before any block (max_tokens above the model ceiling is lowered)', async () => {
      const chatId = await newChat()
      const t = await turn(chatId, { input: [prompt('hi')], max_tokens: 10_000_000 })
      expect(t.frames[2]!.data.warnings).toContainEqual(expect.objectContaining({ code: 'max_tokens_lowered' }))
      expect(t.last.event).toBe('done')
    })

    test('/slow MS: frames arrive as they are produced; the first delta is read while the run is still live', async () => {
      const chatId = await newChat()
      const stream = await open(chatId, { input: [prompt('/slow 60\n/long 12')] })
      const first = await stream.frame('the first delta', (f) => f.event === 'delta')
      // The stream is still open, the run is running on a live lease, and nothing terminal has come.
      expect(stream.isClosed()).toBe(false)
      expect(stream.frames.some((f) => f.event === 'done' || f.event === 'error')).toBe(false)
      const runId = stream.frames[0]!.data.run_id
      expect(await getRun(runId)).toMatchObject({ status: 'running', is_live: true, cost: null, completed_at: null })

      expect(await stream.closed).toBe('end')
      expectWellFormed(stream.frames)
      const t = finishedOf(stream)
      const done = t.last
      expect(done.event).toBe('done')
      // Arrival order: the first delta was read from the network before the read that ended the stream.
      expect(first.read).toBeLessThan(done.read)
      expect(deltaText(t.frames, 'text').split(' ')).toHaveLength(12)
    })
  })

  describe('sandbox magic lines', () => {
    test('/think TEXT: a reasoning block first, then the echo of the plain text', async () => {
      const chatId = await newChat()
      const t = await turn(chatId, { input: [prompt('/think weighing the options\nwhat now?')] })
      expect(t.of('block_start').map((f) => f.data.kind)).toEqual(['reasoning', 'text'])
      expect(deltaText(t.frames, 'reasoning')).toBe('weighing the options')
      expect(deltaText(t.frames, 'text')).toBe('echo: what now?')
      expect(t.last.data.stop_reason).toBe('end_turn')
      expect(t.last.data.usage.reasoning_tokens).toBeGreaterThan(0)
      expect((await bodies(chatId)).slice(1)).toEqual([
        { type: 'reasoning', text: 'weighing the options' },
        { type: 'message', text: 'echo: what now?' },
      ])
    })

    test('/long N: N words, end_turn; with a small max_tokens it stops early with stop reason max_tokens', async () => {
      const full = await turn(await newChat(), { input: [prompt('/long 200')] })
      const fullText = deltaText(full.frames, 'text')
      expect(fullText.split(' ')).toHaveLength(200)
      expect(full.last.data.stop_reason).toBe('end_turn')

      const chatId = await newChat()
      const cut = await turn(chatId, { input: [prompt('/long 200')], max_tokens: 20 })
      const cutText = deltaText(cut.frames, 'text')
      expect(cut.last.data.stop_reason).toBe('max_tokens')
      expect(cutText.length).toBeGreaterThan(0)
      expect(cutText.split(' ').length).toBeLessThan(200)
      // Deterministic: the same words, cut short, and no more output than was allowed.
      expect(fullText.startsWith(cutText)).toBe(true)
      expect(cut.last.data.usage.output_tokens).toBeLessThanOrEqual(20)
      const run = await getRun(cut.runId)
      expect(run.manifest.max_tokens).toBe(20)
      expect((await bodies(chatId)).at(-1)).toEqual({ type: 'message', text: cutText })
    })

    test('/refuse: a refusal block, stop reason refusal, stored as a message with the refusal', async () => {
      const chatId = await newChat()
      const t = await turn(chatId, { input: [prompt('/refuse\nplease do the bad thing')] })
      expect(t.of('block_start').map((f) => f.data.kind)).toEqual(['refusal'])
      const refusal = deltaText(t.frames, 'refusal')
      expect(refusal.length).toBeGreaterThan(0)
      expect(t.last.data.stop_reason).toBe('refusal')
      expect((await bodies(chatId)).at(-1)).toEqual({ type: 'message', text: '', refusal })
    })

    test('/fail: HTTP 502 upstream_error naming the failed run; the run is failed, billed nothing; the input stays', async () => {
      const chatId = await newChat()
      const res = await refused(chatId, { input: [prompt('/fail\nthis will not work')] })
      expect(res.status).toBe(502)
      const error = res.json().error
      expect(error.code).toBe('upstream_error')
      expect(error.details.run_id).toMatch(UUID)
      const run = await getRun(error.details.run_id)
      expect(run).toMatchObject({ chat_id: chatId, status: 'failed', is_live: false })
      expect(run.error).toEqual(expect.any(String))
      // decisions 007: a provider failure before its stream opened bills nothing.
      expect(moneyUnits(run.cost)).toBe(0n)
      expect(await bodies(chatId)).toEqual([{ type: 'prompt', text: '/fail\nthis will not work' }])
    })

    test('/flaky: 502 first; retry_of that run (input []) succeeds without new input; a second retry is 409', async () => {
      const chatId = await newChat()
      const first = await refused(chatId, { input: [prompt('/flaky\nsecond time lucky')], idempotency_key: `flaky-${chatId}` })
      expect(first.status).toBe(502)
      const failedId = first.json().error.details.run_id
      expect((await getRun(failedId)).status).toBe('failed')

      const retry = await turn(chatId, { input: [], retry_of: failedId, idempotency_key: `flaky-retry-${chatId}` })
      expect(retry.runId).not.toBe(failedId)
      expect(retry.last.event).toBe('done')
      expect(deltaText(retry.frames, 'text')).toBe('echo: second time lucky')
      const run = await getRun(retry.runId)
      expect(run).toMatchObject({ status: 'succeeded', cost: retry.last.data.cost })
      expect(run.manifest.retry_of).toBe(failedId)
      expectChargedOnce(run)
      // The input was not appended again.
      expect(await bodies(chatId)).toEqual([
        { type: 'prompt', text: '/flaky\nsecond time lucky' },
        { type: 'message', text: 'echo: second time lucky' },
      ])

      // The failed run is no longer the latest failed customer run: retrying it again is refused.
      const again = await refused(chatId, { input: [], retry_of: failedId, idempotency_key: `flaky-again-${chatId}` })
      expect(again.status).toBe(409)
      expect(again.json().error.code).toBe('retry_not_allowed')
      expect(await bodies(chatId)).toHaveLength(2)
    })

    test('/fail-mid: some text, then an SSE error naming the run; the run is failed and its partial text is in history', async () => {
      const chatId = await newChat()
      const t = await turn(chatId, { input: [prompt('/fail-mid\none two three four five six seven')] })
      expect(t.last.event).toBe('error')
      expect(t.last.data).toMatchObject({ code: 'upstream_error', details: { run_id: t.runId } })
      expect(t.last.data.message).toEqual(expect.any(String))
      const partial = deltaText(t.frames, 'text')
      expect(partial.length).toBeGreaterThan(0)
      expect('echo: one two three four five six seven'.startsWith(partial)).toBe(true)
      expect(partial).not.toBe('echo: one two three four five six seven')

      const run = await getRun(t.runId)
      expect(run).toMatchObject({ status: 'failed', is_live: false })
      expect(run.error).toEqual(expect.any(String))
      expectChargedOnce(run)
      expect(await bodies(chatId)).toEqual([
        { type: 'prompt', text: '/fail-mid\none two three four five six seven' },
        { type: 'message', text: partial },
      ])
    })
  })

  describe('tool calls', () => {
    const tools = [{ name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }]

    test('/tool NAME {json} → tool_result with its id → the echo of the result; closed_tool_calls lists it', async () => {
      const chatId = await newChat()
      const call = await turn(chatId, { input: [prompt('/tool get_weather {"city":"Oslo"}')], tools })
      expect(call.of('block_start').map((f) => f.data)).toEqual([
        { kind: 'tool_call', tool_name: 'get_weather', tool_use_id: expect.any(String) },
      ])
      const toolUseId = call.of('block_start')[0]!.data.tool_use_id as string
      expect(deltaText(call.frames, 'tool_input')).toBe('{"city":"Oslo"}')
      expect(call.last.data).toMatchObject({ stop_reason: 'tool_use', pending_tool_calls: [{ tool_name: 'get_weather', tool_use_id: toolUseId }] })

      const answer = await turn(chatId, {
        input: [{ type: 'tool_result', tool_use_id: toolUseId, tool_name: 'get_weather', text: 'sunny, 21 degrees' }],
        tools,
      })
      expect(answer.frames[0]!.data.closed_tool_calls).toEqual([toolUseId])
      expect(deltaText(answer.frames, 'text')).toBe('echo: sunny, 21 degrees')
      expect(answer.last.data).toMatchObject({ stop_reason: 'end_turn', pending_tool_calls: [] })

      expect(await bodies(chatId)).toEqual([
        { type: 'prompt', text: '/tool get_weather {"city":"Oslo"}' },
        { type: 'tool_call', arguments: '{"city":"Oslo"}', tool_name: 'get_weather', tool_use_id: toolUseId },
        { type: 'tool_result', text: 'sunny, 21 degrees', is_error: false, tool_name: 'get_weather', tool_use_id: toolUseId, trust: 'customer_data' },
        { type: 'message', text: 'echo: sunny, 21 degrees' },
      ])

      // The call is closed: answering it again is an unknown id, and nothing is written.
      const again = await refused(chatId, {
        input: [{ type: 'tool_result', tool_use_id: toolUseId, tool_name: 'get_weather', text: 'again' }],
      })
      expect(again.status).toBe(422)
      expect(again.json().error.code).toBe('unknown_tool_use_id')
      expect(await bodies(chatId)).toHaveLength(4)
    })

    test('a call the next prompt does not answer is closed with an abandoned tombstone, listed in closed_tool_calls', async () => {
      const chatId = await newChat()
      const call = await turn(chatId, { input: [prompt('/tool get_weather {"city":"Bergen"}')], tools })
      const toolUseId = call.last.data.pending_tool_calls[0].tool_use_id as string
      const next = await turn(chatId, { input: [prompt('never mind')] })
      expect(next.frames[0]!.data.closed_tool_calls).toEqual([toolUseId])
      const parts = await bodies(chatId)
      expect(parts.slice(2)).toEqual([
        { type: 'tool_result', text: '', is_error: true, tool_name: 'get_weather', tool_use_id: toolUseId, trust: 'trusted', tombstone_reason: 'abandoned' },
        { type: 'prompt', text: 'never mind' },
        { type: 'message', text: 'echo: never mind' },
      ])
    })
  })

  describe('runs', () => {
    test('disconnect and continue: dropping the connection after the first delta does not stop the run', async () => {
      const reference = await turn(await newChat(), { input: [prompt('/long 10')] })
      const expected = deltaText(reference.frames, 'text')
      expect(expected.split(' ')).toHaveLength(10)

      const chatId = await newChat()
      const stream = await open(chatId, { input: [prompt('/slow 200\n/long 10')] })
      await stream.frame('the first delta', (f) => f.event === 'delta')
      const runId = stream.frames[0]!.data.run_id as string
      stream.abort()
      expect(await stream.closed).toBe('aborted')
      expect(stream.frames.some((f) => f.event === 'done')).toBe(false)

      const run = await vi.waitFor(
        async () => {
          const r = await getRun(runId)
          if (r.status === 'running') throw new Error('waiting for the dropped run to succeed')
          return r
        },
        { timeout: 20_000, interval: 100 },
      )
      expect(run).toMatchObject({ status: 'succeeded', error: null, is_live: false })
      expect(run.usage.output_tokens).toBeGreaterThan(0)
      expect(await bodies(chatId)).toEqual([
        { type: 'prompt', text: '/slow 200\n/long 10' },
        { type: 'message', text: expected },
      ])
      expectChargedOnce(run)
    })

    test('cancel: the stream ends with error cancelled; the run is cancelled and settled, its partial output kept', async () => {
      const chatId = await newChat()
      const stream = await open(chatId, { input: [prompt('/slow 200\n/long 40')] })
      await stream.frame('the first delta', (f) => f.event === 'delta')
      const runId = stream.frames[0]!.data.run_id as string

      const cancel = await api(`/api/v1/runs/${runId}/cancel`, { method: 'POST' })
      expect(cancel.status, cancel.text).toBe(200)
      expect(cancel.json()).toMatchObject({ id: runId, status: 'cancelled', is_live: false })

      expect(await stream.closed).toBe('end')
      expectWellFormed(stream.frames)
      const t = finishedOf(stream)
      expect(t.last.event).toBe('error')
      expect(t.last.data).toMatchObject({ code: 'cancelled', details: { run_id: runId } })
      const partial = deltaText(t.frames, 'text')
      expect(partial.length).toBeGreaterThan(0)
      expect(partial.split(' ').length).toBeLessThan(40)

      const run = await getRun(runId)
      expect(run).toMatchObject({ status: 'cancelled', is_live: false })
      expect(run.settled_at).not.toBeNull()
      // The provider reported no usage before the cancel: null (spec §2.8), though what it streamed is billed.
      expect(run.usage).toBeNull()
      expect(moneyUnits(run.cost)).toBeGreaterThan(0n)
      expectChargedOnce(run)
      expect(await bodies(chatId)).toEqual([
        { type: 'prompt', text: '/slow 200\n/long 40' },
        { type: 'message', text: partial },
      ])

      // Cancelling a finished run returns it unchanged.
      const repeat = await api(`/api/v1/runs/${runId}/cancel`, { method: 'POST' })
      expect(repeat.status).toBe(200)
      expect(repeat.json()).toEqual(run)
      // And the chat takes the next turn.
      expect((await turn(chatId, { input: [prompt('after the cancel')] })).last.event).toBe('done')
    })
  })

  describe('attachments', () => {
    test('a PNG in a prompt: history include=stubs (no bytes, with width/height), full (the same bytes), none (no media)', async () => {
      const chatId = await newChat()
      const media = [{ mime: 'image/png', data_base64: PNG_3X2_BASE64, filename: 'dots.png' }]
      const t = await turn(chatId, { input: [prompt('what is in this picture?', { media })] })
      expect(t.last.event).toBe('done')
      expect(deltaText(t.frames, 'text')).toBe('echo: what is in this picture?')
      const byteLen = Buffer.from(PNG_3X2_BASE64, 'base64').length

      const stub = { media_id: expect.stringMatching(UUID), mime: 'image/png', byte_len: byteLen, filename: 'dots.png', width: 3, height: 2 }
      for (const query of ['', '?include=stubs']) {
        const [promptPart, message] = (await history(chatId, query)).data
        expect(promptPart.part).toEqual({ type: 'prompt', text: 'what is in this picture?' })
        expect(promptPart.media).toHaveLength(1)
        expect(promptPart.media[0]).toMatchObject(stub)
        expect(promptPart.media[0].data_base64 ?? null).toBeNull()
        expect(message.media ?? null).toBeNull()
      }

      const full = (await history(chatId, '?include=full')).data[0]
      expect(full.media[0]).toMatchObject(stub)
      expect(full.media[0].data_base64).toBe(PNG_3X2_BASE64)

      const none = (await history(chatId, '?include=none')).data
      expect(none).toHaveLength(2)
      for (const part of none) expect(part).not.toHaveProperty('media')
    })
  })

  describe('another organisation', () => {
    test('its chats and runs answer 404 with the body of a missing id, and its cancel does not touch the run', async () => {
      const chatId = await newChat()
      const stream = await open(chatId, { input: [prompt('/slow 100\n/long 8')] })
      await stream.frame('the first delta', (f) => f.event === 'delta')
      const runId = stream.frames[0]!.data.run_id as string
      const missing = randomUUID()

      const same = (foreign: HttpAnswer, absent: HttpAnswer, foreignId: string) => {
        expect(foreign.status).toBe(404)
        expect(absent.status).toBe(404)
        expect(foreign.json().error.code).toBe('not_found')
        expect(foreign.headers.get('content-type')).toBe(absent.headers.get('content-type'))
        // The message may name the id: the same body, for the same id.
        expect(foreign.text).toBe(absent.text.replaceAll(missing, foreignId))
      }

      const turnBody = { model: MODEL, input: [prompt('let me in')] }
      const asPoor = (path: string, method = 'GET', body?: unknown) => api(path, { method, key: poor.key, body })
      const foreignTurn = await postTurn(server!.url, poor.key, chatId, turnBody)
      const absentTurn = await postTurn(server!.url, poor.key, missing, turnBody)
      if (foreignTurn.ok || absentTurn.ok) throw new Error('a foreign turn opened a stream')
      same(foreignTurn, absentTurn, chatId)
      same(await asPoor(`/api/v1/chats/${chatId}/history`), await asPoor(`/api/v1/chats/${missing}/history`), chatId)
      same(await asPoor(`/api/v1/runs/${runId}`), await asPoor(`/api/v1/runs/${missing}`), runId)
      same(await asPoor(`/api/v1/runs/${runId}/cancel`, 'POST'), await asPoor(`/api/v1/runs/${missing}/cancel`, 'POST'), runId)

      // The owner's run went on untouched and finished.
      expect(await stream.closed).toBe('end')
      expect(stream.frames.at(-1)!.event).toBe('done')
      expect((await getRun(runId)).status).toBe('succeeded')
      expect(await bodies(chatId)).toHaveLength(2)
    })
  })
})
