import OpenAI from 'openai'
import { chatIdOf, runIdOf } from '../../src/domain/openai/openai-ids.ts'
import { describe, expect, it } from 'vitest'
import { openaiSdkServer } from '../helpers/openai-sdk-server.ts'

/**
 * The official `openai` SDK against a real Parley server, with only `baseURL` and `apiKey` changed
 * (issue 35, docs/guide/openai-sdk.md): what it sends is a native turn, billed and recorded as one.
 */
const server = openaiSdkServer()

const native = async (path: string) => {
  const res = await fetch(`http://127.0.0.1:${server.port}${path}`, { headers: { authorization: `Bearer ${server.org.key}` } })
  return { status: res.status, body: (await res.json()) as Record<string, unknown> }
}

describe('the openai SDK against Parley', () => {
  it('a non-streaming response: the sandbox echoes, and the run is a native run, billed', async () => {
    const response = await server.sdk.responses.create({ model: 'sandbox/echo', input: 'hello there' })
    expect(response.status).toBe('completed')
    expect(response.output_text).toBe('echo: hello there')
    expect(response.output[0]).toMatchObject({ type: 'message', role: 'assistant', status: 'completed' })
    expect(response.usage?.input_tokens).toBeGreaterThan(0)
    const runId = runIdOf(response.id)!
    const run = await native(`/api/v1/runs/${runId}`)
    expect(run.status).toBe(200)
    expect(run.body.status).toBe('succeeded')
    expect(Number(run.body.cost)).toBeGreaterThan(0)
  })

  it('streams the Responses event sequence, ending with response.completed', async () => {
    const stream = await server.sdk.responses.create({ model: 'sandbox/echo', input: 'count to three', stream: true })
    const types: string[] = []
    let text = ''
    let completed: OpenAI.Responses.Response | null = null
    for await (const event of stream) {
      types.push(event.type)
      if (event.type === 'response.output_text.delta') text += event.delta
      if (event.type === 'response.completed') completed = event.response
    }
    expect(types[0]).toBe('response.created')
    expect(types[1]).toBe('response.in_progress')
    expect(types).toContain('response.output_item.added')
    expect(types.at(-1)).toBe('response.completed')
    expect(text).toBe('echo: count to three')
    expect(completed?.output_text).toBe(text)
  })

  it('holds a 3-turn streamed chat in a conversation; the native API reads the same chat', async () => {
    const conversation = await server.sdk.conversations.create({ metadata: { topic: 'tides' } })
    expect(conversation.id).toMatch(/^conv_/)
    const said: string[] = []
    for (const line of ['first', 'second', 'third']) {
      const stream = await server.sdk.responses.create({ model: 'sandbox/echo', conversation: conversation.id, input: line, stream: true })
      let text = ''
      for await (const event of stream) if (event.type === 'response.output_text.delta') text += event.delta
      said.push(text)
    }
    expect(said).toEqual(['echo: first', 'echo: second', 'echo: third'])
    const items = await server.sdk.conversations.items.list(conversation.id, { order: 'asc' })
    const texts = items.data.map((item) => (item.type === 'message' ? (item.content[0] as { text: string }).text : item.type))
    expect(texts).toEqual(['first', 'echo: first', 'second', 'echo: second', 'third', 'echo: third'])
    const chatId = chatIdOf(conversation.id)!
    const history = await native(`/api/v1/chats/${chatId}/history?include=full`)
    const parts = (history.body.data as { part: { text: string } }[]).map((p) => p.part.text)
    expect(parts).toEqual(['first', 'echo: first', 'second', 'echo: second', 'third', 'echo: third'])
    expect((await server.sdk.conversations.retrieve(conversation.id)).metadata).toEqual({ topic: 'tides' })
    const one = await server.sdk.conversations.items.retrieve(items.data[1]!.id!, { conversation_id: conversation.id })
    expect(one).toEqual(items.data[1])
  })

  it('a tool loop with sandbox/agent: a function_call, its output sent back, then the answer', async () => {
    const tools: OpenAI.Responses.Tool[] = [
      { type: 'function', name: 'get_weather', description: 'Weather in a city', strict: false, parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
    ]
    const first = await server.sdk.responses.create({ model: 'sandbox/agent', input: 'Weather in Oslo?', tools })
    const call = first.output.find((item) => item.type === 'function_call')
    expect(call).toMatchObject({ type: 'function_call', name: 'get_weather' })
    if (call?.type !== 'function_call') throw new Error('no call')
    expect(typeof JSON.parse(call.arguments).city).toBe('string')
    const second = await server.sdk.responses.create({
      model: 'sandbox/agent',
      previous_response_id: first.id,
      tools,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: '4 degrees and rain' }],
    })
    expect(second.status).toBe('completed')
    expect(second.output_text).toContain('4 degrees and rain')
    const inputItems = await server.sdk.responses.inputItems.list(second.id)
    expect(inputItems.data).toEqual([expect.objectContaining({ type: 'function_call_output', call_id: call.call_id, output: '4 degrees and rain' })])
  })

  it('previous_response_id continues the latest response, and forks at an older one', async () => {
    const a = await server.sdk.responses.create({ model: 'sandbox/echo', input: 'one' })
    const b = await server.sdk.responses.create({ model: 'sandbox/echo', input: 'two', previous_response_id: a.id })
    const c = await server.sdk.responses.create({ model: 'sandbox/echo', input: 'three', previous_response_id: b.id })
    const chatOf = async (id: string) => (await native(`/api/v1/runs/${runIdOf(id)}`)).body.chat_id
    expect(await chatOf(b.id)).toBe(await chatOf(a.id))
    expect(await chatOf(c.id)).toBe(await chatOf(a.id))
    // Naming `a` again, not the latest: the chat is forked at `a`, and the original keeps its history.
    const fork = await server.sdk.responses.create({ model: 'sandbox/echo', input: 'branch', previous_response_id: a.id })
    const forkChat = await chatOf(fork.id)
    expect(forkChat).not.toBe(await chatOf(a.id))
    const forkHistory = (await native(`/api/v1/chats/${forkChat}/history?include=full`)).body.data as { part: { text: string } }[]
    expect(forkHistory.map((p) => p.part.text)).toEqual(['one', 'echo: one', 'branch', 'echo: branch'])
    const original = (await native(`/api/v1/chats/${await chatOf(a.id)}/history?include=full`)).body.data as { part: { text: string } }[]
    expect(original.map((p) => p.part.text)).toEqual(['one', 'echo: one', 'two', 'echo: two', 'three', 'echo: three'])
  })

  it('gets a response, and cancels one in progress: it ends cancelled, never completed', async () => {
    const done = await server.sdk.responses.create({ model: 'sandbox/echo', input: 'kept' })
    expect(await server.sdk.responses.retrieve(done.id)).toEqual(done)
    const slow = await server.sdk.responses.create({ model: 'sandbox/echo', input: '/slow 500\n' + 'word '.repeat(40), background: true })
    expect(slow.status).toBe('in_progress')
    const cancelled = await server.sdk.responses.cancel(slow.id)
    expect(cancelled.status).toBe('cancelled')
    expect((await server.sdk.responses.retrieve(slow.id)).status).toBe('cancelled')
  })

  it("refuses in OpenAI's shape and writes nothing: unknown fields, wrong types, another organisation's response", async () => {
    const chatsBefore = (await native('/api/v1/chats')).body.data as unknown[]
    const attempts: [Record<string, unknown>, string | null][] = [
      [{ model: 'sandbox/echo', input: 'x', frobnicate: true }, null],
      [{ model: 'sandbox/echo', input: 42 }, 'input'],
      [{ model: 'sandbox/echo', input: 'x', temperature: 'hot' }, 'temperature'],
      [{ model: 'sandbox/nope', input: 'x' }, 'model'],
    ]
    for (const [body, param] of attempts) {
      const error = await server.sdk.responses.create(body as never).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(OpenAI.BadRequestError)
      const e = error as InstanceType<typeof OpenAI.BadRequestError>
      expect(e.status).toBe(400)
      expect(e.type).toBe('invalid_request_error')
      if (param !== null) expect(e.param).toBe(param)
    }
    const other = server.ctx.org()
    server.ctx.store.balance.add(other.orgId, 'topup', '10')
    const theirs = await new OpenAI({ baseURL: server.sdk.baseURL, apiKey: other.key, maxRetries: 0 }).responses.create({ model: 'sandbox/echo', input: 'private' })
    const foreign = await server.sdk.responses.create({ model: 'sandbox/echo', input: 'x', previous_response_id: theirs.id }).catch((e: unknown) => e)
    expect(foreign).toMatchObject({ status: 400, code: 'previous_response_not_found', param: 'previous_response_id' })
    const missing = await server.sdk.responses.create({ model: 'sandbox/echo', input: 'x', previous_response_id: 'resp_' + '0'.repeat(32) }).catch((e: unknown) => e)
    expect(missing).toMatchObject({ status: 400, code: 'previous_response_not_found' })
    await expect(server.sdk.responses.retrieve(theirs.id)).rejects.toMatchObject({ status: 404 })
    expect((await native('/api/v1/chats')).body.data).toEqual(chatsBefore)
  })

  it('store: false keeps nothing to read back, but bills the run', async () => {
    const chatsBefore = ((await native('/api/v1/chats')).body.data as unknown[]).length
    const response = await server.sdk.responses.create({ model: 'sandbox/echo', input: 'forget me', store: false })
    expect(response.output_text).toBe('echo: forget me')
    await expect(server.sdk.responses.retrieve(response.id)).rejects.toMatchObject({ status: 404 })
    await expect.poll(async () => ((await native('/api/v1/chats')).body.data as unknown[]).length).toBe(chatsBefore)
    const runId = runIdOf(response.id)!
    const run = await native(`/api/v1/runs/${runId}`)
    expect(Number(run.body.cost)).toBeGreaterThan(0)
  })
})

