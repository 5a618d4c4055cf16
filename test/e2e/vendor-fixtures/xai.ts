import { dataEvent, pieces, type ReplayResponse, type VendorFixture } from './wire.ts'

/**
 * xAI Responses API, streamed (POST {base}/v1/responses with "stream": true; the only language
 * model of @ai-sdk/xai 5.x, which removed Chat Completions). The shape follows a recorded grok-4.3
 * stream (vercel/ai packages/xai/src/responses/__fixtures__/issue-17936-stream.chunks.txt, read
 * 2026-11-28): `data:` lines only, each event carrying its `type` and `sequence_number`; a
 * reasoning item whose summary streams as text, then the message; usage on response.completed,
 * where output_tokens already counts the reasoning tokens. Function calls arrive whole in their
 * output item.
 */

const MODEL = 'grok-4.3'
const CREATED_AT = 1785220808
const FINGERPRINT = 'fp_eb3c003fc66c14ed'

const headers = (requestId: string) => ({
  'content-type': 'text/event-stream',
  'x-request-id': requestId,
  'x-zero-data-retention': 'false',
})

/** The response object as response.created / response.completed carry it. */
const responseObject = (id: string, status: string, output: unknown[], usage: unknown) => ({
  created_at: CREATED_AT,
  completed_at: status === 'completed' ? CREATED_AT + 1 : null,
  id,
  max_output_tokens: null,
  model: MODEL,
  object: 'response',
  output,
  parallel_tool_calls: true,
  previous_response_id: null,
  reasoning: { effort: null, summary: null },
  temperature: null,
  text: { format: { type: 'text' } },
  tool_choice: 'auto',
  tools: [],
  top_p: null,
  usage,
  user: null,
  incomplete_details: null,
  status,
  store: false,
  metadata: { system_fingerprint: FINGERPRINT },
  background: false,
  service_tier: 'default',
  truncation: 'disabled',
  error: null,
  instructions: null,
})

/** Numbers each event in order, as the API does. */
function sequence() {
  let n = 0
  return (type: string, fields: Record<string, unknown>) => dataEvent({ sequence_number: n++, type, ...fields })
}

type Counts = { input: number; cached: number; output: number; reasoning: number }
const usage = (c: Counts) => ({
  input_tokens: c.input,
  input_tokens_details: { cached_tokens: c.cached },
  output_tokens: c.output,
  output_tokens_details: { reasoning_tokens: c.reasoning },
  total_tokens: c.input + c.output,
  num_sources_used: 0,
  num_server_side_tools_used: 0,
})

const reasoningItem = (id: string, summary: string | null) => ({
  id,
  summary: summary === null ? [] : [{ text: summary, type: 'summary_text' }],
  type: 'reasoning',
  status: summary === null ? 'in_progress' : 'completed',
})
const messageItem = (id: string, text: string | null) => ({
  content: text === null ? [] : [{ type: 'output_text', text, logprobs: [], annotations: [] }],
  id,
  role: 'assistant',
  type: 'message',
  status: text === null ? 'in_progress' : 'completed',
})

/** The reasoning summary streamed in `thought`, then a message streamed in `parts`. */
function textStream(id: string, thought: string[], parts: string[], counts: Counts): string[] {
  const e = sequence()
  const rs = `rs_${id}`
  const msg = `msg_${id}`
  const summary = thought.join('')
  const text = parts.join('')
  const part = { type: 'output_text', text: '', logprobs: [], annotations: [] }
  return [
    e('response.created', { response: responseObject(id, 'in_progress', [], null) }),
    e('response.in_progress', { response: responseObject(id, 'in_progress', [], null) }),
    e('response.output_item.added', { item: reasoningItem(rs, null), output_index: 0 }),
    e('response.reasoning_summary_part.added', { item_id: rs, output_index: 0, part: { text: '', type: 'summary_text' }, summary_index: 0 }),
    ...thought.map((delta) => e('response.reasoning_summary_text.delta', { delta, item_id: rs, output_index: 0, summary_index: 0 })),
    e('response.reasoning_summary_text.done', { item_id: rs, output_index: 0, summary_index: 0, text: summary }),
    e('response.reasoning_summary_part.done', { item_id: rs, output_index: 0, part: { text: summary, type: 'summary_text' }, summary_index: 0 }),
    e('response.output_item.done', { item: reasoningItem(rs, summary), output_index: 0 }),
    e('response.output_item.added', { item: messageItem(msg, null), output_index: 1 }),
    e('response.content_part.added', { content_index: 0, item_id: msg, output_index: 1, part }),
    ...parts.map((delta) => e('response.output_text.delta', { content_index: 0, delta, item_id: msg, output_index: 1, logprobs: [] })),
    e('response.output_text.done', { content_index: 0, item_id: msg, output_index: 1, text, logprobs: [] }),
    e('response.content_part.done', { content_index: 0, item_id: msg, output_index: 1, part: { ...part, text } }),
    e('response.output_item.done', { item: messageItem(msg, text), output_index: 1 }),
    e('response.completed', { response: responseObject(id, 'completed', [reasoningItem(rs, summary), messageItem(msg, text)], usage(counts)) }),
  ]
}

