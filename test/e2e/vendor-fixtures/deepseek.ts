import { DONE, dataEvent, pieces, type ReplayResponse, type VendorFixture } from './wire.ts'

/**
 * DeepSeek chat completions, streamed (POST {base}/chat/completions with "stream": true and
 * stream_options.include_usage; no version segment in DeepSeek's base URL): `data:` chunks of
 * `chat.completion.chunk`, `: keep-alive` comments while the model works, usage with the
 * finish_reason, then `data: [DONE]`. deepseek-reasoner streams its thinking as
 * `reasoning_content` before the answer's `content`; tool calls come OpenAI-style, the first
 * fragment with the id and name, the rest with arguments only.
 */

const MODEL = 'deepseek-reasoner'
const FINGERPRINT = 'fp_ffc7281d48_prod0820_fp8_kvcache'
const KEEP_ALIVE = ': keep-alive\n\n'

const headers = (traceId: string) => ({
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  'x-ds-trace-id': traceId,
})

const chunk = (id: string, created: number, delta: Record<string, unknown>, finishReason: string | null = null, usage?: unknown) =>
  dataEvent({
    id,
    object: 'chat.completion.chunk',
    created,
    model: MODEL,
    system_fingerprint: FINGERPRINT,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    ...(usage !== undefined ? { usage } : {}),
  })

type Counts = { prompt: number; hit: number; completion: number; reasoning: number }
const usage = (c: Counts) => ({
  prompt_tokens: c.prompt,
  completion_tokens: c.completion,
  total_tokens: c.prompt + c.completion,
  prompt_tokens_details: { cached_tokens: c.hit },
  completion_tokens_details: { reasoning_tokens: c.reasoning },
  prompt_cache_hit_tokens: c.hit,
  prompt_cache_miss_tokens: c.prompt - c.hit,
})

function textStream(id: string, created: number, thinking: string[], parts: string[], counts: Counts): string[] {
  return [
    KEEP_ALIVE,
    chunk(id, created, { role: 'assistant', content: null, reasoning_content: '' }),
    ...thinking.map((reasoning_content) => chunk(id, created, { content: null, reasoning_content })),
    ...parts.map((content) => chunk(id, created, { content, reasoning_content: null })),
    chunk(id, created, { content: '', reasoning_content: null }, 'stop', usage(counts)),
    DONE,
  ]
}

const thinking = pieces('The user asks for', " Norway's capital.", ' That is Oslo.')
const answer = pieces('The capital', ' of Norway is', ' Oslo.')
export const DEEPSEEK_COMPLETION_ID = '8f3c2a1e-6b4d-4c9a-b7e5-0d2f4a6c8e13'
/** Context caching: 1046 prompt tokens, 1024 hit the cache; 62 completion tokens, 48 of them thinking. */
const text: ReplayResponse = {
  kind: 'stream',
  headers: headers('a3f5c7e9b1d34f6a8c0e2b4d6f8a0c1e'),
  events: textStream(DEEPSEEK_COMPLETION_ID, 1760547502, thinking.parts, answer.parts, { prompt: 1046, hit: 1024, completion: 62, reasoning: 48 }),
}

const callThinking = pieces('I should call', ' get_weather for Oslo.')
export const DEEPSEEK_CALL_ID = 'call_00_Kq3vW8mZp2xR5tY7uN1bH4jD'
const callArguments = ['{"', 'city', '":"', 'Oslo', '"}']
const toolCall: ReplayResponse = (() => {
  const id = '9a4d3b2f-7c5e-4dab-c8f6-1e3a5b7d9f24'
  const created = 1760547516
  return {
    kind: 'stream',
    headers: headers('b4a6d8f0c2e44a7b9d1f3c5e7a9b1d2f'),
    events: [
      KEEP_ALIVE,
      chunk(id, created, { role: 'assistant', content: null, reasoning_content: '' }),
      ...callThinking.parts.map((reasoning_content) => chunk(id, created, { content: null, reasoning_content })),
      chunk(id, created, { tool_calls: [{ index: 0, id: DEEPSEEK_CALL_ID, type: 'function', function: { name: 'get_weather', arguments: '' } }] }),
      ...callArguments.map((args) => chunk(id, created, { tool_calls: [{ index: 0, function: { arguments: args } }] })),
      chunk(id, created, { content: '', reasoning_content: null }, 'tool_calls', usage({ prompt: 344, hit: 320, completion: 41, reasoning: 17 })),
      DONE,
    ],
  }
})()

const weatherThinking = pieces('The tool says sunny, 21 °C.')
const weather = pieces('It is sunny in Oslo', ', 21 °C.')
const afterToolResult: ReplayResponse = {
  kind: 'stream',
  headers: headers('c5b7e9a1d3f54b8c0e2a4d6f8b0c2e3a'),
  events: textStream('0b5e4c3a-8d6f-4ebc-d9a7-2f4b6c8e0a35', 1760547524, weatherThinking.parts, weather.parts, {
    prompt: 402,
    hit: 384,
    completion: 23,
    reasoning: 12,
  }),
}

