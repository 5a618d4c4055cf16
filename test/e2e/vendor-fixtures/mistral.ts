import { DONE, dataEvent, pieces, type ReplayResponse, type VendorFixture } from './wire.ts'

/**
 * Mistral chat completions, streamed (POST {base}/v1/chat/completions with "stream": true):
 * `data:` chunks of `chat.completion.chunk`, the first carrying the role and empty content, usage on
 * the chunk with finish_reason, then `data: [DONE]`. Tool calls arrive whole in one chunk.
 */

const MODEL = 'mistral-medium-2508'

const headers = (requestId: string) => ({
  'content-type': 'text/event-stream; charset=utf-8',
  'mistral-correlation-id': requestId,
  'x-kong-request-id': requestId.replace(/-/g, '').slice(0, 24),
})

const chunk = (id: string, created: number, delta: Record<string, unknown>, finishReason: string | null, usage?: unknown) =>
  dataEvent({
    id,
    object: 'chat.completion.chunk',
    created,
    model: MODEL,
    choices: [{ index: 0, delta, finish_reason: finishReason }],
    ...(usage ? { usage } : {}),
  })

function textStream(id: string, created: number, parts: string[], usage: unknown): string[] {
  return [
    chunk(id, created, { role: 'assistant', content: '' }, null),
    ...parts.map((content) => chunk(id, created, { content }, null)),
    chunk(id, created, { content: '' }, 'stop', usage),
    DONE,
  ]
}

const answer = pieces('The capital', ' of Norway is', ' Oslo.')
export const MISTRAL_COMPLETION_ID = '0b4f9d2c7e1a4f6b8c3d5e7f9a1b2c4d'
const text: ReplayResponse = {
  kind: 'stream',
  headers: headers('01992f6a-3c5e-7b1d-9f2a-4c6e8b0d2f4a'),
  events: textStream(MISTRAL_COMPLETION_ID, 1760547301, answer.parts, { prompt_tokens: 14, total_tokens: 23, completion_tokens: 9 }),
}

export const MISTRAL_CALL_ID = 'D681PevKs'
const callArguments = '{"city": "Oslo"}'
const toolCall: ReplayResponse = {
  kind: 'stream',
  headers: headers('01992f6a-5e7a-7c3f-8b4d-6e8a0c2e4b6d'),
  events: [
    chunk('5c7e9a1b3d5f4e6a8b0c2d4e6f8a0b1c', 1760547315, { role: 'assistant', content: '' }, null),
    chunk(
      '5c7e9a1b3d5f4e6a8b0c2d4e6f8a0b1c',
      1760547315,
      { tool_calls: [{ id: MISTRAL_CALL_ID, function: { name: 'get_weather', arguments: callArguments }, index: 0 }] },
      'tool_calls',
      { prompt_tokens: 97, total_tokens: 117, completion_tokens: 20 },
    ),
    DONE,
  ],
}

const weather = pieces('It is sunny in Oslo', ' and 21 °C.')
const afterToolResult: ReplayResponse = {
  kind: 'stream',
  headers: headers('01992f6a-7a9c-7e5b-a6f8-8a0c2e4b6d8f'),
  events: textStream('7e9a1b3d5f7a4c8e0b2d4f6a8c0e2b3d', 1760547322, weather.parts, { prompt_tokens: 139, total_tokens: 151, completion_tokens: 12 }),
}

export const mistral: VendorFixture = {
  vendor: 'mistral',
  basePath: '/mistral/v1',
  isStreamPath: (path) => path === '/mistral/v1/chat/completions',
  text: { response: text, text: answer.text, reasoning: '' },
  toolCall: { response: toolCall, text: '', reasoning: '', toolName: 'get_weather', toolCallId: MISTRAL_CALL_ID, arguments: callArguments },
  afterToolResult: { response: afterToolResult, text: weather.text, reasoning: '' },
  serverError: {
    kind: 'json',
    status: 500,
    headers: { 'content-type': 'application/json' },
    body: { object: 'error', message: 'Internal server error', type: 'internal_server_error', param: null, code: '1000' },
  },
}

/**
 * Parallel tool calls with no `index` on the tool_calls entries (optional in Mistral's schema, and
 * left out): two whole calls in one chunk, told apart by their ids alone, with finish_reason and
 * usage. A reader that keyed calls by index would merge the two into one call.
 */
export const MISTRAL_TOOL_CALLS_WITHOUT_INDEX = (() => {
  const id = '9a1c3e5b7d9f4a2c6e8b0d2f4a6c8e0b'
  const calls = [
    { id: 'Xq7Lm2Tp9', city: 'Oslo', arguments: '{"city": "Oslo"}' },
    { id: 'Rk4Vn8Ws1', city: 'Bergen', arguments: '{"city": "Bergen"}' },
  ]
  const usage = { prompt_tokens: 104, total_tokens: 148, completion_tokens: 44 }
  return {
    calls: calls.map((c) => ({ id: c.id, arguments: c.arguments })),
    usage,
    response: {
      kind: 'stream',
      headers: headers('01992f6a-9cbe-7a7d-b8a0-0c2e4a6c8e1f'),
      events: [
        chunk(id, 1760547330, { role: 'assistant', content: '' }, null),
        chunk(id, 1760547330, { tool_calls: calls.map((c) => ({ id: c.id, function: { name: 'get_weather', arguments: c.arguments } })) }, 'tool_calls', usage),
        DONE,
      ],
    } satisfies ReplayResponse,
  }
})()
