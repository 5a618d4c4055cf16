import { request as httpRequest } from 'node:http'
import OpenAI from 'openai'
import { ResponsesWS } from 'openai/resources/responses/ws'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { WebSocket } from 'ws'
import { runIdOf } from '../../src/domain/openai/openai-ids.ts'
import { createTestApp, type TestContext, type TestOrg } from '../helpers/test-app.ts'
import { sandboxCatalogue } from '../helpers/turns.ts'

/**
 * The Responses API's WebSocket mode (issue 35) driven by the official `openai` SDK's WebSocket
 * client (`ResponsesWS`) against a real listening server, with only `baseURL` and `apiKey` changed.
 */
let ctx: TestContext
let org: TestOrg
let port: number
let baseURL: string

beforeAll(async () => {
  ctx = await createTestApp({ catalogue: sandboxCatalogue() })
  await ctx.app.listen({ port: 0, host: '127.0.0.1' })
  port = (ctx.app.server.address() as { port: number }).port
  baseURL = `http://127.0.0.1:${port}/v1`
  org = ctx.org()
  ctx.store.balance.add(org.orgId, 'topup', '10')
})
afterAll(async () => {
  await ctx?.close()
})

type ServerEvent = OpenAI.Responses.ResponsesServerEvent
type CreateParams = Omit<OpenAI.Responses.ResponsesClientEvent.ResponseCreate, 'type'>
type ErrorEvent = { type: 'error'; status: number; error: { type: string; code: string | null; message: string; param: string | null } }
/** What one `response.create` got back: every event in order, up to the terminal one or an error. */
type Turn = { events: ServerEvent[]; types: string[]; text: string; response: OpenAI.Responses.Response | null; error: ErrorEvent | null }

const TERMINAL = new Set(['response.completed', 'response.incomplete', 'response.failed', 'error'])

function turnOf(events: ServerEvent[]): Turn {
  const last = events.at(-1)!
  let text = ''
  for (const event of events) if (event.type === 'response.output_text.delta') text += event.delta
  return {
    events,
    types: events.map((e) => e.type),
    text,
    response: last.type === 'error' ? null : (last as { response: OpenAI.Responses.Response }).response,
    error: last.type === 'error' ? (last as unknown as ErrorEvent) : null,
  }
}

/** A socket opened by the SDK, as a client program would hold it. */
function openSocket(apiKey = org.key) {
  const socket = new ResponsesWS(new OpenAI({ baseURL, apiKey, maxRetries: 0 }))
  const errors: OpenAI.Responses.ResponsesServerEvent[] = []
  const sdkErrors: Error[] = []
  // The SDK reports every error event on 'error' too (and rejects unhandled without a listener).
  socket.on('error', (error) => {
    sdkErrors.push(error)
    if (error.error) errors.push(error.error)
  })
  const closed = new Promise<number>((resolve) => socket.on('close', (code) => resolve(code)))
  /** The events up to the next terminal event or error, from now on. */
  const nextTurn = () =>
    new Promise<Turn>((resolve) => {
      const events: ServerEvent[] = []
      const onEvent = (event: ServerEvent) => {
        events.push(event)
        if (!TERMINAL.has(event.type)) return
        socket.off('event', onEvent)
        resolve(turnOf(events))
      }
      socket.on('event', onEvent)
    })
  const create = (params: CreateParams) => {
    const turn = nextTurn()
    socket.send({ type: 'response.create', ...params })
    return turn
  }
  const sendRaw = (data: string) => {
    const turn = nextTurn()
    socket.sendRaw(data)
    return turn
  }
  const close = async () => {
    socket.close({ code: 1000, reason: 'done' })
    return closed
  }
  return { socket, create, sendRaw, nextTurn, errors, sdkErrors, closed, close }
}

const native = async (path: string, key = org.key) => {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { headers: { authorization: `Bearer ${key}` } })
  return { status: res.status, body: (await res.json()) as Record<string, unknown> }
}
const chatOf = async (responseId: string) => (await native(`/api/v1/runs/${runIdOf(responseId)}`)).body.chat_id as string
const historyOf = async (chatId: string) => ((await native(`/api/v1/chats/${chatId}/history?include=full`)).body.data as { part: { text?: string; kind?: string } }[]).map((p) => p.part.text ?? p.part.kind)
const chatCount = async () => ((await native('/api/v1/chats?limit=100')).body.data as unknown[]).length

