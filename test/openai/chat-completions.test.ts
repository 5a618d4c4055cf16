import type OpenAI from 'openai'
import { describe, expect, it } from 'vitest'
import { runIdOfCompletion } from '../../src/domain/openai/chat-completion-object.ts'
import { openaiSdkServer } from '../helpers/openai-sdk-server.ts'
import { history, newChat } from '../helpers/turns.ts'

/**
 * Chat Completions and Models through the official `openai` SDK against a real Parley server
 * (issue 38, docs/decisions/063-chat-completions.md): stateless billed turns that leave no chat, a
 * tool loop over two stateless requests, appending to a chat named by `X-Parley-Chat`.
 */
const server = openaiSdkServer()

const native = async (path: string) => {
  const res = await fetch(`http://127.0.0.1:${server.port}${path}`, { headers: { authorization: `Bearer ${server.org.key}` } })
  return { status: res.status, body: (await res.json()) as Record<string, unknown> }
}
const chatCount = async () => ((await native('/api/v1/chats?limit=100')).body.data as unknown[]).length
const balance = () => Number(server.ctx.store.balance.balanceOf(server.org.orgId))

const WEATHER: OpenAI.Chat.ChatCompletionTool[] = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'The weather in a city',
      parameters: { type: 'object', properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['c', 'f'] } }, required: ['city', 'unit'] },
    },
  },
]

