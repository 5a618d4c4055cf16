import { describe, expect, test } from 'vitest'
import { UpstreamError } from '../../../src/domain/errors.ts'
import type { Usage } from '../../../src/domain/pricing/usage.ts'
import { ANTHROPIC_TEXT_ID } from '../../e2e/vendor-fixtures/anthropic.ts'
import { DEEPSEEK_COMPLETION_ID } from '../../e2e/vendor-fixtures/deepseek.ts'
import { GOOGLE_RESPONSE_ID } from '../../e2e/vendor-fixtures/google.ts'
import { FIXTURES, type Vendor } from '../../e2e/vendor-fixtures/index.ts'
import { MISTRAL_COMPLETION_ID } from '../../e2e/vendor-fixtures/mistral.ts'
import { OPENAI_RESPONSE_ID } from '../../e2e/vendor-fixtures/openai.ts'
import { XAI_COMPLETION_ID } from '../../e2e/vendor-fixtures/xai.ts'
import {
  blocksOf,
  catalogueEntry,
  deltaText,
  headerOf,
  nextTurnPrompt,
  PROMPT,
  RECORDED_KEYS,
  RECORDED_MODELS,
  RECORDED_ORIGIN,
  REQUEST_ID_HEADER,
  runRecorded,
  userPrompt,
  WEATHER,
} from '../../helpers/recorded-vendor-run.ts'
import type { RecordedFetchRequest } from '../../helpers/recorded-fetch.ts'

/**
 * Each vendor's recorded wire bytes through its real @ai-sdk package and Parley's run path, in
 * process (test/helpers/recorded-vendor-run.ts): the frames, ledger parts, usage, stop reason and
 * ids a plain answer and a tool call make, the request the package built from Parley's prompt, and
 * a vendor error before the stream. test/e2e/vendors.test.ts takes the same fixtures through the
 * server process and a socket.
 */

const TOOL_PROMPT = 'What is the weather in Oslo right now?'
const TOOL_RESULT = 'sunny, 21 °C, light breeze'

type ToolCallSeen = { id: string; name: string; input: unknown }
type ToolResultSeen = { id: string; content: unknown }
const only = <T>(items: T[], what: string): T => {
  expect(items, what).toHaveLength(1)
  return items[0]!
}

type VendorCase = {
  vendor: Vendor
  vendorModelId: string
  /** The streaming endpoint, from the origin. */
  path: string
  auth: Record<string, string>
  streamed: (r: RecordedFetchRequest) => boolean
  conversation: (body: any) => unknown[]
  userMessage: (text: string) => unknown
  maxTokens: (body: any) => unknown
  toolNames: (body: any) => string[]
  toolCall: (body: any) => ToolCallSeen
  toolResult: (body: any) => ToolResultSeen
  blocks: string[]
  usage: Usage
  modelServed: string | null
  responseId: string
  toolBlocks: string[]
  errorMessage: string
}

const bearer = (vendor: Vendor) => ({ authorization: `Bearer ${RECORDED_KEYS[vendor]}` })

const chatCompletions = {
  conversation: (body: any) => body.messages,
  toolNames: (body: any) => body.tools.map((t: any) => t.function.name),
  toolCall: (body: any): ToolCallSeen => {
    const call = only(body.messages.flatMap((m: any) => (m.role === 'assistant' ? m.tool_calls ?? [] : [])), 'assistant tool calls') as any
    expect(call.type).toBe('function')
    return { id: call.id, name: call.function.name, input: JSON.parse(call.function.arguments) }
  },
  toolResult: (body: any): ToolResultSeen => {
    const message = body.messages.at(-1)
    expect(message.role).toBe('tool')
    return { id: message.tool_call_id, content: message.content }
  },
}

