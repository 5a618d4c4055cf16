import { DONE, dataEvent, pieces, type ReplayResponse, type VendorFixture } from './wire.ts'

/**
 * xAI chat completions, streamed (POST {base}/v1/chat/completions with "stream": true and
 * stream_options.include_usage; the default `xai(modelId)` of @ai-sdk/xai 3.x): `data:` chunks,
 * usage on the last one, then `data: [DONE]`. Grok reasons without showing it: completion_tokens
 * counts the answer only and completion_tokens_details.reasoning_tokens the hidden thinking. Tool
 * calls arrive whole.
 */

const MODEL = 'grok-4-fast-reasoning'
const FINGERPRINT = 'fp_9362061f30'

const headers = (requestId: string) => ({
  'content-type': 'text/event-stream',
  'x-request-id': requestId,
  'x-zero-data-retention': 'false',
})

const chunk = (id: string, created: number, choice: Record<string, unknown> | null, usage?: unknown) =>
  dataEvent({
    id,
    object: 'chat.completion.chunk',
    created,
    model: MODEL,
    choices: choice ? [{ index: 0, ...choice }] : [],
    ...(usage ? { usage } : {}),
    system_fingerprint: FINGERPRINT,
  })

type Counts = { prompt: number; cached: number; completion: number; reasoning: number }
const usage = (c: Counts) => ({
  prompt_tokens: c.prompt,
  completion_tokens: c.completion,
  total_tokens: c.prompt + c.completion + c.reasoning,
  prompt_tokens_details: { text_tokens: c.prompt, audio_tokens: 0, image_tokens: 0, cached_tokens: c.cached },
  completion_tokens_details: { reasoning_tokens: c.reasoning, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  num_sources_used: 0,
})

function textStream(id: string, created: number, parts: string[], counts: Counts): string[] {
  return [
    ...parts.map((content, i) => chunk(id, created, { delta: i === 0 ? { content, role: 'assistant' } : { content } })),
    chunk(id, created, { delta: {}, finish_reason: 'stop' }, usage(counts)),
    DONE,
  ]
}

const answer = pieces('The', ' capital of Norway', ' is Oslo.')
export const XAI_COMPLETION_ID = '3d1f7e2a-9b4c-4e8d-a6f0-5c2b8e1d7a94'
/** 180 prompt tokens, 128 of them cached; 8 answer tokens after 223 of reasoning. */
const text: ReplayResponse = {
  kind: 'stream',
  headers: headers('9b8f2c4e-6a1d-4e3b-b7c5-2d9f0a6e8c13'),
  events: textStream(XAI_COMPLETION_ID, 1760547401, answer.parts, { prompt: 180, cached: 128, completion: 8, reasoning: 223 }),
}

export const XAI_CALL_ID = 'call_47516915'
const callArguments = '{"city":"Oslo"}'
const toolCall: ReplayResponse = {
  kind: 'stream',
  headers: headers('4e6a8c0b-2d4f-4a6c-8e0b-2d4f6a8c0e1f'),
  events: [
    chunk('5a7c9e1b-3d5f-4b7d-9f1a-3c5e7a9b1d2f', 1760547415, {
      delta: { role: 'assistant', tool_calls: [{ id: XAI_CALL_ID, function: { name: 'get_weather', arguments: callArguments }, index: 0, type: 'function' }] },
    }),
    chunk('5a7c9e1b-3d5f-4b7d-9f1a-3c5e7a9b1d2f', 1760547415, { delta: {}, finish_reason: 'tool_calls' }, usage({ prompt: 412, cached: 0, completion: 27, reasoning: 148 })),
    DONE,
  ],
}

const weather = pieces('Sunny in Oslo', ', 21 °C.')
const afterToolResult: ReplayResponse = {
  kind: 'stream',
  headers: headers('6c8e0a2d-4f6b-4c8e-a0b2-4f6a8c0e2a3b'),
  events: textStream('7e9a1c3d-5f7b-4d9f-b1c3-5e7a9c1e3b4d', 1760547423, weather.parts, { prompt: 470, cached: 384, completion: 9, reasoning: 96 }),
}

export const xai: VendorFixture = {
  vendor: 'xai',
  basePath: '/xai/v1',
  isStreamPath: (path) => path === '/xai/v1/chat/completions',
  text: { response: text, text: answer.text, reasoning: '' },
  toolCall: { response: toolCall, text: '', reasoning: '', toolName: 'get_weather', toolCallId: XAI_CALL_ID, arguments: callArguments },
  afterToolResult: { response: afterToolResult, text: weather.text, reasoning: '' },
  serverError: {
    kind: 'json',
    status: 500,
    headers: { 'content-type': 'application/json' },
    body: { code: 'Internal error', error: 'Service temporarily unavailable. The model is at capacity and currently cannot serve this request. Please try again later.' },
  },
}

/**
 * Usage in a chunk of its own, as stream_options.include_usage documents it: the chunk with
 * finish_reason carries no usage, and one more chunk follows with `choices: []` and the usage,
 * then `data: [DONE]`. The run's usage is that last chunk's.
 */
const lateUsageAnswer = pieces('Oslo', ' is the capital of Norway.')
export const XAI_USAGE_AFTER_FINISH_ID = '8c2e4a6f-1b3d-4f5a-9c7e-0d2f4b6a8c15'
export const XAI_USAGE_AFTER_FINISH = {
  text: lateUsageAnswer.text,
  counts: { prompt: 164, cached: 0, completion: 7, reasoning: 188 },
  response: {
    kind: 'stream',
    headers: headers('2a4c6e8f-0b1d-4a3c-8e5f-7b9d1f3a5c26'),
    events: [
      ...lateUsageAnswer.parts.map((content, i) =>
        chunk(XAI_USAGE_AFTER_FINISH_ID, 1760547430, { delta: i === 0 ? { content, role: 'assistant' } : { content } }),
      ),
      chunk(XAI_USAGE_AFTER_FINISH_ID, 1760547430, { delta: {}, finish_reason: 'stop' }),
      chunk(XAI_USAGE_AFTER_FINISH_ID, 1760547430, null, usage({ prompt: 164, cached: 0, completion: 7, reasoning: 188 })),
      DONE,
    ],
  } satisfies ReplayResponse,
}
