import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest'
import { expectThinkingReplayed } from '../helpers/reasoning-replay.ts'
import { only } from '../helpers/vendor-cases.ts'
import { completedBlocks, deltaText, moneyUnits, postTurn, type SseFrame } from './turn-client.ts'
import { ANTHROPIC_OVERLOADED_MID } from './vendor-fixtures/anthropic.ts'
import { ANTHROPIC_THINKING_ANSWER, ANTHROPIC_THINKING_TOOL_CALL } from './vendor-fixtures/anthropic-thinking.ts'
import { FIXTURES, type ReplayResponse, type Vendor } from './vendor-fixtures/index.ts'
import type { RecordedRequest } from './vendor-replay-server.ts'
import { startVendorServer, VENDOR_MODELS, type VendorServer } from './vendor-server.ts'

/**
 * Vendor fidelity (issue 11, decision 017) through the real server process and the loopback
 * vendor replay server: what each vendor is sent of thinking signatures, `strict` and `is_error`;
 * the warnings for what it cannot take; the vendor's request id; usage lost as null; budgets only
 * for catalogue models.
 */

const WEATHER = {
  name: 'get_weather',
  description: 'Current weather for a city.',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
}
const STRICT_TOOLS = [{ ...WEATHER, strict: true }]

/** A replayed response's header. */
const header = (r: ReplayResponse, name: string): string => {
  const value = 'headers' in r ? r.headers[name] : undefined
  if (value === undefined) throw new Error(`the fixture has no ${name} header`)
  return value
}
/** Every warning of the stream's `translation_warnings` frames (the opening one, and the vendor's before content). */
const translationWarnings = (frames: SseFrame[]) => frames.filter((f) => f.event === 'translation_warnings').flatMap((f) => f.data.warnings as any[])