const tools: OpenAI.Responses.FunctionTool[] = [
  { type: 'function', name: 'get_weather', description: 'Weather in a city', strict: false, parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
]

describe('the Responses WebSocket mode through the SDK', () => {
  it('holds a session of several turns on one socket, chained by previous_response_id, with the SSE stream\'s event sequence', async () => {
    const sse = await new OpenAI({ baseURL, apiKey: org.key, maxRetries: 0 }).responses.create({ model: 'sandbox/echo', input: 'first', stream: true })
    const sseTypes: string[] = []
    for await (const event of sse) sseTypes.push(event.type)

    const session = openSocket()
    const first = await session.create({ model: 'sandbox/echo', input: 'first' })
    // The same events as the HTTP stream of the same request, each one message, numbered from 0.
    expect(first.types).toEqual(sseTypes)
    expect(first.types[0]).toBe('response.created')
    expect(first.types[1]).toBe('response.in_progress')
    expect(first.types.at(-1)).toBe('response.completed')
    expect(first.events.map((e) => (e as { sequence_number: number }).sequence_number)).toEqual(first.events.map((_, i) => i))
    expect(first.text).toBe('echo: first')

    const second = await session.create({ model: 'sandbox/echo', input: 'second', previous_response_id: first.response!.id })
    expect(second.text).toBe('echo: second')
    expect(second.response?.previous_response_id).toBe(first.response!.id)

    const call = await session.create({ model: 'sandbox/agent', input: 'Weather in Oslo?', tools, previous_response_id: second.response!.id })
    const fc = call.response!.output.find((item) => item.type === 'function_call')
    expect(fc).toMatchObject({ type: 'function_call', name: 'get_weather' })
    expect(call.types).toContain('response.function_call_arguments.done')

    const answer = await session.create({
      model: 'sandbox/agent',
      tools,
      previous_response_id: call.response!.id,
      input: [{ type: 'function_call_output', call_id: (fc as { call_id: string }).call_id, output: '4 degrees and rain' }],
    })
    expect(answer.response?.status).toBe('completed')
    expect(answer.text).toContain('4 degrees and rain')

    // Each continued the latest response of one chat: the turns are that chat's history, in order.
    const chat = await chatOf(first.response!.id)
    for (const r of [second, call, answer]) expect(await chatOf(r.response!.id)).toBe(chat)
    const history = await historyOf(chat)
    expect(history.slice(0, 4)).toEqual(['first', 'echo: first', 'second', 'echo: second'])
    // Stored responses are read back over HTTP as the socket announced them.
    const read = await native(`/v1/responses/${answer.response!.id}`)
    expect(read.status).toBe(200)
    expect(read.body).toEqual(JSON.parse(JSON.stringify(answer.response)))
    expect(session.errors).toEqual([])
    expect(await session.close()).toBe(1000)
  })

  it('a store: false chain continues on its socket only, is never readable, and its chat goes with the socket', async () => {
    const session = openSocket()
    const one = await session.create({ model: 'sandbox/echo', input: 'one', store: false })
    expect(one.text).toBe('echo: one')
    const two = await session.create({ model: 'sandbox/echo', input: 'two', store: false, previous_response_id: one.response!.id })
    expect(two.error).toBeNull()
    expect(two.text).toBe('echo: two')
    const chat = await chatOf(two.response!.id)
    // Continued in the chat the first ran in: its context holds both turns.
    expect(await chatOf(one.response!.id)).toBe(chat)
    expect(await historyOf(chat)).toEqual(['one', 'echo: one', 'two', 'echo: two'])

    // Not stored: unreadable over HTTP, and not continuable from anywhere but this socket.
    expect((await native(`/v1/responses/${two.response!.id}`)).status).toBe(404)
    expect((await native(`/v1/responses/${one.response!.id}`)).status).toBe(404)
    const http = new OpenAI({ baseURL, apiKey: org.key, maxRetries: 0 })
    await expect(http.responses.create({ model: 'sandbox/echo', input: 'x', previous_response_id: two.response!.id })).rejects.toMatchObject({
      status: 400,
      code: 'previous_response_not_found',
    })
    const elsewhere = openSocket()
    const refused = await elsewhere.create({ model: 'sandbox/echo', input: 'x', store: false, previous_response_id: two.response!.id })
    expect(refused.error?.error.code).toBe('previous_response_not_found')
    await elsewhere.close()
    // Only the latest response is held: the one before it is no longer continuable.
    const older = await session.create({ model: 'sandbox/echo', input: 'x', store: false, previous_response_id: one.response!.id })
    expect(older.error?.error.code).toBe('previous_response_not_found')

    // Alive while the socket is, gone once it closes; the runs stay, billed.
    expect((await native(`/api/v1/chats/${chat}`)).status).toBe(200)
    await session.close()
    await expect.poll(async () => (await native(`/api/v1/chats/${chat}`)).status).toBe(404)
    const run = await native(`/api/v1/runs/${runIdOf(two.response!.id)}`)
    expect(Number(run.body.cost)).toBeGreaterThan(0)
  })

  it('a continuation of the held response that fails drops it: its chat goes, and it cannot be continued', async () => {
    const session = openSocket()
    const kept = await session.create({ model: 'sandbox/echo', input: 'keep me', store: false })
    const chat = await chatOf(kept.response!.id)
    const failed = await session.create({ model: 'sandbox/nonexistent', input: 'x', store: false, previous_response_id: kept.response!.id })
    expect(failed.error).toMatchObject({ type: 'error', status: 400, error: { type: 'invalid_request_error', param: 'model' } })
    await expect.poll(async () => (await native(`/api/v1/chats/${chat}`)).status).toBe(404)
    const again = await session.create({ model: 'sandbox/echo', input: 'x', store: false, previous_response_id: kept.response!.id })
    expect(again.error?.error.code).toBe('previous_response_not_found')
    await session.close()
  })

  it('a stored response continuing a held one is stored in a chat of its own that outlives the socket', async () => {
    const session = openSocket()
    const draft = await session.create({ model: 'sandbox/echo', input: 'draft', store: false })
    const kept = await session.create({ model: 'sandbox/echo', input: 'final', previous_response_id: draft.response!.id })
    expect(kept.text).toBe('echo: final')
    const keptChat = await chatOf(kept.response!.id)
    const draftChat = await chatOf(draft.response!.id)
    expect(keptChat).not.toBe(draftChat)
    // The socket holds its latest response only: the stored one replaced the draft, whose chat goes at once.
    await expect.poll(async () => (await native(`/api/v1/chats/${draftChat}`)).status).toBe(404)
    await session.close()
    expect((await native(`/v1/responses/${kept.response!.id}`)).status).toBe(200)
    expect(await historyOf(keptChat)).toEqual(['draft', 'echo: draft', 'final', 'echo: final'])
  })

  it('previous_response_not_found is an error event; the socket stays usable', async () => {
    const session = openSocket()
    const other = ctx.org()
    ctx.store.balance.add(other.orgId, 'topup', '1')
    const theirs = await new OpenAI({ baseURL, apiKey: other.key, maxRetries: 0 }).responses.create({ model: 'sandbox/echo', input: 'theirs' })
    for (const id of [`resp_${'0'.repeat(32)}`, 'resp_not-an-id', theirs.id]) {
      const missing = await session.create({ model: 'sandbox/echo', input: 'hello', previous_response_id: id })
      expect(missing.error).toEqual({
        type: 'error',
        status: 400,
        error: { type: 'invalid_request_error', code: 'previous_response_not_found', message: `Previous response with id '${id}' not found.`, param: 'previous_response_id' },
      })
      expect(missing.types).toEqual(['error'])
    }
    // The SDK surfaced each as a WebSocketError carrying the event, and kept the socket.
    expect(session.sdkErrors.map((e) => e.message)).toEqual(session.errors.map((e) => (e as unknown as ErrorEvent).error.message))
    const fine = await session.create({ model: 'sandbox/echo', input: 'still here' })
    expect(fine.text).toBe('echo: still here')
    expect(await session.close()).toBe(1000)
  })

  it('messages that fail validation, are not JSON, or are of an unknown type get an error event and write nothing', async () => {
    const session = openSocket()
    const chats = await chatCount()
    const tooHot = await session.create({ model: 'sandbox/echo', input: 'x', temperature: 5 })
    expect(tooHot.error).toMatchObject({ type: 'error', status: 400, error: { type: 'invalid_request_error', code: 'invalid_value', param: 'temperature' } })
    const unknownField = await session.create({ model: 'sandbox/echo', input: 'x', frobnicate: 1 } as CreateParams)
    expect(unknownField.error).toMatchObject({ status: 400, error: { type: 'invalid_request_error', param: 'frobnicate' } })
    const noModel = await session.create({ input: 'x' })
    expect(noModel.error).toMatchObject({ status: 400, error: { param: 'model' } })
    const background = await session.create({ model: 'sandbox/echo', input: 'x', background: true })
    expect(background.error).toMatchObject({ status: 400, error: { param: 'background' } })
    const notJson = await session.sendRaw('{"type": "response.create", ')
    expect(notJson.error).toMatchObject({ status: 400, error: { type: 'invalid_request_error', code: 'invalid_request' } })
    const unknownType = await session.sendRaw(JSON.stringify({ type: 'response.frobnicate', model: 'sandbox/echo' }))
    expect(unknownType.error).toMatchObject({ status: 400, error: { type: 'invalid_request_error', param: 'type' } })
    expect(await chatCount()).toBe(chats)
    // `stream` is implied by the socket: sent anyway, it changes nothing.
    const streamed = await session.create({ model: 'sandbox/echo', input: 'after all that', stream: false })
    expect(streamed.text).toBe('echo: after all that')
    expect(streamed.types.at(-1)).toBe('response.completed')
    expect(await session.close()).toBe(1000)
  })

  it('takes one response at a time: a response.create while one runs is refused, a steer refused as steering, and the first completes', async () => {
    const session = openSocket()
    const events: ServerEvent[] = []
    session.socket.on('event', (event) => events.push(event))
    const createdEvent = new Promise<OpenAI.Responses.ResponseCreatedEvent>((resolve) => session.socket.on('response.created', (e) => resolve(e as OpenAI.Responses.ResponseCreatedEvent)))
    session.socket.send({ type: 'response.create', model: 'sandbox/echo', input: '/slow 40\none' })
    session.socket.send({ type: 'response.create', model: 'sandbox/echo', input: 'two' })
    const created = await createdEvent
    session.socket.send({ type: 'response.steer', previous_response_id: created.response.id, input: 'faster' })
    await expect.poll(() => events.some((e) => e.type === 'response.completed')).toBe(true)
    const refusals = events.filter((e) => e.type === 'error') as unknown as ErrorEvent[]
    expect(refusals).toEqual([expect.objectContaining({ status: 400, error: expect.objectContaining({ code: 'response_in_progress' }) })])
    expect(events.filter((e) => e.type === 'response.steer.failed')).toEqual([
      expect.objectContaining({ error: expect.objectContaining({ code: 'steering_not_supported' }), steer: { input: 'faster', previous_response_id: created.response.id } }),
    ])
    const completed = events.filter((e) => e.type === 'response.completed') as OpenAI.Responses.ResponseCompletedEvent[]
    expect(completed.map((e) => (e.response.output[0] as { content: { text: string }[] }).content[0]!.text)).toEqual(['echo: one'])
    const next = await session.create({ model: 'sandbox/echo', input: 'three' })
    expect(next.text).toBe('echo: three')
    await session.close()
  })
})

describe('what a socket holds, as its responses end', () => {
  it('a failed response is not held: it cannot be continued, and its chat goes', async () => {
    const session = openSocket()
    const failed = await session.create({ model: 'sandbox/echo', input: '/fail-mid', store: false })
    expect(failed.types.at(-1)).toBe('response.failed')
    expect(failed.response?.status).toBe('failed')
    const chat = await chatOf(failed.response!.id)
    await expect.poll(async () => (await native(`/api/v1/chats/${chat}`)).status).toBe(404)
    const again = await session.create({ model: 'sandbox/echo', input: 'x', store: false, previous_response_id: failed.response!.id })
    expect(again.error?.error.code).toBe('previous_response_not_found')
    // A held response continued in its own chat by one that fails: both go, with the chat.
    const held = await session.create({ model: 'sandbox/echo', input: 'held', store: false })
    const heldChat = await chatOf(held.response!.id)
    const failing = await session.create({ model: 'sandbox/echo', input: '/fail-mid', store: false, previous_response_id: held.response!.id })
    expect(failing.types.at(-1)).toBe('response.failed')
    expect(await chatOf(failing.response!.id)).toBe(heldChat)
    await expect.poll(async () => (await native(`/api/v1/chats/${heldChat}`)).status).toBe(404)
    for (const id of [held.response!.id, failing.response!.id]) {
      const refused = await session.create({ model: 'sandbox/echo', input: 'x', store: false, previous_response_id: id })
      expect(refused.error?.error.code).toBe('previous_response_not_found')
    }
    await session.close()
  })

  it('a socket closed mid-response: the run goes on to its end, then its chat not to be stored goes', async () => {
    const session = openSocket()
    const created = new Promise<string>((resolve) => session.socket.on('response.created', (event) => resolve(event.response.id)))
    session.socket.send({ type: 'response.create', model: 'sandbox/echo', input: '/slow 150\nslowly now', store: false })
    const responseId = await created
    const chat = await chatOf(responseId)
    await session.close()
    // Not cut short by the reader going (as over HTTP): it succeeds, and only then is its chat deleted.
    await expect.poll(async () => (await native(`/api/v1/runs/${runIdOf(responseId)}`)).body.status, { timeout: 5_000 }).toBe('succeeded')
    await expect.poll(async () => (await native(`/api/v1/chats/${chat}`)).status).toBe(404)
  })

  it('the server closing closes its sockets with 1001', async () => {
    const own = await createTestApp({ catalogue: sandboxCatalogue() })
    await own.app.listen({ port: 0, host: '127.0.0.1' })
    const ownOrg = own.org()
    own.store.balance.add(ownOrg.orgId, 'topup', '1')
    const socket = new ResponsesWS(new OpenAI({ baseURL: `http://127.0.0.1:${(own.app.server.address() as { port: number }).port}/v1`, apiKey: ownOrg.key, maxRetries: 0 }))
    socket.on('error', () => {})
    const closed = new Promise<number>((resolve) => socket.on('close', (code) => resolve(code)))
    const done = new Promise((resolve) => socket.on('response.completed', resolve))
    socket.send({ type: 'response.create', model: 'sandbox/echo', input: 'held', store: false })
    await done
    await own.close()
    expect(await closed).toBe(1001)
  })
})

describe('the upgrade', () => {
  const upgradeAnswer = (path: string, headers: Record<string, string>) =>
    new Promise<{ status: number; body: unknown }>((resolve, reject) => {
      const ws = new WebSocket(`ws://127.0.0.1:${port}${path}`, { headers })
      ws.on('unexpected-response', (_req, res) => {
        let text = ''
        res.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')))
        res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }))
      })
      ws.on('open', () => reject(new Error('the upgrade was accepted')))
      ws.on('error', () => {})
    })

  it('a bad or missing key is refused with 401 in OpenAI\'s shape before the socket opens', async () => {
    const session = openSocket('pk_not-a-key')
    let opened = false
    session.socket.on('event', () => (opened = true))
    await session.closed
    expect(opened).toBe(false)
    expect(session.sdkErrors.length).toBeGreaterThan(0)
    expect(session.sdkErrors.map((e) => `${e.message} ${String((e as { cause?: Error }).cause?.message ?? '')}`).join(' ')).toContain('401')

    for (const headers of [{ authorization: 'Bearer pk_not-a-key' }, {} as Record<string, string>]) {
      const answer = await upgradeAnswer('/v1/responses', headers)
      expect(answer).toEqual({
        status: 401,
        body: { error: { type: 'authentication_error', code: 'invalid_api_key', message: expect.any(String), param: null } },
      })
    }
  })

  it('X-Parley-Namespace on the upgrade places the chats the socket makes; a malformed one is refused', async () => {
    const socket = new ResponsesWS(new OpenAI({ baseURL, apiKey: org.key, maxRetries: 0 }), { headers: { 'x-parley-namespace': 'acme/socket' } })
    socket.on('error', () => {})
    const completed = new Promise<OpenAI.Responses.ResponseCompletedEvent>((resolve) => socket.on('response.completed', resolve))
    socket.send({ type: 'response.create', model: 'sandbox/echo', input: 'placed' })
    const chat = await chatOf((await completed).response.id)
    expect((await native(`/api/v1/chats/${chat}`)).body.namespace).toBe('acme/socket')
    socket.close()
    const refused = await upgradeAnswer('/v1/responses', { authorization: `Bearer ${org.key}`, 'x-parley-namespace': 'Not A Namespace' })
    expect(refused).toMatchObject({ status: 400, body: { error: { type: 'invalid_request_error', code: 'invalid_value' } } })
  })

  it('leaves upgrades to other paths to the router', async () => {
    const answer = await new Promise<{ status: number; body: string }>((resolve) => {
      const req = httpRequest({ port, host: '127.0.0.1', path: '/api/v1/models', headers: { connection: 'Upgrade', upgrade: 'websocket' } }, (res) => {
        let body = ''
        res.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')))
        res.on('end', () => resolve({ status: res.statusCode!, body }))
      })
      // An upgrade nobody answers would hang: that is a failure too.
      req.setTimeout(2_000, () => {
        req.destroy()
        resolve({ status: 0, body: '{}' })
      })
      req.on('error', () => {})
      req.end()
    })
    // Parley's own envelope, from the keyed routes' hook: the request reached Fastify.
    expect(answer.status).toBe(401)
    expect(JSON.parse(answer.body)).toMatchObject({ error: { code: 'unauthorized' } })
  })
})
