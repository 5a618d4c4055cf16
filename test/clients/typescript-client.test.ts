import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import {
  attachment,
  collectTurn,
  createParleyClient,
  ParleyApiError,
  TurnAlreadyAccepted,
  unwrap,
  type ParleyClient,
  type TurnEvent,
} from '../../clients/typescript/src/index.ts'
import { startServer, type ServerProcess } from '../e2e/server-process.ts'

/**
 * The typed client (clients/typescript) against the real server process over real HTTP: requests
 * through openapi-fetch with the bearer key, turns streamed as typed events, a tool round trip, an
 * attachment, retries with retry_of, and a turn whose answer was lost sent again with its key.
 */

/** A 3×2 RGB PNG (the one test/e2e/turns.test.ts sends). */
const PNG_3X2 = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAMAAAACCAIAAAASFvFNAAAAG0lEQVR4nAXBAQEAAACCIDe5qbHOCgCHIeSyPCtwBd1HI03nAAAAAElFTkSuQmCC', 'base64')
const MODEL = 'sandbox/echo'

describe('the TypeScript client against the real server', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-client-'))
  let server: ServerProcess | undefined
  let parley: ParleyClient
  let apiKey = ''

  const newChat = async () => unwrap(await parley.api.POST('/api/v1/chats', { body: { title: 'client test' } })).id
  const prompt = (text: string) => ({ type: 'prompt' as const, text })
  const eventsOf = async (turn: AsyncIterable<TurnEvent>) => {
    const events: TurnEvent[] = []
    for await (const event of turn) events.push(event)
    return events
  }
  const runOf = async (runId: string) => unwrap(await parley.api.GET('/api/v1/runs/{run_id}', { params: { path: { run_id: runId } } }))

  beforeAll(async () => {
    server = await startServer({ env: { DATA_DIR: dataDir, NODE_ID: 'client-e2e' }, timeoutMs: 25_000 })
    apiKey = readFileSync(join(dataDir, 'dev-api-key.txt'), 'utf8').trim()
    parley = createParleyClient({ baseUrl: server.url, apiKey })
  })

  afterAll(async () => {
    await server?.stop()
    rmSync(dataDir, { recursive: true, force: true })
  })

  test('JSON operations go through openapi-fetch with the key; a refusal is the error envelope', async () => {
    const chatId = await newChat()
    const chat = unwrap(await parley.api.GET('/api/v1/chats/{chat_id}', { params: { path: { chat_id: chatId } } }))
    expect(chat).toMatchObject({ id: chatId, title: 'client test' })

    const keyless = createParleyClient({ baseUrl: server!.url, apiKey: 'pk_not_a_key' })
    const refused = await keyless.api.GET('/api/v1/chats/{chat_id}', { params: { path: { chat_id: chatId } } })
    expect(refused.response.status).toBe(401)
    expect(() => unwrap(refused)).toThrow(expect.objectContaining({ status: 401, code: 'unauthorized' }))
  })

  test('a turn streams typed events in the order docs/guide/turn-stream.md states, and every turn carries an idempotency key', async () => {
    const chatId = await newChat()
    const turn = await parley.turns.submit(chatId, { model: MODEL, input: [prompt('/think first\nhello client')] })
    expect(turn.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/)
    const events = await eventsOf(turn)
    const names = events.map((e) => e.event)
    expect(names.slice(0, 3)).toEqual(['run', 'config_warnings', 'translation_warnings'])
    expect(names.at(-1)).toBe('done')
    const run = events[0]!
    if (run.event !== 'run') throw new Error('the first event is not run')
    expect(run.data.chat_id).toBe(chatId)

    // The key was sent: the same key again is refused naming this run (docs/guide/runs.md).
    const again = parley.turns.submit(chatId, { model: MODEL, input: [prompt('hello client')], idempotency_key: turn.idempotencyKey })
    await expect(again).rejects.toMatchObject({ status: 409, code: 'idempotency_key_reused', runId: run.data.run_id })
  })

  test('a tool round trip: the model calls a tool, the client answers it with a tool_result', async () => {
    const chatId = await newChat()
    const call = await collectTurn(await parley.turns.submit(chatId, { model: MODEL, input: [prompt('/tool lookup {"order":42}')] }))
    expect(call.done.stop_reason).toBe('tool_use')
    expect(call.blocks).toEqual([{ kind: 'tool_call', tool_name: 'lookup', tool_use_id: expect.any(String), input: { order: 42 } }])
    const [pending] = call.done.pending_tool_calls
    expect(pending).toEqual({ tool_name: 'lookup', tool_use_id: (call.blocks[0] as { tool_use_id: string }).tool_use_id })

    const answer = await collectTurn(
      await parley.turns.submit(chatId, {
        model: MODEL,
        input: [{ type: 'tool_result', tool_use_id: pending!.tool_use_id, tool_name: pending!.tool_name, text: 'shipped in parcel 1000' }],
      }),
    )
    expect(answer.closedToolCalls).toEqual([pending!.tool_use_id])
    expect(answer.done.stop_reason).toBe('end_turn')
    expect(answer.blocks).toEqual([{ kind: 'text', text: 'echo: shipped in parcel 1000' }])
    expect((await runOf(answer.runId)).status).toBe('succeeded')
  })

  test('answer: a turn with stream: false holds the blocks the same turn streams, and its done', async () => {
    const input = [prompt('/think first\n/tool lookup {"order":42}\nhello client')]
    const streamed = await collectTurn(await parley.turns.submit(await newChat(), { model: MODEL, input }))
    const answered = await parley.turns.answer(await newChat(), { model: MODEL, input })
    expect(answered.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/)
    expect(answered.error).toBeNull()
    expect(answered.done?.stop_reason).toBe(streamed.done.stop_reason)
    const kinds = (blocks: { kind: string }[]) => blocks.map((b) => b.kind)
    expect(kinds(answered.blocks)).toEqual(kinds(streamed.blocks))
    expect(answered.blocks.filter((b) => b.kind !== 'tool_call').map((b) => b.text)).toEqual(streamed.blocks.flatMap((b) => ('text' in b ? [b.text] : [])))
    expect(JSON.parse(answered.blocks.find((b) => b.kind === 'tool_call')!.text)).toEqual({ order: 42 })
    await expect(parley.turns.answer(await newChat(), { model: 'no/such-model', input })).rejects.toMatchObject({ status: 422 })
  })

  test('an attachment: a PNG reaches the model and is stored with its size and dimensions', async () => {
    const chatId = await newChat()
    const turn = await collectTurn(
      await parley.turns.submit(chatId, {
        model: MODEL,
        input: [{ type: 'prompt', text: '/context\nwhat is in this picture?', media: [attachment(PNG_3X2, 'image/png', 'dots.png')] }],
      }),
    )
    // The sandbox's /context answer shows what it received, attachment bytes replaced by MIME type and size.
    const context = turn.blocks.map((b) => ('text' in b ? b.text : '')).join('')
    expect(context).toContain('image/png')
    expect(context).toContain(String(PNG_3X2.length))

    const history = unwrap(
      await parley.api.GET('/api/v1/chats/{chat_id}/history', { params: { path: { chat_id: chatId }, query: { include: 'full' } } }),
    )
    const stored = history.data[0]!.media?.[0]
    expect(stored).toMatchObject({ mime: 'image/png', byte_len: PNG_3X2.length, filename: 'dots.png', width: 3, height: 2 })
    expect(stored?.data_base64).toBe(PNG_3X2.toString('base64'))
  })

  test('a retry: /fail answers 502 naming the run, retry_of sends no input and a new key, and /flaky then succeeds', async () => {
    const chatId = await newChat()
    const failing = parley.turns.submit(chatId, { model: MODEL, input: [prompt('/fail')] })
    const failure = await failing.catch((error: unknown) => error)
    expect(failure).toBeInstanceOf(ParleyApiError)
    const failed = failure as ParleyApiError
    expect(failed).toMatchObject({ status: 502, code: 'upstream_error', runId: expect.any(String) })
    expect((await runOf(failed.runId!)).status).toBe('failed')

    // /fail fails on every attempt: the retry is a run of its own, failed too, and named in turn.
    const retried = await parley.turns.retry(chatId, { model: MODEL, retry_of: failed.runId! }).catch((error: unknown) => error)
    expect(retried).toMatchObject({ status: 502, code: 'upstream_error' })
    expect((retried as ParleyApiError).runId).not.toBe(failed.runId)

    const flakyChat = await newChat()
    const flaky = (await parley.turns.submit(flakyChat, { model: MODEL, input: [prompt('/flaky\nsecond time lucky')] }).catch((e: unknown) => e)) as ParleyApiError
    expect(flaky).toMatchObject({ status: 502, runId: expect.any(String) })
    const retry = await parley.turns.retry(flakyChat, { model: MODEL, retry_of: flaky.runId! })
    expect(retry.idempotencyKey).not.toBeNull()
    const done = await collectTurn(retry)
    expect(done.done.stop_reason).toBe('end_turn')
    expect(done.blocks.at(-1)).toEqual({ kind: 'text', text: expect.stringContaining('second time lucky') })
    expect((await runOf(done.runId)).status).toBe('succeeded')

    // The retry wrote no input: the chat holds the one prompt, the failed run's output and the answer.
    const history = unwrap(await parley.api.GET('/api/v1/chats/{chat_id}/history', { params: { path: { chat_id: flakyChat } } }))
    expect(history.data.filter((p) => p.part.type === 'prompt')).toHaveLength(1)
  })

  test('an error event after the stream opened is thrown by collectTurn with the run named', async () => {
    const chatId = await newChat()
    const turn = await parley.turns.submit(chatId, { model: MODEL, input: [prompt('/fail-mid')] })
    const error = (await collectTurn(turn).catch((e: unknown) => e)) as ParleyApiError
    expect(error).toBeInstanceOf(ParleyApiError)
    expect(error.status).toBeNull()
    expect(error.runId).toEqual(expect.any(String))
    expect((await runOf(error.runId!)).status).toBe('failed')
  })

  test('a turn that never reached the server is sent again with the same key and streams as usual', async () => {
    const chatId = await newChat()
    const keys: unknown[] = []
    const flaky = createParleyClient({
      baseUrl: server!.url,
      apiKey,
      fetch: async (request) => {
        if (request.method === 'POST' && request.url.endsWith('/responses')) {
          keys.push((await request.clone().json()).idempotency_key)
          if (keys.length === 1) throw new TypeError('fetch failed')
        }
        return fetch(request)
      },
    })
    const turn = await collectTurn(await flaky.turns.submit(chatId, { model: MODEL, input: [prompt('only once')] }))
    expect(turn.blocks).toEqual([{ kind: 'text', text: 'echo: only once' }])
    expect(keys).toHaveLength(2)
    expect(keys[1]).toBe(keys[0])
  })

  test('a turn whose answer was lost is sent again with the same key: the client waits out the run, then reports the run the first send started', async () => {
    const chatId = await newChat()
    let sent = 0
    let runReads = 0
    const keys: unknown[] = []
    // The first turn request reaches the server and is accepted, but its answer never reaches the caller.
    const lossy = createParleyClient({
      baseUrl: server!.url,
      apiKey,
      fetch: async (request) => {
        const isTurn = request.method === 'POST' && request.url.endsWith('/responses')
        if (isTurn) keys.push((await request.clone().json()).idempotency_key)
        if (request.method === 'GET' && request.url.includes('/api/v1/runs/')) runReads++
        const response = await fetch(request)
        if (isTurn && sent++ === 0) {
          await response.body?.cancel()
          throw new TypeError('fetch failed')
        }
        return response
      },
    })
    const outcome = await lossy.turns.submit(chatId, { model: MODEL, input: [prompt('/slow 150\n/long 6')] }).catch((e: unknown) => e)
    expect(outcome).toBeInstanceOf(TurnAlreadyAccepted)
    const accepted = outcome as TurnAlreadyAccepted
    expect(accepted.code).toBe('idempotency_key_reused')
    // Sent three times with one key: lost; refused run_in_progress (the run streams for about a
    // second), after which the client read the run until it ended; then idempotency_key_reused.
    expect(keys).toHaveLength(3)
    expect(new Set(keys).size).toBe(1)
    expect(runReads).toBeGreaterThan(0)

    const run = await runOf(accepted.runId)
    expect(run).toMatchObject({ chat_id: chatId, status: 'succeeded' })
    const history = unwrap(await parley.api.GET('/api/v1/chats/{chat_id}/history', { params: { path: { chat_id: chatId } } }))
    expect(history.data.filter((p) => p.part.type === 'prompt')).toHaveLength(1)
  })
})
