import { randomUUID } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { runAdmin, startServer, type ServerProcess } from './server-process.ts'
import { postTurn, request, type TurnAnswer } from './turn-client.ts'
import { machineCeiling } from '../helpers/machine-timeouts.ts'

/**
 * What only the real server process shows of streamed turns: after every kind of turn (each sandbox
 * magic line, a retry, tool calls, a dropped connection, a cancel, a refusal for want of balance,
 * an attachment, another organisation's requests), the process wrote nothing to stderr: no
 * warnings, no unhandled errors. What each turn answers is asserted in process, over a loopback
 * socket: test/http/turns-over-socket.test.ts (idempotency and 402 in
 * test/http/routes/turn-admission.test.ts and test/actors/admission.test.ts).
 */

/** A 3×2 RGB PNG. */
const PNG_3X2_BASE64 = 'iVBORw0KGgoAAAANSUhEUgAAAAMAAAACCAIAAAASFvFNAAAAG0lEQVR4nAXBAQEAAACCIDe5qbHOCgCHIeSyPCtwBd1HI03nAAAAAElFTkSuQmCC'
const MODEL = 'sandbox/echo'
const tools = [{ name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }]
const prompt = (text: string, extra: Record<string, unknown> = {}) => ({ type: 'prompt', text, ...extra })