/** The same facts test/e2e/vendors.test.ts holds each vendor to. */
const CASES: VendorCase[] = [
  {
    vendor: 'anthropic',
    vendorModelId: 'claude-sonnet-4-5-20250929',
    path: '/anthropic/v1/messages',
    auth: { 'x-api-key': RECORDED_KEYS.anthropic, 'anthropic-version': '2023-06-01' },
    streamed: (r) => r.body.stream === true,
    conversation: (body) => body.messages,
    userMessage: (text) => ({ role: 'user', content: [{ type: 'text', text }] }),
    maxTokens: (body) => body.max_tokens,
    toolNames: (body) => body.tools.map((t: any) => t.name),
    toolCall: (body) => {
      const block = only(
        body.messages.flatMap((m: any) => (m.role === 'assistant' ? m.content.filter((c: any) => c.type === 'tool_use') : [])),
        'tool_use blocks',
      ) as any
      return { id: block.id, name: block.name, input: block.input }
    },
    toolResult: (body) => {
      const message = body.messages.at(-1)
      expect(message.role).toBe('user')
      const block = only(message.content, 'the last message') as any
      expect(block.type).toBe('tool_result')
      return { id: block.tool_use_id, content: block.content }
    },
    blocks: ['text'],
    // Fresh input excludes the 1536 cache-read and 2104 cache-write tokens.
    usage: { input_tokens: 19, output_tokens: 14, reasoning_tokens: 0, cache_read_tokens: 1536, cache_write_tokens: 2104 },
    modelServed: 'claude-sonnet-4-5-20250929',
    responseId: ANTHROPIC_TEXT_ID,
    toolBlocks: ['text', 'tool_call'],
    errorMessage: 'Overloaded',
  },
  {
    vendor: 'openai',
    vendorModelId: 'gpt-5',
    path: '/openai/v1/responses',
    auth: bearer('openai'),
    streamed: (r) => r.body.stream === true,
    conversation: (body) => body.input,
    userMessage: (text) => ({ role: 'user', content: [{ type: 'input_text', text }] }),
    maxTokens: (body) => body.max_output_tokens,
    toolNames: (body) => body.tools.map((t: any) => t.name),
    toolCall: (body) => {
      const item = only(body.input.filter((i: any) => i.type === 'function_call'), 'function_call items') as any
      return { id: item.call_id, name: item.name, input: JSON.parse(item.arguments) }
    },
    toolResult: (body) => {
      const item = body.input.at(-1)
      expect(item.type).toBe('function_call_output')
      return { id: item.call_id, content: item.output }
    },
    // The reasoning item carries no summary: an empty reasoning block (hidden reasoning).
    blocks: ['reasoning', 'text'],
    // 1320 input, 1152 of them cached; 204 output, 192 of them reasoning.
    usage: { input_tokens: 168, output_tokens: 204, reasoning_tokens: 192, cache_read_tokens: 1152, cache_write_tokens: 0 },
    modelServed: 'gpt-5-2025-08-07',
    responseId: OPENAI_RESPONSE_ID,
    toolBlocks: ['reasoning', 'tool_call'],
    errorMessage: 'The server had an error while processing your request. Sorry about that!',
  },
  {
    vendor: 'google',
    vendorModelId: 'gemini-2.5-flash',
    path: '/google/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse',
    auth: { 'x-goog-api-key': RECORDED_KEYS.google },
    streamed: (r) => r.url.endsWith(':streamGenerateContent?alt=sse'),
    conversation: (body) => body.contents,
    userMessage: (text) => ({ role: 'user', parts: [{ text }] }),
    maxTokens: (body) => body.generationConfig.maxOutputTokens,
    toolNames: (body) => body.tools.flatMap((t: any) => t.functionDeclarations.map((f: any) => f.name)),
    toolCall: (body) => {
      const part = only(
        body.contents.flatMap((c: any) => (c.role === 'model' ? c.parts.filter((p: any) => p.functionCall) : [])),
        'functionCall parts',
      ) as any
      return { id: part.functionCall.id, name: part.functionCall.name, input: part.functionCall.args }
    },
    toolResult: (body) => {
      const content = body.contents.at(-1)
      expect(content.role).toBe('user')
      const part = only(content.parts, 'the last content') as any
      return { id: part.functionResponse.id, content: part.functionResponse.response.content }
    },
    blocks: ['text'],
    // 1290 prompt tokens, 1024 cached; output is 16 answer tokens plus 437 thinking.
    usage: { input_tokens: 266, output_tokens: 453, reasoning_tokens: 437, cache_read_tokens: 1024, cache_write_tokens: 0 },
    // @ai-sdk/google reports responseId but not modelVersion.
    modelServed: null,
    responseId: GOOGLE_RESPONSE_ID,
    toolBlocks: ['tool_call'],
    errorMessage: 'The model is overloaded. Please try again later.',
  },
  {
    vendor: 'mistral',
    vendorModelId: 'mistral-medium-2508',
    path: '/mistral/v1/chat/completions',
    auth: bearer('mistral'),
    streamed: (r) => r.body.stream === true,
    ...chatCompletions,
    userMessage: (text) => ({ role: 'user', content: [{ type: 'text', text }] }),
    maxTokens: (body) => body.max_tokens,
    blocks: ['text'],
    usage: { input_tokens: 14, output_tokens: 9, reasoning_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0 },
    modelServed: 'mistral-medium-2508',
    responseId: MISTRAL_COMPLETION_ID,
    toolBlocks: ['tool_call'],
    errorMessage: 'Internal server error',
  },
  {
    vendor: 'xai',
    vendorModelId: 'grok-4-fast-reasoning',
    path: '/xai/v1/chat/completions',
    auth: bearer('xai'),
    streamed: (r) => r.body.stream === true && r.body.stream_options?.include_usage === true,
    ...chatCompletions,
    userMessage: (text) => ({ role: 'user', content: text }),
    maxTokens: (body) => body.max_completion_tokens,
    blocks: ['text'],
    // 180 prompt tokens, 128 cached; 8 answer tokens plus 223 reasoning.
    usage: { input_tokens: 52, output_tokens: 231, reasoning_tokens: 223, cache_read_tokens: 128, cache_write_tokens: 0 },
    modelServed: 'grok-4-fast-reasoning',
    responseId: XAI_COMPLETION_ID,
    toolBlocks: ['tool_call'],
    errorMessage: 'Service temporarily unavailable. The model is at capacity',
  },
  {
    vendor: 'deepseek',
    vendorModelId: 'deepseek-reasoner',
    path: '/deepseek/chat/completions',
    auth: bearer('deepseek'),
    streamed: (r) => r.body.stream === true && r.body.stream_options?.include_usage === true,
    ...chatCompletions,
    userMessage: (text) => ({ role: 'user', content: text }),
    maxTokens: (body) => body.max_tokens,
    blocks: ['reasoning', 'text'],
    // 1046 prompt tokens, 1024 cache hits; 62 completion tokens, 48 of them reasoning.
    usage: { input_tokens: 22, output_tokens: 62, reasoning_tokens: 48, cache_read_tokens: 1024, cache_write_tokens: 0 },
    modelServed: 'deepseek-reasoner',
    responseId: DEEPSEEK_COMPLETION_ID,
    toolBlocks: ['reasoning', 'tool_call'],
    errorMessage: 'Server overloaded, please try again later.',
  },
]