const thought = pieces('The user asks', ' for the capital of Norway.')
const answer = pieces('The', ' capital of Norway', ' is Oslo.')
export const XAI_RESPONSE_ID = '3d1f7e2a-9b4c-4e8d-a6f0-5c2b8e1d7a94'
/** 180 input tokens, 128 of them cached; 231 output, 223 of them reasoning. */
const text: ReplayResponse = {
  kind: 'stream',
  headers: headers('9b8f2c4e-6a1d-4e3b-b7c5-2d9f0a6e8c13'),
  events: textStream(XAI_RESPONSE_ID, thought.parts, answer.parts, { input: 180, cached: 128, output: 231, reasoning: 223 }),
}

export const XAI_CALL_ID = 'call_47516915'
const callArguments = '{"city":"Oslo"}'
const toolCall: ReplayResponse = (() => {
  const e = sequence()
  const id = '5a7c9e1b-3d5f-4b7d-9f1a-3c5e7a9b1d2f'
  const call = { type: 'function_call', name: 'get_weather', arguments: callArguments, call_id: XAI_CALL_ID, id: `fc_${id}`, status: 'completed' }
  return {
    kind: 'stream',
    headers: headers('4e6a8c0b-2d4f-4a6c-8e0b-2d4f6a8c0e1f'),
    events: [
      e('response.created', { response: responseObject(id, 'in_progress', [], null) }),
      e('response.in_progress', { response: responseObject(id, 'in_progress', [], null) }),
      e('response.output_item.added', { item: call, output_index: 0 }),
      e('response.function_call_arguments.done', { item_id: call.id, output_index: 0, arguments: callArguments }),
      e('response.output_item.done', { item: call, output_index: 0 }),
      e('response.completed', { response: responseObject(id, 'completed', [call], usage({ input: 412, cached: 0, output: 175, reasoning: 148 })) }),
    ],
  }
})()

const weatherThought = pieces('The tool says', ' sunny and 21 °C.')
const weather = pieces('Sunny in Oslo', ', 21 °C.')
const afterToolResult: ReplayResponse = {
  kind: 'stream',
  headers: headers('6c8e0a2d-4f6b-4c8e-a0b2-4f6a8c0e2a3b'),
  events: textStream('7e9a1c3d-5f7b-4d9f-b1c3-5e7a9c1e3b4d', weatherThought.parts, weather.parts, { input: 470, cached: 384, output: 105, reasoning: 96 }),
}

export const xai: VendorFixture = {
  vendor: 'xai',
  basePath: '/xai/v1',
  isStreamPath: (path) => path === '/xai/v1/responses',
  text: { response: text, text: answer.text, reasoning: thought.text },
  toolCall: { response: toolCall, text: '', reasoning: '', toolName: 'get_weather', toolCallId: XAI_CALL_ID, arguments: callArguments },
  afterToolResult: { response: afterToolResult, text: weather.text, reasoning: weatherThought.text },
  serverError: {
    kind: 'json',
    status: 500,
    headers: { 'content-type': 'application/json' },
    body: { code: 'Internal error', error: 'Service temporarily unavailable. The model is at capacity and currently cannot serve this request. Please try again later.' },
  },
}

/**
 * Usage as the Responses API reports it: only on response.completed, with output_tokens already
 * counting the reasoning (unlike xAI's former chat completions, whose completion_tokens left it out).
 * The run's usage is that event's, not a sum.
 */
const completedThought = pieces('Plain', ' fact.')
const completedAnswer = pieces('Oslo', ' is the capital of Norway.')
export const XAI_USAGE_IN_COMPLETED_ID = '8c2e4a6f-1b3d-4f5a-9c7e-0d2f4b6a8c15'
export const XAI_USAGE_IN_COMPLETED = {
  text: completedAnswer.text,
  reasoning: completedThought.text,
  counts: { input: 164, cached: 64, output: 195, reasoning: 188 },
  response: {
    kind: 'stream',
    headers: headers('2a4c6e8f-0b1d-4a3c-8e5f-7b9d1f3a5c26'),
    events: textStream(XAI_USAGE_IN_COMPLETED_ID, completedThought.parts, completedAnswer.parts, { input: 164, cached: 64, output: 195, reasoning: 188 }),
  } satisfies ReplayResponse,
}
