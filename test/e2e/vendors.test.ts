import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest'
import { customerCost } from '../../src/domain/pricing/customer-cost.ts'
import { blockKinds, expectBlocksOneAtATime } from '../helpers/block-grammar.ts'
import { headerOf, only, plainAnswerDone, REQUEST_ID_HEADER, VENDOR_CASES as CASES, type VendorCase } from '../helpers/vendor-cases.ts'
import { REPO_ROOT } from './server-process.ts'
import { completedBlocks, deltaText, moneyUnits, postTurn, type SseFrame, type TurnStream } from './turn-client.ts'
import { ANTHROPIC_OVERLOADED_FIRST, ANTHROPIC_OVERLOADED_MID } from './vendor-fixtures/anthropic.ts'
import { DEEPSEEK_PARALLEL_CALLS } from './vendor-fixtures/deepseek.ts'
import { FIXTURES, type ReplayResponse, type Vendor } from './vendor-fixtures/index.ts'
import type { RecordedRequest } from './vendor-replay-server.ts'
import { startVendorServer, VENDOR_KEYS, type VendorServer } from './vendor-server.ts'

/**
 * The six vendors end to end: the real server process, configured with every vendor's key and a
 * base URL on a loopback replay server that answers with each vendor's streaming wire format. The
 * real @ai-sdk provider packages build the vendor requests and parse the replayed bytes; nothing is
 * mocked. Each case (test/helpers/vendor-cases.ts, shared with the in-process
 * test/providers/vendor-streams/every-vendor.test.ts) checks what Parley streams, bills and stores,
 * and what the vendor was sent.
 */