const DELTA_KIND: Record<string, string> = { text: 'text', reasoning: 'reasoning', refusal: 'refusal', tool_call: 'tool_input' }

/** The run's own frames as docs/guide/streaming.md orders them: warnings before content, blocks one at a time, one terminal frame. */
function expectWellFormed(frames: { event: string; data: any }[]): void {
  const events = frames.map((f) => f.event)
  const trace = events.join(',')
  expect(['done', 'error'], trace).toContain(events.at(-1))
  let open: string | null = null
  let started = false
  for (const f of frames.slice(0, -1)) {
    if (f.event === 'translation_warnings') expect(started, `translation_warnings after content started: ${trace}`).toBe(false)
    else if (f.event === 'block_start') {
      started = true
      expect(open, `block_start inside an open ${open} block: ${trace}`).toBeNull()
      open = f.data.kind
    } else if (f.event === 'delta') {
      expect(open, `delta outside a block: ${trace}`).not.toBeNull()
      expect(f.data.kind, trace).toBe(DELTA_KIND[open!])
      expect(typeof f.data.text).toBe('string')
    } else if (f.event === 'block_stop') {
      expect(open, `block_stop without a block: ${trace}`).not.toBeNull()
      open = null
    } else throw new Error(`unexpected ${f.event} frame inside the stream: ${trace}`)
  }
  if (events.at(-1) === 'done') expect(open, trace).toBeNull()
}

const blockKinds = (frames: { event: string; data: any }[]) => frames.filter((f) => f.event === 'block_start').map((f) => f.data.kind as string)