describe('input_tokens, compact and conversation items through the SDK', () => {
  it('compact: a billed compaction run summarises the window; its compaction item carries the history into a new chain', async () => {
    const balanceBefore = server.ctx.store.balance.balanceOf(server.org.orgId)
    const compacted = await server.sdk.responses.compact({
      model: 'sandbox/echo',
      input: [
        { role: 'user', content: 'My name is Alice and I live in Bergen.' },
        { role: 'assistant', content: 'Nice to meet you, Alice.' },
      ],
    })
    expect(compacted.object).toBe('response.compaction')
    const item = compacted.output.find((o) => o.type === 'compaction')
    expect(item).toBeDefined()
    expect(compacted.usage.input_tokens).toBeGreaterThan(0)
    expect(Number(server.ctx.store.balance.balanceOf(server.org.orgId))).toBeLessThan(Number(balanceBefore))
    // The summary stands in for the window: the next request's context holds it, as history.
    const next = await server.sdk.responses.create({ model: 'sandbox/echo', input: [...(compacted.output as never[]), { role: 'user', content: '/context' }] })
    const context = JSON.parse(next.output_text) as { messages: { role: string; content: unknown }[] }
    expect(JSON.stringify(context.messages)).toContain('Summary of the conversation so far')
    const missingModel = await fetch(`${server.sdk.baseURL}/responses/compact`, { method: 'POST', headers: { authorization: `Bearer ${server.org.key}`, 'content-type': 'application/json' }, body: JSON.stringify({ input: 'x' }) })
    expect(missingModel.status).toBe(400)
  })

  it('input_tokens: the packed context counted without running, growing with the conversation it names', async () => {
    const conversation = await server.sdk.conversations.create({})
    const empty = await server.sdk.responses.inputTokens.count({ model: 'sandbox/echo', conversation: conversation.id, input: 'hello' })
    expect(empty.input_tokens).toBeGreaterThan(0)
    await server.sdk.responses.create({ model: 'sandbox/echo', conversation: conversation.id, input: 'word '.repeat(200) })
    const after = await server.sdk.responses.inputTokens.count({ model: 'sandbox/echo', conversation: conversation.id, input: 'hello' })
    expect(after.input_tokens).toBeGreaterThan(empty.input_tokens + 200)
    // Counting ran nothing: the conversation holds the one response's two items.
    expect((await server.sdk.conversations.items.list(conversation.id)).data).toHaveLength(2)
  })

  it('adds items to a conversation at rest, and refuses while function calls wait for their output', async () => {
    const conversation = await server.sdk.conversations.create({ items: [{ type: 'message', role: 'user', content: 'seeded question' }] })
    const added = await server.sdk.conversations.items.create(conversation.id, { items: [{ type: 'message', role: 'assistant', content: 'seeded answer' }] })
    expect(added.data).toHaveLength(1)
    const all = await server.sdk.conversations.items.list(conversation.id, { order: 'asc' })
    expect(all.data.map((i) => (i.type === 'message' ? (i.content[0] as { text: string }).text : i.type))).toEqual(['seeded question', 'seeded answer'])
    const tools: OpenAI.Responses.Tool[] = [{ type: 'function', name: 'lookup', strict: false, parameters: { type: 'object', properties: { q: { type: 'string' } } } }]
    await server.sdk.responses.create({ model: 'sandbox/agent', conversation: conversation.id, input: 'look it up', tools })
    const refused = await server.sdk.conversations.items.create(conversation.id, { items: [{ type: 'message', role: 'user', content: 'between a call and its output' }] }).catch((e: unknown) => e)
    expect(refused).toMatchObject({ status: 400 })
    expect((await server.sdk.conversations.items.list(conversation.id)).data).toHaveLength(all.data.length + 2)
  })
})

describe('a response not to be stored that fails before its stream', () => {
  it('is refused as the vendor failed (502), billed as a failed run, and leaves no chat', async () => {
    const chatsBefore = ((await native('/api/v1/chats')).body.data as unknown[]).length
    const failed = await server.sdk.responses.create({ model: 'sandbox/echo', input: '/fail', store: false }).catch((e: unknown) => e)
    expect(failed).toMatchObject({ status: 502 })
    expect(((await native('/api/v1/chats')).body.data as unknown[]).length).toBe(chatsBefore)
  })
})
