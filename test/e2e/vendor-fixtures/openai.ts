import { namedEvent, pieces, type ReplayResponse, type VendorFixture } from './wire.ts'

/**
 * OpenAI Responses API, streamed (POST {base}/v1/responses with "stream": true; the default
 * `openai(modelId)` of @ai-sdk/openai 3.x): named events, each also carrying its `type` and a
 * `sequence_number`. A reasoning model answers with a reasoning item whose summary is empty (no
 * summary was asked for), then a message item; usage comes with response.completed.
 */

const MODEL = 'gpt-5-2025-08-07'
const CREATED_AT = 1760547213

const headers = (requestId: string) => ({
  'content-type': 'text/event-stream; charset=utf-8',
  'x-request-id': requestId,
  'openai-processing-ms': '312',
  'openai-version': '2020-10-01',
})

/** The response object as response.created / response.completed carry it. */
const responseObject = (id: string, status: string, output: unknown[], usage: unknown) => ({
  id,
  object: 'response',
  created_at: CREATED_AT,
  status,
  background: false,
  error: null,
  incomplete_details: null,
  instructions: null,
  max_output_tokens: null,
  max_tool_calls: null,
  model: MODEL,
  output,
  parallel_tool_calls: true,
  previous_response_id: null,
  prompt_cache_key: null,
  reasoning: { effort: 'medium', summary: null },
  safety_identifier: null,
  service_tier: 'default',
  store: true,
  temperature: 1.0,
  text: { format: { type: 'text' }, verbosity: 'medium' },
  tool_choice: 'auto',
  tools: [],
  top_logprobs: 0,
  top_p: 1.0,
  truncation: 'disabled',
  usage,
  user: null,
  metadata: {},
})

/** Numbers each event in order, as the API does. */
function sequence() {
  let n = 0
  return (type: string, fields: Record<string, unknown>) => namedEvent(type, { type, sequence_number: n++, ...fields })
}

const reasoningItem = (id: string) => ({ id, type: 'reasoning', summary: [] })
const messageItem = (id: string, text: string | null) => ({
  id,
  type: 'message',
  status: text === null ? 'in_progress' : 'completed',
  content: text === null ? [] : [{ type: 'output_text', annotations: [], logprobs: [], text }],
  role: 'assistant',
})

/** reasoning item (hidden), then a message streamed in `parts`. */
function textStream(ids: { response: string; reasoning: string; message: string }, parts: string[], usage: unknown): string[] {
  const e = sequence()
  const text = parts.join('')
  const reasoning = reasoningItem(ids.reasoning)
  const part = { type: 'output_text', annotations: [], logprobs: [], text: '' }
  return [
    e('response.created', { response: responseObject(ids.response, 'in_progress', [], null) }),
    e('response.in_progress', { response: responseObject(ids.response, 'in_progress', [], null) }),
    e('response.output_item.added', { output_index: 0, item: reasoning }),
    e('response.output_item.done', { output_index: 0, item: reasoning }),
    e('response.output_item.added', { output_index: 1, item: messageItem(ids.message, null) }),
    e('response.content_part.added', { item_id: ids.message, output_index: 1, content_index: 0, part }),
    ...parts.map((delta) => e('response.output_text.delta', { item_id: ids.message, output_index: 1, content_index: 0, delta, logprobs: [], obfuscation: 'Hk3L9x' })),
    e('response.output_text.done', { item_id: ids.message, output_index: 1, content_index: 0, text, logprobs: [] }),
    e('response.content_part.done', { item_id: ids.message, output_index: 1, content_index: 0, part: { ...part, text } }),
    e('response.output_item.done', { output_index: 1, item: messageItem(ids.message, text) }),
    e('response.completed', { response: responseObject(ids.response, 'completed', [reasoning, messageItem(ids.message, text)], usage) }),
  ]
}

const answer = pieces('The capital of Norway', ' is Oslo', '.')
export const OPENAI_RESPONSE_ID = 'resp_0b6a3c9e2f1d4a7c0068ef7a3c5b2c8190a7e6b1f0d4c2e9a1'
/**
 * The recorded text answer with its message streamed in `parts` (the benchmarks stream more deltas
 * than the recording's three). 1320 input tokens, 1152 of them from the prompt cache; 204 output,
 * 192 of them reasoning.
 */