describe('streamed turns against the real server process', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-e2e-turns-'))
  let server: ServerProcess | undefined
  let devKey = ''
  /** An organisation made with the admin CLI while the server runs, with a key and no balance. */
  let poor = { id: '', key: '' }

  const api = (path: string, init: { method?: string; key?: string; body?: unknown } = {}) => request(server!.url, path, { key: devKey, ...init })

  const newChat = async (key = devKey): Promise<string> => {
    const res = await api('/api/v1/chats', { method: 'POST', key, body: {} })
    expect(res.status, res.text).toBe(201)
    return res.json().id
  }

  const send = (chatId: string, body: Record<string, unknown>, key = devKey): Promise<TurnAnswer> => postTurn(server!.url, key, chatId, { model: MODEL, ...body }, 30_000)

  /** A turn that must stream to its end; its last frame. */
  const streamed = async (chatId: string, body: Record<string, unknown>, key = devKey) => {
    const answer = await send(chatId, body, key)
    if (!answer.ok) throw new Error(`expected a stream, got HTTP ${answer.status}: ${answer.text}`)
    expect(await answer.closed).toBe('end')
    return answer.frames.at(-1)!
  }

  /** A turn that must be refused with `status`; its error. */
  const refused = async (chatId: string, body: Record<string, unknown>, status: number, key = devKey) => {
    const answer = await send(chatId, body, key)
    if (answer.ok) throw new Error(`expected HTTP ${status}, got a stream`)
    expect(answer.status, answer.text).toBe(status)
    return answer.json().error
  }

  beforeAll(async () => {
    server = await startServer({ env: { DATA_DIR: dataDir, NODE_ID: 'e2e-turns' }, timeoutMs: 25_000 })
    devKey = readFileSync(join(dataDir, 'dev-api-key.txt'), 'utf8').trim()
    const org = await runAdmin(dataDir, ['org', 'create', '--name', 'Poor E2E'])
    expect(org.code, org.stderr).toBe(0)
    const orgId = JSON.parse(org.stdout).id as string
    const key = await runAdmin(dataDir, ['key', 'create', '--org', orgId])
    expect(key.code, key.stderr).toBe(0)
    poor = { id: orgId, key: JSON.parse(key.stdout).key }
  }, machineCeiling(60_000))

  afterAll(async () => {
    await server?.stop()
    rmSync(dataDir, { recursive: true, force: true })
  })

  test('after every kind of turn, the server process wrote nothing to stderr: no warnings, no unhandled errors', async () => {
    // Every sandbox magic line, max_tokens lowered and cut, frames read while a slow run is live.
    for (const body of [
      { input: [prompt('hello over the wire')] },
      { input: [prompt('hi')], max_tokens: 10_000_000 },
      { input: [prompt('/slow 60\n/long 12')] },
      { input: [prompt('/think weighing the options\nwhat now?')] },
      { input: [prompt('/long 200')] },
      { input: [prompt('/long 200')], max_tokens: 20 },
      { input: [prompt('/refuse\nplease do the bad thing')] },
      { input: [prompt('/fail-mid\none two three four five six seven')] },
    ]) {
      await streamed(await newChat(), body)
    }
    expect((await refused(await newChat(), { input: [prompt('/fail\nthis will not work')] }, 502)).code).toBe('upstream_error')

    // A failed run retried, then retried again (409); an idempotency key reused (409).
    const flaky = await newChat()
    const failedId = (await refused(flaky, { input: [prompt('/flaky\nsecond time lucky')], idempotency_key: `flaky-${flaky}` }, 502)).details.run_id
    expect((await streamed(flaky, { input: [], retry_of: failedId })).event).toBe('done')
    expect((await refused(flaky, { input: [], retry_of: failedId }, 409)).code).toBe('retry_not_allowed')
    expect((await refused(await newChat(), { input: [prompt('again')], idempotency_key: `flaky-${flaky}` }, 409)).code).toBe('idempotency_key_reused')

    // A tool call answered, answered again (422), and one abandoned.
    const tool = await newChat()
    const call = await streamed(tool, { input: [prompt('/tool get_weather {"city":"Oslo"}')], tools })
    const toolUseId = call.data.pending_tool_calls[0].tool_use_id as string
    const result = { type: 'tool_result', tool_use_id: toolUseId, tool_name: 'get_weather', text: 'sunny, 21 degrees' }
    expect((await streamed(tool, { input: [result], tools })).event).toBe('done')
    expect((await refused(tool, { input: [result] }, 422)).code).toBe('unknown_tool_use_id')
    await streamed(tool, { input: [prompt('/tool get_weather {"city":"Bergen"}')], tools })
    expect((await streamed(tool, { input: [prompt('never mind')] })).event).toBe('done')

    // A connection dropped after the first delta; the run goes on to its end.
    const dropped = await send(await newChat(), { input: [prompt('/slow 200\n/long 10')] })
    if (!dropped.ok) throw new Error(`expected a stream, got HTTP ${dropped.status}`)
    await dropped.frame('the first delta', (f) => f.event === 'delta')
    const droppedRun = dropped.frames[0]!.data.run_id as string
    dropped.abort()
    expect(await dropped.closed).toBe('aborted')

    // A running run cancelled, then cancelled again.
    const cancelChat = await newChat()
    const cancelled = await send(cancelChat, { input: [prompt('/slow 200\n/long 40')] })
    if (!cancelled.ok) throw new Error(`expected a stream, got HTTP ${cancelled.status}`)
    await cancelled.frame('the first delta', (f) => f.event === 'delta')
    const cancelledRun = cancelled.frames[0]!.data.run_id as string
    expect((await api(`/api/v1/runs/${cancelledRun}/cancel`, { method: 'POST' })).status).toBe(200)
    expect(await cancelled.closed).toBe('end')
    expect(cancelled.frames.at(-1)!.data.code).toBe('cancelled')
    expect((await api(`/api/v1/runs/${cancelledRun}/cancel`, { method: 'POST' })).status).toBe(200)
    expect((await streamed(cancelChat, { input: [prompt('after the cancel')] })).event).toBe('done')

    // An organisation with no balance: 402.
    expect((await refused(await newChat(poor.key), { input: [prompt('can I afford this?')] }, 402, poor.key)).code).toBe('insufficient_balance')

    // An attachment, read back stubbed, whole and without media.
    const pictured = await newChat()
    await streamed(pictured, { input: [prompt('what is in this picture?', { media: [{ mime: 'image/png', data_base64: PNG_3X2_BASE64, filename: 'dots.png' }] })] })
    for (const query of ['', '?include=stubs', '?include=full', '?include=none']) expect((await api(`/api/v1/chats/${pictured}/history${query}`)).status).toBe(200)

    // Another organisation's requests for a live run and its chat: 404, and the run finishes.
    const owned = await newChat()
    const live = await send(owned, { input: [prompt('/slow 100\n/long 8')] })
    if (!live.ok) throw new Error(`expected a stream, got HTTP ${live.status}`)
    await live.frame('the first delta', (f) => f.event === 'delta')
    const liveRun = live.frames[0]!.data.run_id as string
    for (const chat of [owned, randomUUID()]) expect((await send(chat, { input: [prompt('let me in')] }, poor.key)).ok).toBe(false)
    for (const [path, method] of [
      [`/api/v1/chats/${owned}/history`, 'GET'],
      [`/api/v1/runs/${liveRun}`, 'GET'],
      [`/api/v1/runs/${liveRun}/cancel`, 'POST'],
    ] as const) {
      expect((await api(path, { method, key: poor.key })).status).toBe(404)
    }
    expect(await live.closed).toBe('end')

    // The dropped run has ended by now (it was started well before the ones above ended).
    const droppedStatus = async () => (await api(`/api/v1/runs/${droppedRun}`)).json().status as string
    for (let i = 0; i < 200 && (await droppedStatus()) === 'running'; i++) await new Promise((resolve) => setTimeout(resolve, 100))
    expect(await droppedStatus()).toBe('succeeded')

    expect(server!.stderr()).toBe('')
  })
})