/** What went to the vendor on every call: endpoint, key, model and a stream. */
function expectVendorCall(c: VendorCase, r: RecordedFetchRequest): void {
  expect(r.method).toBe('POST')
  expect(r.url).toBe(`${RECORDED_ORIGIN}${c.path}`)
  expect(r.headers['content-type']).toMatch(/^application\/json/)
  for (const [header, value] of Object.entries(c.auth)) expect(r.headers[header], header).toBe(value)
  if (c.vendor !== 'google') expect(r.body.model).toBe(c.vendorModelId)
  expect(c.streamed(r), JSON.stringify(r.body)).toBe(true)
}

describe.each(CASES)('$vendor, from its recorded wire bytes', (c) => {
  const fixture = FIXTURES[c.vendor]

  test('a plain answer: its blocks and text, usage, stop reason, ids and cost; the request the package built', async () => {
    const run = await runRecorded(c.vendor, [fixture.text.response], { maxTokens: 1024 })
    expectWellFormed(run.frames)
    expect(blockKinds(run.frames)).toEqual(c.blocks)
    expect(deltaText(run.frames, 'text')).toBe(fixture.text.text)
    expect(deltaText(run.frames, 'reasoning')).toBe(fixture.text.reasoning)
    expect(run.frames.filter((f) => f.event === 'delta').length).toBeGreaterThan(1)
    // No vendor warning on a plain request: no translation_warnings frame from the stream.
    expect(run.frames.filter((f) => f.event === 'translation_warnings')).toEqual([])
    expect(run.recordedWarnings).toEqual([])

    expect(run.outcome).toMatchObject({
      status: 'succeeded',
      error: null,
      stopReason: 'end_turn',
      usage: c.usage,
      usageLost: false,
      providerResponseId: c.responseId,
      modelServed: c.modelServed,
      pendingToolCalls: [],
      streamOpened: true,
      vendorRequests: 1,
    })
    const header = REQUEST_ID_HEADER[c.vendor]
    expect(run.outcome.providerRequestId).toBe(header === null ? c.responseId : headerOf(fixture.text.response, header))
    expect(run.frames.at(-1)).toEqual({
      event: 'done',
      data: {
        compaction: null,
        cost: run.cost,
        cost_currency: 'USD',
        model_served: c.modelServed,
        pending_tool_calls: [],
        provider_response_id: c.responseId,
        server_tools: null,
        stop_reason: 'end_turn',
        usage: c.usage,
      },
    })
    expect(Number(run.cost)).toBeGreaterThan(0)
    expect(run.persisted).toEqual(
      c.blocks.map((kind) => (kind === 'reasoning' ? expect.objectContaining({ type: 'reasoning', text: fixture.text.reasoning }) : { type: 'message', text: fixture.text.text })),
    )

    const call = only(run.requests, 'vendor calls')
    expectVendorCall(c, call)
    expect(c.conversation(call.body)).toEqual([c.userMessage(PROMPT)])
    expect(c.maxTokens(call.body)).toBe(1024)
  })

  test('a tool call, then its result: tool_call block and tool_use stop; the next request carries the call and the result answering it', async () => {
    const call = await runRecorded(c.vendor, [fixture.toolCall.response], { prompt: userPrompt(TOOL_PROMPT), tools: [WEATHER] })
    expectWellFormed(call.frames)
    expect(blockKinds(call.frames)).toEqual(c.toolBlocks)
    const start = call.frames.find((f) => f.event === 'block_start' && f.data.kind === 'tool_call')!
    expect(start.data).toEqual({ kind: 'tool_call', tool_name: 'get_weather', tool_use_id: fixture.toolCall.toolCallId ?? expect.any(String) })
    const toolUseId = start.data.tool_use_id as string
    expect(deltaText(call.frames, 'tool_input')).toBe(fixture.toolCall.arguments)
    expect(deltaText(call.frames, 'text')).toBe(fixture.toolCall.text)
    expect(deltaText(call.frames, 'reasoning')).toBe(fixture.toolCall.reasoning)
    expect(call.outcome).toMatchObject({ status: 'succeeded', stopReason: 'tool_use', pendingToolCalls: [{ tool_name: 'get_weather', tool_use_id: toolUseId }] })
    expect(call.frames.at(-1)!.data).toMatchObject({ stop_reason: 'tool_use', pending_tool_calls: [{ tool_name: 'get_weather', tool_use_id: toolUseId }] })
    expect(call.persisted).toContainEqual(expect.objectContaining({ type: 'tool_call', arguments: fixture.toolCall.arguments, tool_name: 'get_weather', tool_use_id: toolUseId }))
    const first = only(call.requests, 'vendor calls for the tool call')
    expectVendorCall(c, first)
    expect(c.toolNames(first.body)).toEqual(['get_weather'])

    const prompt = nextTurnPrompt(c.vendor, [
      { type: 'prompt', text: TOOL_PROMPT },
      ...call.persisted,
      { type: 'tool_result', text: TOOL_RESULT, is_error: false, tool_name: 'get_weather', tool_use_id: toolUseId, trust: 'customer_data' },
    ])
    const answer = await runRecorded(c.vendor, [fixture.afterToolResult.response], { prompt, tools: [WEATHER] })
    expectWellFormed(answer.frames)
    expect(deltaText(answer.frames, 'text')).toBe(fixture.afterToolResult.text)
    expect(answer.outcome).toMatchObject({ status: 'succeeded', stopReason: 'end_turn', pendingToolCalls: [] })
    expect(answer.persisted.at(-1)).toEqual({ type: 'message', text: fixture.afterToolResult.text })

    const second = only(answer.requests, 'vendor calls for the tool result')
    expectVendorCall(c, second)
    expect(c.conversation(second.body)[0]).toEqual(c.userMessage(TOOL_PROMPT))
    expect(c.toolCall(second.body)).toEqual({ id: toolUseId, name: 'get_weather', input: { city: 'Oslo' } })
    expect(c.toolResult(second.body)).toEqual({ id: toolUseId, content: TOOL_RESULT })
  })

  test(`an HTTP ${fixture.serverError.status} before the stream, every attempt: upstream_error with the vendor's message after two retries, nothing streamed`, async () => {
    const run = await runRecorded(c.vendor, [fixture.serverError, fixture.serverError, fixture.serverError])
    // VENDOR_MAX_RETRIES (2 by default) retries before the first byte (decision 015).
    expect(run.requests).toHaveLength(3)
    expect(run.opening.ok).toBe(false)
    const error = (run.opening as { ok: false; error: UpstreamError }).error
    expect(error).toBeInstanceOf(UpstreamError)
    expect(error.code).toBe('upstream_error')
    expect(error.message).toContain(c.errorMessage)
    expect(error.details).toEqual({ run_id: expect.any(String) })
    expect(run.outcome).toMatchObject({ status: 'failed', streamOpened: false, vendorRequests: 3, usageLost: true, error: { code: 'upstream_error' } })
    expect(run.outcome.error!.message).toContain(c.errorMessage)
    // Nothing reached the provider's answer: nothing is billed for input or output.
    expect(run.outcome.usage).toEqual({ input_tokens: 0, output_tokens: 0, reasoning_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0 })
    expect(Number(run.cost)).toBe(0)
    // A failure before the stream is the HTTP answer's, not a frame.
    expect(run.frames).toEqual([])
    expect(run.persisted).toEqual([])
    // The request id from the error answer's header, where the vendor sends one.
    const header = REQUEST_ID_HEADER[c.vendor]
    const requestId = header === null ? undefined : headerOf(fixture.serverError, header)
    expect(run.outcome.providerRequestId).toBe(requestId ?? null)
  })

  test('an error answer the vendor fetch does not retry (400): one request, the vendor message in the run’s error', async () => {
    const refusal = { ...fixture.serverError, status: 400 }
    const run = await runRecorded(c.vendor, [refusal])
    expect(run.requests).toHaveLength(1)
    expect(run.outcome).toMatchObject({ status: 'failed', vendorRequests: 1, error: { code: 'upstream_error' } })
    expect(run.outcome.error!.message).toMatch(/^the provider failed before answering: /)
    expect(run.outcome.error!.message).toContain(c.errorMessage)
  })
})

test('the catalogue models the fixtures answer for are the vendors’ own', () => {
  for (const c of CASES) expect(catalogueEntry(RECORDED_MODELS[c.vendor]).vendor_model_id).toBe(c.vendorModelId)
})