describe('vendor fidelity through the real server process (decision 017)', () => {
  let vendors: VendorServer

  /** A turn that streams to its end, with the vendor requests it caused. */
  const turn = async (vendor: Vendor, chatId: string, body: Record<string, unknown>) => {
    const before = vendors.replay.requestsTo(vendor).length
    const answer = await postTurn(vendors.server.url, vendors.devKey, chatId, { model: VENDOR_MODELS[vendor], ...body })
    if (!answer.ok) throw new Error(`expected a stream, got HTTP ${answer.status}: ${answer.text}\n${vendors.server.stderr()}`)
    expect(await answer.closed).toBe('end')
    const frames = answer.frames
    expect(frames.slice(0, 3).map((f) => f.event)).toEqual(['run', 'config_warnings', 'translation_warnings'])
    // Any further translation warnings (the vendor's own) come before content starts (spec §6).
    const firstBlock = frames.findIndex((f) => f.event === 'block_start')
    const lastWarning = frames.map((f) => f.event).lastIndexOf('translation_warnings')
    if (firstBlock >= 0) expect(lastWarning).toBeLessThan(firstBlock)
    return { frames, runId: frames[0]!.data.run_id as string, last: frames.at(-1)!, vendorRequests: vendors.replay.requestsTo(vendor).slice(before) as RecordedRequest[] }
  }

  beforeAll(async () => {
    vendors = await startVendorServer({ name: 'fidelity' })
  })
  afterEach(() => vendors?.replay.clearQueues())
  afterAll(() => vendors?.stop())

  test('Anthropic thinking + tool use: the second request carries the signed thinking block and the redacted one, unchanged, before the tool_use', async () => {
    const fixture = ANTHROPIC_THINKING_TOOL_CALL
    const chatId = await vendors.newChat()
    vendors.replay.respondNext('anthropic', fixture.response)
    const call = await turn('anthropic', chatId, { input: [{ type: 'prompt', text: 'What is the weather in Oslo right now?' }], tools: [WEATHER], reasoning_effort: 'low' })
    expect(call.last.event).toBe('done')
    expect(completedBlocks(call.frames)).toEqual([
      { kind: 'reasoning', text: fixture.thinking },
      // Redacted thinking: a reasoning block with no text (spec §2.4, hidden reasoning).
      { kind: 'reasoning', text: '' },
      { kind: 'tool_call', tool_name: 'get_weather', tool_use_id: fixture.toolUseId, text: fixture.arguments },
    ])
    expect(call.last.data).toMatchObject({ stop_reason: 'tool_use', pending_tool_calls: [{ tool_name: 'get_weather', tool_use_id: fixture.toolUseId }] })
    expect(only(call.vendorRequests, 'first request').body.thinking).toMatchObject({ type: 'enabled' })

    // History never shows the signature or the redacted data (spec §2.4).
    const history = await vendors.api(`/api/v1/chats/${chatId}/history`)
    expect(history.status, history.text).toBe(200)
    expect(history.text).not.toContain(fixture.signature)
    expect(history.text).not.toContain(fixture.redactedData)
    expect((history.json().data as any[]).map((p) => p.part).filter((p) => p.type === 'reasoning')).toEqual([
      { type: 'reasoning', text: fixture.thinking },
      { type: 'reasoning', text: '' },
    ])

    vendors.replay.respondNext('anthropic', ANTHROPIC_THINKING_ANSWER.response)
    const answer = await turn('anthropic', chatId, {
      input: [{ type: 'tool_result', tool_use_id: fixture.toolUseId, tool_name: 'get_weather', text: 'sunny, 21 °C, light breeze' }],
      tools: [WEATHER],
      reasoning_effort: 'low',
    })
    expect(answer.last.event).toBe('done')
    expect(deltaText(answer.frames, 'text')).toBe(ANTHROPIC_THINKING_ANSWER.text)
    // Nothing was lost translating the replay: no warning about reasoning.
    expect(translationWarnings(answer.frames)).toEqual([])

    expectThinkingReplayed(only(answer.vendorRequests, 'second request').body, fixture, 'sunny, 21 °C, light breeze')
    // The run records Anthropic's request id header, not the message id.
    expect((await vendors.getRun(call.runId)).provider_request_id).toBe(fixture.requestId)
  })

  test('the signature goes only to the vendor that made it: the same chat on OpenAI sends no Anthropic data', async () => {
    const fixture = ANTHROPIC_THINKING_TOOL_CALL
    const chatId = await vendors.newChat()
    vendors.replay.respondNext('anthropic', fixture.response)
    await turn('anthropic', chatId, { input: [{ type: 'prompt', text: 'Weather in Oslo?' }], tools: [WEATHER], reasoning_effort: 'low' })
    const t = await turn('openai', chatId, {
      input: [{ type: 'tool_result', tool_use_id: fixture.toolUseId, tool_name: 'get_weather', text: 'sunny' }],
      tools: [WEATHER],
    })
    expect(t.last.event).toBe('done')
    const body = JSON.stringify(only(t.vendorRequests, 'openai request').body)
    expect(body).not.toContain(fixture.signature)
    expect(body).not.toContain(fixture.redactedData)
    // OpenAI's package skips reasoning it cannot replay, and says so: passed through as vendor warnings.
    const vendor = translationWarnings(t.frames).filter((w) => w.code === 'vendor_warning')
    expect(vendor.length).toBeGreaterThan(0)
    for (const w of vendor) {
      expect(w.details).toMatchObject({ provider: 'openai', type: 'other' })
      expect(w.message.length).toBeLessThanOrEqual(501)
    }
    // Run inspection records them with the translation warnings of admission.
    expect((await vendors.getRun(t.runId)).manifest.warnings.translation).toEqual(translationWarnings(t.frames))
  })

  test('strict never reaches DeepSeek, with a strict_dropped warning; the call goes through', async () => {
    const t = await turn('deepseek', await vendors.newChat(), { input: [{ type: 'prompt', text: 'Weather in Oslo?' }], tools: STRICT_TOOLS })
    expect(t.last.event).toBe('done')
    const body = only(t.vendorRequests, 'deepseek request').body
    expect(body.tools).toHaveLength(1)
    expect(body.tools[0].function).not.toHaveProperty('strict')
    expect(translationWarnings(t.frames)).toContainEqual({
      code: 'strict_dropped',
      message: expect.stringContaining('get_weather'),
      details: { provider: 'deepseek', tools: ['get_weather'] },
    })
    // The opening frame has it: it is known before the vendor is called.
    expect(t.frames[2]!.data.warnings.map((w: any) => w.code)).toContain('strict_dropped')
  })

  test.each([
    ['openai', (body: any) => body.tools[0].strict],
    ['mistral', (body: any) => body.tools[0].function.strict],
    ['xai', (body: any) => body.tools[0].strict],
  ] as const)('strict reaches %s, which has it, without a warning', async (vendor, strictOf) => {
    const t = await turn(vendor, await vendors.newChat(), { input: [{ type: 'prompt', text: 'Weather in Oslo?' }], tools: STRICT_TOOLS })
    expect(t.last.event).toBe('done')
    expect(strictOf(only(t.vendorRequests, 'vendor request').body)).toBe(true)
    expect(translationWarnings(t.frames).map((w) => w.code)).not.toContain('strict_dropped')
  })

  test('is_error reaches Anthropic as is_error: true; OpenAI gets no flag (its package wraps the text as {"error": …}) and an is_error_dropped warning', async () => {
    // Anthropic: the result answering its call is flagged.
    const anthropicChat = await vendors.newChat()
    vendors.replay.respondNext('anthropic', FIXTURES.anthropic.toolCall.response)
    const call = await turn('anthropic', anthropicChat, { input: [{ type: 'prompt', text: 'Weather in Oslo?' }], tools: [WEATHER] })
    const toolUseId = call.last.data.pending_tool_calls[0].tool_use_id
    const answered = await turn('anthropic', anthropicChat, {
      input: [{ type: 'tool_result', tool_use_id: toolUseId, tool_name: 'get_weather', text: 'weather service unavailable', is_error: true }],
      tools: [WEATHER],
    })
    const block = only(answered.vendorRequests, 'anthropic request').body.messages.at(-1).content.find((b: any) => b.type === 'tool_result')
    expect(block).toMatchObject({ tool_use_id: toolUseId, content: 'weather service unavailable', is_error: true })
    expect(translationWarnings(answered.frames).map((w) => w.code)).not.toContain('is_error_dropped')

    // OpenAI: no error flag on function_call_output (@ai-sdk/openai 4 sends the text as {"error": text}); the flag's loss is warned, naming the result.
    const openaiChat = await vendors.newChat()
    vendors.replay.respondNext('openai', FIXTURES.openai.toolCall.response)
    const openaiCall = await turn('openai', openaiChat, { input: [{ type: 'prompt', text: 'Weather in Oslo?' }], tools: [WEATHER] })
    const callId = openaiCall.last.data.pending_tool_calls[0].tool_use_id
    const t = await turn('openai', openaiChat, {
      input: [{ type: 'tool_result', tool_use_id: callId, tool_name: 'get_weather', text: 'weather service unavailable', is_error: true }],
      tools: [WEATHER],
    })
    const output = only(t.vendorRequests, 'openai request').body.input.at(-1)
    expect(output).toMatchObject({ type: 'function_call_output', call_id: callId, output: JSON.stringify({ error: 'weather service unavailable' }) })
    expect(t.frames[2]!.data.warnings).toContainEqual({
      code: 'is_error_dropped',
      message: expect.any(String),
      details: { provider: 'openai', tool_use_ids: [callId] },
    })
  })

  test('provider_request_id is the vendor request id header; Google, which sends none, falls back to the response id', async () => {
    const expected: [Vendor, string][] = [
      ['anthropic', header(FIXTURES.anthropic.text.response, 'request-id')],
      ['openai', header(FIXTURES.openai.text.response, 'x-request-id')],
      ['mistral', header(FIXTURES.mistral.text.response, 'mistral-correlation-id')],
      ['xai', header(FIXTURES.xai.text.response, 'x-request-id')],
      ['deepseek', header(FIXTURES.deepseek.text.response, 'x-ds-trace-id')],
    ]
    for (const [vendor, requestId] of expected) {
      const t = await turn(vendor, await vendors.newChat(), { input: [{ type: 'prompt', text: 'Hello' }] })
      expect(t.last.event).toBe('done')
      const run = await vendors.getRun(t.runId)
      expect(run.provider_request_id, vendor).toBe(requestId)
      // done keeps the vendor's response id (spec §6 provider_response_id).
      expect(t.last.data.provider_response_id, vendor).not.toBe(requestId)
    }
    const google = await turn('google', await vendors.newChat(), { input: [{ type: 'prompt', text: 'Hello' }] })
    expect((await vendors.getRun(google.runId)).provider_request_id).toBe(google.last.data.provider_response_id)
  })

  test('a run whose usage was lost reports usage null, and is still billed for what it used', async () => {
    vendors.replay.respondNext('anthropic', ANTHROPIC_OVERLOADED_MID.response)
    const t = await turn('anthropic', await vendors.newChat(), { input: [{ type: 'prompt', text: 'What is the capital of Norway?' }] })
    expect(t.last.event).toBe('error')
    const run = await vendors.getRun(t.runId)
    expect(run).toMatchObject({ status: 'failed', usage: null })
    expect(moneyUnits(run.cost)).toBeGreaterThan(0n)
    expect(run.provider_request_id).toBe(header(ANTHROPIC_OVERLOADED_MID.response, 'request-id'))
  })

  test('a call refused before its stream: provider_request_id from the error answer’s header, usage null, nothing billed', async () => {
    const chatId = await vendors.newChat()
    // Retried before the first byte (decision 015): every attempt gets the same error.
    for (let attempt = 0; attempt < 3; attempt++) vendors.replay.respondNext('anthropic', FIXTURES.anthropic.serverError)
    const answer = await postTurn(vendors.server.url, vendors.devKey, chatId, { model: VENDOR_MODELS.anthropic, input: [{ type: 'prompt', text: 'Hello' }] })
    if (answer.ok) throw new Error(`expected an HTTP error, got a stream: ${answer.frames.map((f) => f.event).join(',')}`)
    expect(answer.status, answer.text).toBe(502)
    const run = await vendors.getRun(answer.json().error.details.run_id)
    expect(run).toMatchObject({ status: 'failed', usage: null, provider_request_id: header(FIXTURES.anthropic.serverError, 'request-id') })
    expect(moneyUnits(run.cost)).toBe(0n)
  })

  test('a budget for an unknown model id answers 422 validation_failed with a pointer; a catalogue model is accepted', async () => {
    const models = (await vendors.api('/api/v1/models')).json() as { id: string; name: string }[]
    const known = models.find((m) => m.name === VENDOR_MODELS.anthropic)!.id
    const unknown = '00000000-0000-4000-8000-000000000000'
    const bad = await vendors.api('/api/v1/config/budgets', { method: 'POST', body: { budget: { version: 3, headroom: 0.2 }, model_ids: [known, unknown] } })
    expect(bad.status, bad.text).toBe(422)
    expect(bad.json().error).toMatchObject({ code: 'validation_failed', details: { problems: [{ in: 'body', pointer: '/model_ids/1', message: expect.stringContaining(unknown) }] } })
    const good = await vendors.api('/api/v1/config/budgets', { method: 'POST', body: { budget: { version: 3, headroom: 0.2 }, model_ids: [known] } })
    expect(good.status, good.text).toBe(200)
    expect(good.json()).toMatchObject([{ model_id: known }])
  })
})