export const openaiTextStream = (parts: string[]): ReplayResponse & { kind: 'stream' } => ({
  kind: 'stream',
  headers: headers('req_7f3a9c1e5b2d48f6a0c4e8b1d3f5a7c9'),
  events: textStream(
    { response: OPENAI_RESPONSE_ID, reasoning: 'rs_0b6a3c9e2f1d4a7c0068ef7a3d11f48190b2a7d0c5e3f9b8e4', message: 'msg_0b6a3c9e2f1d4a7c0068ef7a3e9d5c8190a1c3e5f7b9d2e4f6' },
    parts,
    { input_tokens: 1320, input_tokens_details: { cached_tokens: 1152 }, output_tokens: 204, output_tokens_details: { reasoning_tokens: 192 }, total_tokens: 1524 },
  ),
})
const text = openaiTextStream(answer.parts)

export const OPENAI_CALL_ID = 'call_Jx3tY8pQ2mWv6nR1cK9bLs4D'
const callArguments = ['{"city":', '"Oslo"}']
const toolCall: ReplayResponse = (() => {
  const e = sequence()
  const id = 'resp_0e1f2a3b4c5d6e7f0068ef7b0a4c6e8190d2f4a6b8c0e2d4f6'
  const reasoning = reasoningItem('rs_0e1f2a3b4c5d6e7f0068ef7b0b1d3f8190e5a7c9b1d3f5e7a9')
  const call = { id: 'fc_0e1f2a3b4c5d6e7f0068ef7b0c7e9a8190f1b3d5a7c9e1f3b5', type: 'function_call', call_id: OPENAI_CALL_ID, name: 'get_weather' }
  const args = callArguments.join('')
  return {
    kind: 'stream',
    headers: headers('req_2c4e6a8b0d1f43a5b7c9e1d3f5a7b9c1'),
    events: [
      e('response.created', { response: responseObject(id, 'in_progress', [], null) }),
      e('response.in_progress', { response: responseObject(id, 'in_progress', [], null) }),
      e('response.output_item.added', { output_index: 0, item: reasoning }),
      e('response.output_item.done', { output_index: 0, item: reasoning }),
      e('response.output_item.added', { output_index: 1, item: { ...call, status: 'in_progress', arguments: '' } }),
      ...callArguments.map((delta) => e('response.function_call_arguments.delta', { item_id: call.id, output_index: 1, delta, obfuscation: 'Zk2Qw' })),
      e('response.function_call_arguments.done', { item_id: call.id, output_index: 1, arguments: args }),
      e('response.output_item.done', { output_index: 1, item: { ...call, status: 'completed', arguments: args } }),
      e('response.completed', {
        response: responseObject(id, 'completed', [reasoning, { ...call, status: 'completed', arguments: args }], {
          input_tokens: 311,
          input_tokens_details: { cached_tokens: 0 },
          output_tokens: 86,
          output_tokens_details: { reasoning_tokens: 64 },
          total_tokens: 397,
        }),
      }),
    ],
  }
})()

const weather = pieces('It is sunny in Oslo', ', 21 °C.')
const afterToolResult: ReplayResponse = {
  kind: 'stream',
  headers: headers('req_9e8d7c6b5a4f43e2d1c0b9a8f7e6d5c4'),
  events: textStream(
    { response: 'resp_0f9e8d7c6b5a4f3e0068ef7b2d4f6a8190c1e3a5b7d9f1c3e5', reasoning: 'rs_0f9e8d7c6b5a4f3e0068ef7b2e5a7c8190d2f4b6a8c0e2a4c6', message: 'msg_0f9e8d7c6b5a4f3e0068ef7b2f6b8d8190e3a5c7b9d1f3b5d7' },
    weather.parts,
    { input_tokens: 418, input_tokens_details: { cached_tokens: 0 }, output_tokens: 75, output_tokens_details: { reasoning_tokens: 64 }, total_tokens: 493 },
  ),
}

export const openai: VendorFixture = {
  vendor: 'openai',
  basePath: '/openai/v1',
  isStreamPath: (path) => path === '/openai/v1/responses',
  text: { response: text, text: answer.text, reasoning: '' },
  toolCall: { response: toolCall, text: '', reasoning: '', toolName: 'get_weather', toolCallId: OPENAI_CALL_ID, arguments: callArguments.join('') },
  afterToolResult: { response: afterToolResult, text: weather.text, reasoning: '' },
  serverError: {
    kind: 'json',
    status: 500,
    headers: { 'content-type': 'application/json', 'x-request-id': 'req_5a4b3c2d1e0f49a8b7c6d5e4f3a2b1c0' },
    body: {
      error: {
        message: 'The server had an error while processing your request. Sorry about that!',
        type: 'server_error',
        param: null,
        code: null,
      },
    },
  },
}