export const deepseek: VendorFixture = {
  vendor: 'deepseek',
  basePath: '/deepseek',
  isStreamPath: (path) => path === '/deepseek/chat/completions',
  text: { response: text, text: answer.text, reasoning: thinking.text },
  toolCall: { response: toolCall, text: '', reasoning: callThinking.text, toolName: 'get_weather', toolCallId: DEEPSEEK_CALL_ID, arguments: callArguments.join('') },
  afterToolResult: { response: afterToolResult, text: weather.text, reasoning: weatherThinking.text },
  serverError: {
    kind: 'json',
    status: 503,
    headers: { 'content-type': 'application/json' },
    body: { error: { message: 'Server overloaded, please try again later.', type: 'service_unavailable_error', param: null, code: 'server_overloaded' } },
  },
}

/**
 * Two calls in one answer: the second call's fragments start before the SDK ends the first call
 * (it ends every call when the stream ends), so the two tool-call blocks overlap.
 */
export const DEEPSEEK_PARALLEL_CALLS = (() => {
  const id = 'c6f5e4d3-0a9b-4fcd-e1b7-3a5c7e9b1d46'
  const created = 1760547540
  const calls = [
    { id: 'call_00_Vb7nM2qL5wX8cZ1kJ4hG6fD3', city: 'Oslo', fragments: ['{"city"', ':"Oslo"}'] },
    { id: 'call_01_Rt9yU3iO6pA2sD5fG8hJ1kL4', city: 'Bergen', fragments: ['{"ci', 'ty":"Ber', 'gen"}'] },
  ]
  const response: ReplayResponse = {
    kind: 'stream',
    headers: headers('d6c8f0b2e4a64c9d1f3b5e7a9c1d3e4b'),
    events: [
      KEEP_ALIVE,
      chunk(id, created, { role: 'assistant', content: null, reasoning_content: '' }),
      chunk(id, created, { content: null, reasoning_content: 'Both cities, one call each.' }),
      ...calls.flatMap((call, index) => [
        chunk(id, created, { tool_calls: [{ index, id: call.id, type: 'function', function: { name: 'get_weather', arguments: '' } }] }),
        ...call.fragments.map((args) => chunk(id, created, { tool_calls: [{ index, function: { arguments: args } }] })),
      ]),
      chunk(id, created, { content: '', reasoning_content: null }, 'tool_calls', usage({ prompt: 351, hit: 320, completion: 66, reasoning: 9 })),
      DONE,
    ],
  }
  return { response, reasoning: 'Both cities, one call each.', calls: calls.map((c) => ({ id: c.id, arguments: c.fragments.join('') })) }
})()

/**
 * `"usage": null` on every chunk but the last, as DeepSeek documents include_usage: the reasoning,
 * the answer and the chunk with finish_reason all say null, and one more chunk, its choices empty,
 * carries the counts before `data: [DONE]`. A null is no usage: it must neither count as reported
 * nor wipe a count already read.
 */
const nullUsageThinking = pieces('Norway’s capital', ' is Oslo.')
const nullUsageAnswer = pieces('Oslo is', ' the capital of Norway.')
export const DEEPSEEK_USAGE_NULL_UNTIL_LAST_ID = 'd7a6f5e4-1b0c-4ade-f2c8-4b6d8f0a2c57'
export const DEEPSEEK_USAGE_NULL_UNTIL_LAST = (() => {
  const id = DEEPSEEK_USAGE_NULL_UNTIL_LAST_ID
  const created = 1760547560
  const counts = { prompt: 1046, hit: 960, completion: 57, reasoning: 41 }
  return {
    reasoning: nullUsageThinking.text,
    text: nullUsageAnswer.text,
    counts,
    response: {
      kind: 'stream',
      headers: headers('e7d9f1a3c5b74d0e2a4c6e8b0d2f4a5c'),
      events: [
        KEEP_ALIVE,
        chunk(id, created, { role: 'assistant', content: null, reasoning_content: '' }, null, null),
        ...nullUsageThinking.parts.map((reasoning_content) => chunk(id, created, { content: null, reasoning_content }, null, null)),
        ...nullUsageAnswer.parts.map((content) => chunk(id, created, { content, reasoning_content: null }, null, null)),
        chunk(id, created, { content: '', reasoning_content: null }, 'stop', null),
        dataEvent({ id, object: 'chat.completion.chunk', created, model: MODEL, system_fingerprint: FINGERPRINT, choices: [], usage: usage(counts) }),
        DONE,
      ],
    } satisfies ReplayResponse,
  }
})()