const PROMPT = 'What is the capital of Norway? One sentence, please.'
const TOOL_PROMPT = 'What is the weather in Oslo right now?'
const TOOL_RESULT = 'sunny, 21 °C, light breeze'
const TOOLS = [
  {
    name: 'get_weather',
    description: 'Current weather for a city.',
    input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
]
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const DECIMAL = /^\d+(\.\d+)?$/

/** The catalogue as shipped: rates to price the fixtures' usage with. */
const CATALOGUE = JSON.parse(readFileSync(join(REPO_ROOT, 'catalogue/models.json'), 'utf8')) as { models: any[] }
const catalogueEntry = (name: string) => {
  const entry = CATALOGUE.models.find((m) => m.name === name)
  if (!entry) throw new Error(`no catalogue model ${name}`)
  return entry
}

/**
 * Spec §6 as a grammar: `run`, `config_warnings`, `translation_warnings` (again with the vendor's own
 * warnings, before any block), then blocks (block_start,
 * its deltas, block_stop), one at a time, then exactly one `done` or `error`. Only an `error` may cut
 * a block short.
 */
function expectWellFormed(frames: SseFrame[]): void {
  const events = frames.map((f) => f.event)
  const trace = events.join(',')
  expect(events.slice(0, 3), trace).toEqual(['run', 'config_warnings', 'translation_warnings'])
  expect(['done', 'error'], trace).toContain(events.at(-1))
  const open = expectBlocksOneAtATime(frames.slice(3, -1), trace)
  if (events.at(-1) === 'done') expect(open, trace).toBeNull()
  expect(frames[0]!.data).toMatchObject({ run_id: expect.stringMatching(UUID), chat_id: expect.stringMatching(UUID) })
}

/** What a run records as provider_request_id: the vendor's request id header, or the response id (Google). */
const requestIdOf = (c: VendorCase, response: ReplayResponse): string => {
  const name = REQUEST_ID_HEADER[c.vendor]
  if (name === null) return c.responseId
  const value = headerOf(response, name)
  if (value === undefined) throw new Error(`the ${c.vendor} fixture has no ${name} header`)
  return value
}

describe('the six vendors through the real server process, replayed from their streaming wire formats', () => {
  let vendors: VendorServer

  /**
   * One turn that must stream to its end, well formed, with the vendor requests it caused. The
   * vendor answers with what `vendors.replay.respondNext` queued, else with its plain text fixture.
   */
  const turn = async (c: VendorCase, chatId: string, body: Record<string, unknown>) => {
    const before = vendors.replay.requestsTo(c.vendor).length
    const answer = await postTurn(vendors.server.url, vendors.devKey, chatId, { model: c.model, ...body })
    if (!answer.ok) throw new Error(`expected a stream, got HTTP ${answer.status}: ${answer.text}\n${vendors.server.stderr()}`)
    expect(answer.headers.get('content-type')).toMatch(/^text\/event-stream/)
    const stream: TurnStream = answer
    expect(await stream.closed).toBe('end')
    expectWellFormed(stream.frames)
    return {
      frames: stream.frames,
      runId: stream.frames[0]!.data.run_id as string,
      /** The terminal frame: `done` or `error`. */
      last: stream.frames.at(-1)!,
      vendorRequests: vendors.replay.requestsTo(c.vendor).slice(before),
    }
  }

  const historyParts = async (chatId: string) => {
    const res = await vendors.api(`/api/v1/chats/${chatId}/history`)
    expect(res.status, res.text).toBe(200)
    return (res.json().data as any[]).map((p) => p.part)
  }

  /** What went to the vendor on every call: endpoint, key, model and a stream. */
  const expectVendorCall = (c: VendorCase, r: RecordedRequest) => {
    expect(r.method).toBe('POST')
    expect(r.path).toBe(c.path)
    expect(r.headers['content-type']).toMatch(/^application\/json/)
    for (const [header, value] of Object.entries(c.auth(VENDOR_KEYS[c.vendor]))) expect(r.headers[header], header).toBe(value)
    if (c.vendor !== 'google') expect(r.body.model).toBe(c.vendorModelId)
    expect(c.streamed(r.body, r.path), JSON.stringify(r.body)).toBe(true)
  }

  beforeAll(async () => {
    vendors = await startVendorServer({ name: 'vendors' })
  })

  afterEach(() => vendors?.replay.clearQueues())

  afterAll(() => vendors?.stop())

  test('every vendor key activates its models; the sandbox stays on', async () => {
    const res = await vendors.api('/api/v1/models')
    expect(res.status, res.text).toBe(200)
    const names = (res.json() as any[]).map((m) => m.name)
    for (const c of CASES) expect(names).toContain(c.model)
    expect(names).toContain('sandbox/echo')
  })

  describe.each(CASES)('$vendor ($model)', (c) => {
    const fixture = FIXTURES[c.vendor]

    test('a plain prompt: streamed, billed, stored; the vendor got the prompt, the key and the model', async () => {
      const chatId = await vendors.newChat()
      const t = await turn(c, chatId, { input: [{ type: 'prompt', text: PROMPT }] })

      // The stream: the fixture's blocks, its text and reasoning, nothing lost or reordered.
      expect(blockKinds(t.frames)).toEqual(c.blocks)
      expect(deltaText(t.frames, 'text')).toBe(fixture.text.text)
      expect(deltaText(t.frames, 'reasoning')).toBe(fixture.text.reasoning)
      expect(t.frames.filter((f) => f.event === 'delta').length).toBeGreaterThan(1)

      // done: the vendor's stop reason, usage, ids; a cost from the catalogue rates.
      expect(t.last.event).toBe('done')
      const run = await vendors.getRun(t.runId)
      const cost = customerCost(c.usage, catalogueEntry(c.model), run.manifest.markup_percent)
      expect(t.last.data).toEqual(plainAnswerDone(c, cost))
      expect(cost).toMatch(DECIMAL)
      expect(moneyUnits(cost)).toBeGreaterThan(0n)

      // The vendor: one call (no retry), to its streaming endpoint, with the key, model, prompt and max tokens.
      const call = only(t.vendorRequests, 'vendor calls')
      expectVendorCall(c, call)
      expect(c.conversation(call.body)).toEqual([c.userMessage(PROMPT)])
      expect(c.maxTokens(call.body)).toBe(run.manifest.max_tokens)

      // The run and the history agree with the stream.
      expect(run).toMatchObject({
        id: t.runId,
        chat_id: chatId,
        model: c.model,
        status: 'succeeded',
        is_live: false,
        error: null,
        cost,
        usage: c.usage,
        provider_request_id: requestIdOf(c, fixture.text.response),
      })
      expect(run.manifest.vendor_model_id).toBe(c.vendorModelId)
      expect(run.settled_at).not.toBeNull()
      expect(await historyParts(chatId)).toEqual([
        { type: 'prompt', text: PROMPT },
        ...c.blocks.map((kind) => (kind === 'reasoning' ? { type: 'reasoning', text: fixture.text.reasoning } : { type: 'message', text: fixture.text.text })),
      ])
    })

    test('a tool call round trip: tool_call block and tool_use stop; the tool_result reaches the vendor answering that call', async () => {
      const chatId = await vendors.newChat()
      vendors.replay.respondNext(c.vendor, fixture.toolCall.response)
      const call = await turn(c, chatId, { input: [{ type: 'prompt', text: TOOL_PROMPT }], tools: TOOLS })

      expect(blockKinds(call.frames)).toEqual(c.toolBlocks)
      const start = call.frames.find((f) => f.event === 'block_start' && f.data.kind === 'tool_call')!
      expect(start.data).toEqual({ kind: 'tool_call', tool_name: 'get_weather', tool_use_id: fixture.toolCall.toolCallId ?? expect.any(String) })
      const toolUseId = start.data.tool_use_id as string
      expect(deltaText(call.frames, 'tool_input')).toBe(fixture.toolCall.arguments)
      expect(deltaText(call.frames, 'text')).toBe(fixture.toolCall.text)
      expect(deltaText(call.frames, 'reasoning')).toBe(fixture.toolCall.reasoning)
      expect(call.last.data).toMatchObject({ stop_reason: 'tool_use', pending_tool_calls: [{ tool_name: 'get_weather', tool_use_id: toolUseId }] })
      const first = only(call.vendorRequests, 'vendor calls for the tool call')
      expectVendorCall(c, first)
      expect(c.toolNames(first.body)).toEqual(['get_weather'])
      expect((await vendors.getRun(call.runId)).status).toBe('succeeded')

      vendors.replay.respondNext(c.vendor, fixture.afterToolResult.response)
      const answer = await turn(c, chatId, {
        input: [{ type: 'tool_result', tool_use_id: toolUseId, tool_name: 'get_weather', text: TOOL_RESULT }],
        tools: TOOLS,
      })
      expect(answer.frames[0]!.data.closed_tool_calls).toEqual([toolUseId])
      expect(deltaText(answer.frames, 'text')).toBe(fixture.afterToolResult.text)
      expect(answer.last.data).toMatchObject({ stop_reason: 'end_turn', pending_tool_calls: [] })

      // The vendor sees its own call (the JSON arguments object) and the result answering it.
      const second = only(answer.vendorRequests, 'vendor calls for the tool result')
      expectVendorCall(c, second)
      expect(c.conversation(second.body)[0]).toEqual(c.userMessage(TOOL_PROMPT))
      expect(c.toolCall(second.body)).toEqual({ id: toolUseId, name: 'get_weather', input: { city: 'Oslo' } })
      expect(c.toolResult(second.body)).toEqual({ id: toolUseId, content: TOOL_RESULT })

      const parts = await historyParts(chatId)
      expect(parts[0]).toEqual({ type: 'prompt', text: TOOL_PROMPT })
      expect(parts).toContainEqual({ type: 'tool_call', arguments: fixture.toolCall.arguments, tool_name: 'get_weather', tool_use_id: toolUseId })
      expect(parts).toContainEqual({ type: 'tool_result', text: TOOL_RESULT, is_error: false, tool_name: 'get_weather', tool_use_id: toolUseId, trust: 'customer_data' })
      expect(parts.at(-1)).toEqual({ type: 'message', text: fixture.afterToolResult.text })
    })

    test(`an HTTP ${fixture.serverError.status} before the stream, every attempt: 502 upstream_error naming the failed run after two retries, billed nothing`, async () => {
      const chatId = await vendors.newChat()
      for (let attempt = 0; attempt < 3; attempt++) vendors.replay.respondNext(c.vendor, fixture.serverError)
      const before = vendors.replay.requestsTo(c.vendor).length
      const answer = await postTurn(vendors.server.url, vendors.devKey, chatId, { model: c.model, input: [{ type: 'prompt', text: PROMPT }] })
      if (answer.ok) throw new Error(`expected HTTP 502, got a stream: ${answer.frames.map((f) => f.event).join(',')}`)
      expect(answer.status, answer.text).toBe(502)
      const error = answer.json().error
      expect(error).toMatchObject({ code: 'upstream_error', details: { run_id: expect.stringMatching(UUID) } })
      expect(error.message).toContain(c.errorMessage)
      // VENDOR_MAX_RETRIES (2 by default) retries before the first byte (decision 015).
      expect(vendors.replay.requestsTo(c.vendor).length - before).toBe(3)

      const run = await vendors.getRun(error.details.run_id)
      expect(run).toMatchObject({ chat_id: chatId, status: 'failed', is_live: false })
      expect(run.error).toContain(c.errorMessage)
      expect(moneyUnits(run.cost)).toBe(0n)
      expect(await historyParts(chatId)).toEqual([{ type: 'prompt', text: PROMPT }])
    })
  })

  test('DeepSeek parallel tool calls overlap in the SDK stream; Parley sends their blocks one after the other', async () => {
    const c = CASES.find((x) => x.vendor === 'deepseek')!
    const chatId = await vendors.newChat()
    vendors.replay.respondNext('deepseek', DEEPSEEK_PARALLEL_CALLS.response)
    const t = await turn(c, chatId, { input: [{ type: 'prompt', text: 'Weather in Oslo and in Bergen?' }], tools: TOOLS })
    expect(completedBlocks(t.frames)).toEqual([
      { kind: 'reasoning', text: DEEPSEEK_PARALLEL_CALLS.reasoning },
      ...DEEPSEEK_PARALLEL_CALLS.calls.map((call) => ({ kind: 'tool_call', tool_name: 'get_weather', tool_use_id: call.id, text: call.arguments })),
    ])
    expect(t.last.data).toMatchObject({
      stop_reason: 'tool_use',
      pending_tool_calls: DEEPSEEK_PARALLEL_CALLS.calls.map((call) => ({ tool_name: 'get_weather', tool_use_id: call.id })),
    })
    expect((await historyParts(chatId)).slice(1)).toEqual([
      { type: 'reasoning', text: DEEPSEEK_PARALLEL_CALLS.reasoning },
      ...DEEPSEEK_PARALLEL_CALLS.calls.map((call) => ({ type: 'tool_call', arguments: call.arguments, tool_name: 'get_weather', tool_use_id: call.id })),
    ])
  })

  describe('prompt caching on the wire (issue 10)', () => {
    /** Every block of an Anthropic request that carries cache_control, named by where it is. */
    const cacheControlled = (body: any) => [
      ...(body.system ?? []).flatMap((b: any, i: number) => (b.cache_control ? [{ where: `system/${i}`, cache_control: b.cache_control }] : [])),
      ...(body.tools ?? []).flatMap((t: any, i: number) => (t.cache_control ? [{ where: `tools/${i}`, cache_control: t.cache_control }] : [])),
      ...body.messages.flatMap((m: any, i: number) =>
        m.content.flatMap((b: any, j: number) => (b.cache_control ? [{ where: `${m.role}/${i}/${b.type}/${j}`, cache_control: b.cache_control }] : [])),
      ),
    ]

    test('Anthropic: a chat’s next turn marks its stable prefix with cache breakpoints (cache_control), at most four', async () => {
      const c = CASES.find((x) => x.vendor === 'anthropic')!
      const chatId = await vendors.newChat()
      await turn(c, chatId, { input: [{ type: 'prompt', text: PROMPT }] })
      const t = await turn(c, chatId, { input: [{ type: 'prompt', text: 'And the capital of Sweden?' }] })
      const request = only(t.vendorRequests, 'vendor calls')
      const marked = cacheControlled(request.body)
      expect(marked.length, JSON.stringify(request.body)).toBeGreaterThan(0)
      expect(marked.length).toBeLessThanOrEqual(4)
      for (const m of marked) expect(m.cache_control).toEqual({ type: 'ephemeral' })
      // No instructions here: the one breakpoint ends the verbatim history (decision 013), the first
      // exchange's answer; the new prompt is not part of the stable prefix.
      expect(request.body.messages.map((m: any) => m.role)).toEqual(['user', 'assistant', 'user'])
      expect(marked).toEqual([{ where: 'assistant/1/text/0', cache_control: { type: 'ephemeral' } }])
    })

    // OpenAI's prompt_cache_key (the chat id) is asserted in process: test/providers/vendor-streams/openai.test.ts.
  })

  describe('Anthropic errors inside a 200 stream', () => {
    const c = CASES.find((x) => x.vendor === 'anthropic')!

    test('an overloaded_error as the first event: 502 upstream_error, the run failed', async () => {
      const chatId = await vendors.newChat()
      vendors.replay.respondNext('anthropic', ANTHROPIC_OVERLOADED_FIRST)
      const answer = await postTurn(vendors.server.url, vendors.devKey, chatId, { model: c.model, input: [{ type: 'prompt', text: PROMPT }] })
      if (answer.ok) throw new Error(`expected HTTP 502, got a stream: ${answer.frames.map((f) => f.event).join(',')}`)
      expect(answer.status, answer.text).toBe(502)
      const error = answer.json().error
      expect(error).toMatchObject({ code: 'upstream_error', details: { run_id: expect.stringMatching(UUID) } })
      expect(error.message).toContain('Overloaded')
      expect((await vendors.getRun(error.details.run_id)).status).toBe('failed')
    })

    test('an overloaded_error mid-answer: an SSE error naming the run, the partial text kept, the run failed', async () => {
      const chatId = await vendors.newChat()
      vendors.replay.respondNext('anthropic', ANTHROPIC_OVERLOADED_MID.response)
      const t = await turn(c, chatId, { input: [{ type: 'prompt', text: PROMPT }] })
      expect(t.last.event).toBe('error')
      expect(t.last.data).toMatchObject({ details: { run_id: t.runId } })
      // The SDK hands Parley Anthropic's error object itself, not an APICallError.
      expect(t.last.data.code).toBe('upstream_error')
      expect(t.last.data.message).toContain('Overloaded')
      expect(deltaText(t.frames, 'text')).toBe(ANTHROPIC_OVERLOADED_MID.partialText)
      const run = await vendors.getRun(t.runId)
      expect(run).toMatchObject({ status: 'failed', is_live: false })
      expect(run.error).toContain('Overloaded')
      expect(await historyParts(chatId)).toEqual([
        { type: 'prompt', text: PROMPT },
        { type: 'message', text: ANTHROPIC_OVERLOADED_MID.partialText },
      ])
    })
  })

  describe('reasoning_effort reaches each vendor as its package takes it (decision 010)', () => {
    // What `reasoning_effort: high` must become in the vendor's request, and the warnings it gives.
    const HIGH: Record<Vendor, { sent: (body: any) => unknown; expected: unknown; warnings: string[] }> = {
      anthropic: { sent: (b) => b.thinking, expected: { type: 'enabled', budget_tokens: 16_384 }, warnings: [] },
      openai: { sent: (b) => b.reasoning, expected: { effort: 'high' }, warnings: [] },
      // Gemini 3.8 Flash takes a thinking level, not a budget.
      google: { sent: (b) => b.generationConfig.thinkingConfig, expected: { thinkingLevel: 'high', includeThoughts: true }, warnings: [] },
      // Mistral Medium does not reason: the effort is coerced off before any vendor call.
      mistral: { sent: (b) => b.reasoning_effort ?? null, expected: null, warnings: ['reasoning_effort_coerced'] },
      // Grok 4.3 on the Responses API: reasoning.effort.
      xai: { sent: (b) => b.reasoning ?? null, expected: { effort: 'high' }, warnings: [] },
      // DeepSeek V4: thinking switched on, at its high effort.
      deepseek: { sent: (b) => ({ thinking: b.thinking, effort: b.reasoning_effort }), expected: { thinking: { type: 'enabled' }, effort: 'high' }, warnings: [] },
    }

    test.each(CASES)('$vendor: high', async (c) => {
      const t = await turn(c, await vendors.newChat(), { input: [{ type: 'prompt', text: PROMPT }], reasoning_effort: 'high', max_tokens: 30_000 })
      expect(t.last.event).toBe('done')
      const body = only(t.vendorRequests, 'vendor requests').body
      expect(HIGH[c.vendor].sent(body)).toEqual(HIGH[c.vendor].expected)
      const warnings = t.frames.find((f) => f.event === 'translation_warnings')!.data.warnings.map((w: { code: string }) => w.code)
      expect(warnings).toEqual(HIGH[c.vendor].warnings)
      // Thinking is spent from max_tokens: answer and thinking together stay within what was asked.
      const manifest = (await vendors.getRun(t.runId)).manifest
      expect(manifest.max_tokens).toBe(30_000)
      if (c.vendor === 'anthropic') expect(c.maxTokens(body)).toBe(30_000)
      // A thinking level takes no budget out of max_tokens.
      if (c.vendor === 'google') expect(c.maxTokens(body)).toBe(30_000)
    })

    test('anthropic: off disables thinking; a max_tokens too small for the least budget turns thinking off with a warning', async () => {
      const c = CASES.find((x) => x.vendor === 'anthropic')!
      const off = await turn(c, await vendors.newChat(), { input: [{ type: 'prompt', text: PROMPT }], reasoning_effort: 'off' })
      expect(only(off.vendorRequests, 'vendor requests').body.thinking).toEqual({ type: 'disabled' })
      const small = await turn(c, await vendors.newChat(), { input: [{ type: 'prompt', text: PROMPT }], reasoning_effort: 'low', max_tokens: 800 })
      expect(only(small.vendorRequests, 'vendor requests').body.thinking).toEqual({ type: 'disabled' })
      const warning = small.frames.find((f) => f.event === 'translation_warnings')!.data.warnings[0]
      expect(warning).toMatchObject({ code: 'reasoning_effort_coerced', details: { requested: 'low', applied: 'off' } })
    })
  })
})