describe('chat.completions through the openai SDK', () => {
  it('non-streaming on sandbox/echo: the echo, billed as a native run named by the id, and no chat kept', async () => {
    const before = balance()
    const completion = await server.sdk.chat.completions.create({ model: 'sandbox/echo', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hello there' }] })
    expect(completion.object).toBe('chat.completion')
    expect(completion.model).toBe('sandbox/echo')
    expect(completion.choices).toHaveLength(1)
    expect(completion.choices[0]).toMatchObject({ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'echo: hello there' } })
    expect(completion.usage!.prompt_tokens).toBeGreaterThan(0)
    expect(completion.usage!.completion_tokens).toBeGreaterThan(0)
    expect(completion.usage!.total_tokens).toBe(completion.usage!.prompt_tokens + completion.usage!.completion_tokens)
    const runId = runIdOfCompletion(completion.id)
    expect(runId).not.toBeNull()
    const run = await native(`/api/v1/runs/${runId}`)
    expect(run.status).toBe(200)
    expect(run.body.status).toBe('succeeded')
    expect(Number(run.body.cost)).toBeGreaterThan(0)
    expect(balance()).toBeLessThan(before)
    expect(await chatCount()).toBe(0)
  })

  it('streaming on sandbox/echo: the role first, the echo in content deltas, the finish reason and usage last, and no chat kept', async () => {
    const before = balance()
    const stream = await server.sdk.chat.completions.create({ model: 'sandbox/echo', messages: [{ role: 'user', content: 'count to three' }], stream: true, stream_options: { include_usage: true } })
    const chunks: OpenAI.Chat.ChatCompletionChunk[] = []
    for await (const chunk of stream) chunks.push(chunk)
    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant')
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('echo: count to three')
    expect(chunks.filter((c) => c.choices[0]?.delta.content).length).toBeGreaterThan(1)
    const finishing = chunks.filter((c) => c.choices[0]?.finish_reason)
    expect(finishing.map((c) => c.choices[0]!.finish_reason)).toEqual(['stop'])
    const last = chunks.at(-1)!
    expect(last.choices).toEqual([])
    expect(last.usage!.completion_tokens).toBeGreaterThan(0)
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1)
    const run = await native(`/api/v1/runs/${runIdOfCompletion(last.id)}`)
    expect(run.body.status).toBe('succeeded')
    expect(balance()).toBeLessThan(before)
    await expect.poll(chatCount).toBe(0)
    // On the wire: `data:` lines only, ending with OpenAI's sentinel.
    const raw = await fetch(`${server.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.org.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sandbox/echo', messages: [{ role: 'user', content: 'raw' }], stream: true }),
    })
    const text = await raw.text()
    expect(raw.headers.get('content-type')).toMatch(/^text\/event-stream/)
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true)
    expect(text).not.toMatch(/^event:/m)
  })

  it('a tool loop on sandbox/agent over two stateless requests: a call with valid arguments, then its result answered in text', async () => {
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: 'user', content: 'What is the weather in Oslo?' }]
    const first = await server.sdk.chat.completions.create({ model: 'sandbox/agent', messages, tools: WEATHER })
    expect(first.choices[0]!.finish_reason).toBe('tool_calls')
    const call = first.choices[0]!.message.tool_calls![0]! as OpenAI.Chat.ChatCompletionMessageFunctionToolCall
    expect(call.function.name).toBe('get_weather')
    const args = JSON.parse(call.function.arguments) as { city: unknown; unit: unknown }
    expect(typeof args.city).toBe('string')
    expect(['c', 'f']).toContain(args.unit)
    const second = await server.sdk.chat.completions.create({
      model: 'sandbox/agent',
      tools: WEATHER,
      messages: [...messages, first.choices[0]!.message, { role: 'tool', tool_call_id: call.id, content: 'sunny, 21 degrees' }],
    })
    expect(second.choices[0]!.finish_reason).toBe('stop')
    expect(second.choices[0]!.message.content).toBe('echo: sunny, 21 degrees')
    // The result continued the first run's chat: the second run is in the same chat, and both are gone with it.
    const [r1, r2] = await Promise.all([native(`/api/v1/runs/${runIdOfCompletion(first.id)}`), native(`/api/v1/runs/${runIdOfCompletion(second.id)}`)])
    expect(r2.body.chat_id).toBe(r1.body.chat_id)
    expect(await chatCount()).toBe(0)
  })

  it('streams a tool call: its id and name first, then its arguments in pieces, finish_reason tool_calls; its chat is held for the results', async () => {
    const chats = await chatCount()
    const stream = await server.sdk.chat.completions.create({ model: 'sandbox/agent', messages: [{ role: 'user', content: 'Weather in Bergen?' }], tools: WEATHER, stream: true })
    const calls = new Map<number, { id?: string; name?: string; arguments: string }>()
    let finish: string | null = null
    for await (const chunk of stream) {
      for (const d of chunk.choices[0]?.delta.tool_calls ?? []) {
        const entry = calls.get(d.index) ?? { arguments: '' }
        if (d.id) entry.id = d.id
        if (d.function?.name) entry.name = d.function.name
        entry.arguments += d.function?.arguments ?? ''
        calls.set(d.index, entry)
      }
      finish = chunk.choices[0]?.finish_reason ?? finish
    }
    expect(finish).toBe('tool_calls')
    expect(calls.size).toBe(1)
    expect(calls.get(0)!.name).toBe('get_weather')
    expect(calls.get(0)!.id).toBeTruthy()
    expect(JSON.parse(calls.get(0)!.arguments)).toHaveProperty('city')
    // Held (decision 063) until its results come back, or HELD_CALLS_MS pass (test/http/openai/held-calls.test.ts).
    await expect.poll(chatCount).toBe(chats + 1)
  })

  it('carries history the chat never held as text: an earlier call and its result told in words', async () => {
    const chats = await chatCount()
    const completion = await server.sdk.chat.completions.create({
      model: 'sandbox/echo',
      messages: [
        { role: 'user', content: 'weather?' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_made_elsewhere', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] },
        { role: 'tool', tool_call_id: 'call_made_elsewhere', content: 'rain' },
      ],
    })
    expect(completion.choices[0]!.message.content).toBe('echo: get_weather returned: rain')
    const context = await server.sdk.chat.completions.create({
      model: 'sandbox/echo',
      messages: [
        { role: 'user', content: 'weather?' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_made_elsewhere', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] },
        { role: 'tool', tool_call_id: 'call_made_elsewhere', content: 'rain' },
        { role: 'assistant', content: 'It rains.' },
        { role: 'user', content: '/context' },
      ],
    })
    const sent = JSON.parse(context.choices[0]!.message.content!) as { messages: { role: string; content: unknown }[] }
    expect(JSON.stringify(sent.messages)).toContain('Called get_weather with {\\"city\\":\\"Oslo\\"}')
    expect(sent.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user'])
    expect(await chatCount()).toBe(chats)
  })

  it('X-Parley-Chat appends to that chat: only the messages after the last assistant message are the turn, and they show in its history', async () => {
    const chatId = await newChat(server.ctx, { authorization: `Bearer ${server.org.key}` })
    const headers = { headers: { 'X-Parley-Chat': chatId } }
    const first = await server.sdk.chat.completions.create({ model: 'sandbox/echo', messages: [{ role: 'user', content: 'first' }] }, headers)
    const second = await server.sdk.chat.completions.create(
      { model: 'sandbox/echo', messages: [{ role: 'user', content: 'first' }, first.choices[0]!.message, { role: 'user', content: 'second' }] },
      headers,
    )
    expect(second.choices[0]!.message.content).toBe('echo: second')
    const parts = (await history(server.ctx, { authorization: `Bearer ${server.org.key}` }, chatId)).data as { part: { type: string; text?: string } }[]
    expect(parts.map((p) => [p.part.type, p.part.text])).toEqual([
      ['prompt', 'first'],
      ['message', 'echo: first'],
      ['prompt', 'second'],
      ['message', 'echo: second'],
    ])
    const run = await native(`/api/v1/runs/${runIdOfCompletion(second.id)}`)
    expect(run.body.chat_id).toBe(chatId)
    // A tool loop on the chat: the results answer the chat's own pending call, and join its history.
    const asked = await server.sdk.chat.completions.create({ model: 'sandbox/agent', tools: WEATHER, messages: [{ role: 'user', content: 'weather?' }] }, headers)
    const call = asked.choices[0]!.message.tool_calls![0]! as OpenAI.Chat.ChatCompletionMessageFunctionToolCall
    const answered = await server.sdk.chat.completions.create(
      { model: 'sandbox/agent', tools: WEATHER, messages: [{ role: 'user', content: 'weather?' }, asked.choices[0]!.message, { role: 'tool', tool_call_id: call.id, content: 'snow' }] },
      headers,
    )
    expect(answered.choices[0]!.message.content).toBe('echo: snow')
    const after = (await history(server.ctx, { authorization: `Bearer ${server.org.key}` }, chatId)).data as { part: { type: string; tool_use_id?: string } }[]
    expect(after.slice(4).map((p) => p.part.type)).toEqual(['prompt', 'tool_call', 'tool_result', 'message'])
    expect(after[6]!.part.tool_use_id).toBe(call.id)
    const missing = await server.sdk.chat.completions
      .create({ model: 'sandbox/echo', messages: [{ role: 'user', content: 'x' }] }, { headers: { 'X-Parley-Chat': '00000000-0000-4000-8000-000000000000' } })
      .catch((e: unknown) => e)
    expect(missing).toMatchObject({ status: 404, error: { type: 'invalid_request_error' } })
  })
})

describe('models through the openai SDK', () => {
  it('lists the active catalogue in OpenAI\'s shape, and reads one by its name', async () => {
    const page = await server.sdk.models.list()
    const ids = page.data.map((m) => m.id)
    expect(ids).toContain('sandbox/echo')
    expect(ids).toContain('sandbox/agent')
    expect(page.data[0]).toMatchObject({ object: 'model', owned_by: 'sandbox' })
    expect(typeof page.data[0]!.created).toBe('number')
    const one = await server.sdk.models.retrieve('sandbox/echo')
    expect(one).toMatchObject({ id: 'sandbox/echo', object: 'model' })
    const none = await server.sdk.models.retrieve('nope/none').catch((e: unknown) => e)
    expect(none).toMatchObject({ status: 404 })
    const catalogue = await fetch(`http://127.0.0.1:${server.port}/v1/catalogue`)
    expect(catalogue.status).toBe(200)
  })
})

describe('bad chat completion requests', () => {
  const post = (body: unknown) =>
    fetch(`${server.baseURL}/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${server.org.key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })

  it('answer in OpenAI\'s error shape with a 4xx, and write nothing', async () => {
    const chats = await chatCount()
    const before = balance()
    const cases: [unknown, number, string | null][] = [
      [{ model: 'sandbox/echo', messages: 'hi' }, 400, 'messages'],
      [{ model: 'sandbox/echo', messages: [{ role: 'user', content: 42 }] }, 400, null],
      [{ model: 'sandbox/echo', messages: [] }, 400, 'messages'],
      [{ model: 'sandbox/echo', messages: [{ role: 'user', content: 'x' }], temperature: 'hot' }, 400, 'temperature'],
      [{ model: 'sandbox/echo', messages: [{ role: 'user', content: 'x' }], n: 2 }, 400, 'n'],
      [{ model: 'sandbox/echo', messages: [{ role: 'user', content: 'x' }], frobnicate: true }, 400, null],
      [{ model: 'sandbox/echo', messages: [{ role: 'tool', tool_call_id: 'call_x', content: 'orphan' }] }, 400, 'messages[0].tool_call_id'],
      [{ model: 'sandbox/echo', messages: [{ role: 'system', content: 'only instructions' }] }, 400, 'messages'],
    ]
    for (const [body, status, param] of cases) {
      const res = await post(body)
      const answer = (await res.json()) as { error: { type: string; message: string; param: string | null; code: string } }
      expect(res.status, JSON.stringify(body)).toBe(status)
      expect(answer.error.type).toBe('invalid_request_error')
      expect(typeof answer.error.message).toBe('string')
      if (param !== null) expect(answer.error.param, JSON.stringify(answer)).toBe(param)
    }
    const unknown = await server.sdk.chat.completions.create({ model: 'nobody/nothing', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e)
    expect(unknown).toMatchObject({ error: { type: 'invalid_request_error' } })
    expect((unknown as { status: number }).status).toBeGreaterThanOrEqual(400)
    expect((unknown as { status: number }).status).toBeLessThan(500)
    expect(await chatCount()).toBe(chats)
    expect(balance()).toBe(before)
  })
})
