import { describe, expect, it } from 'vitest'
import { client } from '../helpers/config-api.ts'
import { countOf, deltaText, getRun, newChat, postTurn, turn, useSandboxChat } from '../helpers/turns.ts'

/**
 * Per-turn options through the API on the sandbox (issue 35, docs/guide/turn-options.md): what the
 * model receives, what the manifest counts, and the refusals that write nothing. What each vendor's
 * wire carries is test/e2e/turn-options-wire.test.ts.
 */
const WEATHER = { name: 'get_weather', description: 'Current weather for a city.', input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }

describe('per-turn options on the native API', () => {
  const s = useSandboxChat()
  /** `/context`: the sandbox answers with the context it received, as JSON. */
  const contextOf = async (body: Record<string, unknown>) => {
    const t = await turn(s.ctx, s.org.auth, s.chatId, { input: [{ type: 'prompt', text: '/context' }], ...body })
    return { context: JSON.parse(deltaText(t.frames, 'text')), run: await getRun(s.ctx, s.org.auth, t.runId) }
  }

  it('instructions: sent after the configured ones as the system message, and counted with them', async () => {
    const alone = await contextOf({ instructions: 'Answer in Norwegian.' })
    expect(alone.context.system).toBe('Answer in Norwegian.')
    const without = await contextOf({})
    expect(without.context.system ?? null).toBeNull()
    expect(alone.run.manifest.context.tokens.instructions).toBeGreaterThan(without.run.manifest.context.tokens.instructions)

    await client(s.ctx, s.org).post('/api/v1/config/instructions', { body: 'You work for the harbour office.', mode: 'append' })
    const both = await contextOf({ instructions: 'Answer in Norwegian.' })
    expect(both.context.system).toBe('You work for the harbour office.\n\nAnswer in Norwegian.')
  })

  it('tool_choice reaches the model: sandbox/agent, told none, does not call the tool it is offered', async () => {
    const told = await turn(s.ctx, s.org.auth, s.chatId, { model: 'sandbox/agent', tools: [WEATHER], tool_choice: 'none', input: [{ type: 'prompt', text: 'Weather?' }] })
    expect(deltaText(told.frames, 'text')).toBe('echo: Weather?')
    const run = await getRun(s.ctx, s.org.auth, told.runId)
    expect(run.manifest.call_settings).toEqual({ toolChoice: { type: 'none' } })
  })

  const refusals: [string, Record<string, unknown>, number, string][] = [
    ['a tool_choice naming a tool the turn does not offer', { tools: [WEATHER], tool_choice: { type: 'tool', name: 'get_tide' } }, 422, '/tool_choice'],
    ['tool_choice required with no tools', { tool_choice: 'required' }, 422, '/tool_choice'],
    ['a response_format schema that is not a JSON Schema', { response_format: { type: 'json_schema', schema: { type: 'object', properties: { a: { type: 'nonsense' } } } } }, 422, '/response_format/schema'],
    ['a response_format schema that is not an object schema', { response_format: { type: 'json_schema', schema: { type: 'array' } } }, 422, '/response_format/schema/type'],
  ]
  for (const [what, body, status, pointer] of refusals) {
    it(`refuses ${what} (${status}, pointing at ${pointer}) and writes nothing`, async () => {
      const res = await postTurn(s.ctx, s.org.auth, s.chatId, { model: 'sandbox/echo', input: [{ type: 'prompt', text: 'hello' }], ...body })
      expect(res.statusCode, res.body).toBe(status)
      expect(res.json().error.details.problems.map((p: { pointer: string }) => p.pointer)).toContain(pointer)
      expect(countOf(s.ctx.store, 'runs', s.chatId)).toBe(0)
      expect(countOf(s.ctx.store, 'parts', s.chatId)).toBe(0)
    })
  }

  it('stream: false answers one JSON document once the run is settled, holding the blocks the stream would have sent, billed the same', async () => {
    const input = [{ type: 'prompt', text: '/think step by step\n/tool lookup {"q":1}\nWhere is the ferry?' }]
    const streamed = await turn(s.ctx, s.org.auth, s.chatId, { input })
    const other = await newChat(s.ctx, s.org.auth)
    const res = await postTurn(s.ctx, s.org.auth, other, { model: 'sandbox/echo', input, stream: false })
    expect(res.statusCode, res.body).toBe(200)
    expect(res.headers['content-type']).toMatch(/^application\/json/)
    const answer = res.json()
    // The stream's blocks, read from its frames here (not by the server's fold).
    const blocks: { kind: string; text: string; tool_use_id?: string }[] = []
    for (const f of streamed.frames) {
      if (f.event === 'block_start') blocks.push({ ...f.data, text: '' })
      if (f.event === 'delta') blocks.at(-1)!.text += f.data.text
    }
    const withoutIds = (list: { tool_use_id?: string }[]) => list.map(({ tool_use_id: _, ...rest }) => rest)
    expect(withoutIds(answer.blocks)).toEqual(withoutIds(blocks))
    expect(answer.blocks.map((b: { kind: string }) => b.kind)).toEqual(['reasoning', 'text', 'tool_call'])
    expect(answer.error).toBeNull()
    const done = streamed.of('done')[0]!.data
    expect(answer.done).toMatchObject({ stop_reason: done.stop_reason, usage: done.usage, cost: done.cost })
    expect(answer.run).toMatchObject({ chat_id: other, closed_tool_calls: [] })
    // Settled before the answer: the run reads succeeded, its cost written.
    const run = await getRun(s.ctx, s.org.auth, answer.run.run_id)
    expect(run.status).toBe('succeeded')
    expect(run.cost).toBe(answer.done.cost)
  })

  it('stream: false with a run that fails after it opened: 200, the blocks so far and the error', async () => {
    const res = await postTurn(s.ctx, s.org.auth, s.chatId, { model: 'sandbox/echo', input: [{ type: 'prompt', text: '/fail-mid\none two three four' }], stream: false })
    expect(res.statusCode, res.body).toBe(200)
    const answer = res.json()
    expect(answer.done).toBeNull()
    expect(answer.error).toMatchObject({ code: 'upstream_error' })
    expect(answer.blocks).toEqual([{ kind: 'text', text: 'echo: one two ' }])
  })

  it('refuses a temperature outside 0 to 2 and an unknown tool_choice word by the schema, writing nothing', async () => {
    for (const body of [{ temperature: 2.5 }, { temperature: -1 }, { tool_choice: 'sometimes' }, { response_format: { type: 'yaml' } }]) {
      const res = await postTurn(s.ctx, s.org.auth, s.chatId, { model: 'sandbox/echo', input: [{ type: 'prompt', text: 'hello' }], ...body })
      expect(res.statusCode, JSON.stringify(body)).toBeGreaterThanOrEqual(400)
      expect(res.statusCode, JSON.stringify(body)).toBeLessThan(500)
      expect(res.json().error.code).toBe('validation_failed')
    }
    expect(countOf(s.ctx.store, 'runs', s.chatId)).toBe(0)
  })
})
