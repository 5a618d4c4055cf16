import { namedEvent, pieces, type ReplayResponse, type VendorFixture } from './wire.ts'

/**
 * Anthropic Messages API, streamed (POST {base}/v1/messages with "stream": true): named events
 * message_start, content_block_start / content_block_delta / content_block_stop per block, ping,
 * message_delta (stop_reason and final usage), message_stop. Shapes as the API sends them.
 */

const MODEL = 'claude-sonnet-4-5-20250929'

const headers = (requestId: string) => ({
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  'request-id': requestId,
  'anthropic-organization-id': '2f8c1c52-3c6e-4d1b-9a0e-5f3b7d2a6c41',
})

const messageStart = (id: string, usage: Record<string, unknown>) =>
  namedEvent('message_start', {
    type: 'message_start',
    message: {
      model: MODEL,
      id,
      type: 'message',
      role: 'assistant',
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage,
    },
  })

const textBlock = (index: number, parts: string[]) => [
  namedEvent('content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } }),
  ...parts.map((text) => namedEvent('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text } })),
  namedEvent('content_block_stop', { type: 'content_block_stop', index }),
]

const ping = namedEvent('ping', { type: 'ping' })

const end = (stopReason: string, usage: Record<string, unknown>) => [
  namedEvent('message_delta', { type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null }, usage }),
  namedEvent('message_stop', { type: 'message_stop' }),
]

const answer = pieces('The capital', ' of Norway is Oslo', ', on the Oslofjord.')
export const ANTHROPIC_TEXT_ID = 'msg_01XFDUDYJgAACzvnptvVoYEL'
/**
 * The recorded text answer with its block streamed in `parts` (the benchmarks stream more deltas
 * than the recording's three). Prompt caching in play: 19 fresh input tokens, 2104 written to the
 * cache, 1536 read from it.
 */
export const anthropicTextStream = (parts: string[]): ReplayResponse & { kind: 'stream' } => {
  const [blockStart, ...blockRest] = textBlock(0, parts)
  return {
    kind: 'stream',
    headers: headers('req_011CUAbX8mFqkLJ2uQ6aGcWp'),
    events: [
      messageStart(ANTHROPIC_TEXT_ID, {
        input_tokens: 19,
        cache_creation_input_tokens: 2104,
        cache_read_input_tokens: 1536,
        cache_creation: { ephemeral_5m_input_tokens: 2104, ephemeral_1h_input_tokens: 0 },
        output_tokens: 1,
        service_tier: 'standard',
      }),
      blockStart!,
      ping,
      ...blockRest,
      ...end('end_turn', { input_tokens: 19, cache_creation_input_tokens: 2104, cache_read_input_tokens: 1536, output_tokens: 14 }),
    ],
  }
}
const text = anthropicTextStream(answer.parts)

const preamble = pieces("I'll check the current weather", ' in Oslo for you.')
const toolArguments = ['', '{"city": "Os', 'lo"}']
export const ANTHROPIC_TOOL_USE_ID = 'toolu_01T1x1fJ34qAmk2tNTrN7Up6'
const toolCall: ReplayResponse = {
  kind: 'stream',
  headers: headers('req_011CUAbYqv3wK1Fz9dHnR2Ts'),
  events: [
    messageStart('msg_014p7gG3wDgGV9EUtLvnow3U', { input_tokens: 402, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 2, service_tier: 'standard' }),
    ...textBlock(0, preamble.parts),
    namedEvent('content_block_start', {
      type: 'content_block_start',
      index: 1,
      content_block: { type: 'tool_use', id: ANTHROPIC_TOOL_USE_ID, name: 'get_weather', input: {} },
    }),
    ping,
    ...toolArguments.map((partial_json) =>
      namedEvent('content_block_delta', { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json } }),
    ),
    namedEvent('content_block_stop', { type: 'content_block_stop', index: 1 }),
    ...end('tool_use', { output_tokens: 71 }),
  ],
}

const weather = pieces("It's sunny in Oslo", ' right now, at 21 °C.')
const afterToolResult: ReplayResponse = {
  kind: 'stream',
  headers: headers('req_011CUAbZ4sPq7YhVbL1xN9Ke'),
  events: [
    messageStart('msg_01Aq9w8LmN4bTdUv5yXz3cPe', { input_tokens: 496, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1, service_tier: 'standard' }),
    ...textBlock(0, weather.parts),
    ...end('end_turn', { output_tokens: 16 }),
  ],
}

export const anthropic: VendorFixture = {
  vendor: 'anthropic',
  basePath: '/anthropic/v1',
  isStreamPath: (path) => path === '/anthropic/v1/messages',
  text: { response: text, text: answer.text, reasoning: '' },
  toolCall: { response: toolCall, text: preamble.text, reasoning: '', toolName: 'get_weather', toolCallId: ANTHROPIC_TOOL_USE_ID, arguments: toolArguments.join('') },
  afterToolResult: { response: afterToolResult, text: weather.text, reasoning: '' },
  serverError: {
    kind: 'json',
    status: 529,
    headers: { 'content-type': 'application/json', 'request-id': 'req_011CUAbaG1c2yT5nP8wQeJrD', 'x-should-retry': 'true' },
    body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' }, request_id: 'req_011CUAbaG1c2yT5nP8wQeJrD' },
  },
}

/** The API overloaded before saying anything: a 200 stream whose first event is an error. */
export const ANTHROPIC_OVERLOADED_FIRST: ReplayResponse = {
  kind: 'stream',
  headers: headers('req_011CUAbb7TqH3nWc2eLp9ZxF'),
  events: [namedEvent('error', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } })],
}

/** Overloaded mid-answer: some text, then an error event, and the stream ends. */
export const ANTHROPIC_OVERLOADED_MID = {
  partialText: answer.parts.slice(0, 2).join(''),
  response: {
    kind: 'stream',
    headers: headers('req_011CUAbcM5vR8sKd4fYq1WuG'),
    events: [
      messageStart('msg_01Hn6Tb2Vc8Wd4Xe0Yf6Zg2A', { input_tokens: 19, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1, service_tier: 'standard' }),
      ...textBlock(0, answer.parts.slice(0, 2)).slice(0, -1),
      namedEvent('error', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }),
    ],
  } satisfies ReplayResponse,
}

/**
 * Today's message_delta: the API repeats the whole usage there (input_tokens and both cache counts
 * beside output_tokens), cumulative and final, where older streams sent output_tokens alone.
 * message_start's usage is only what was known when the message opened; here it differs in every
 * count (server tools, for one, add input after the start), so a run billed from message_start
 * would show. The run must be billed for message_delta's counts.
 */
const finalUsageAnswer = pieces('Oslo is the capital', ' of Norway.')
export const ANTHROPIC_USAGE_IN_MESSAGE_DELTA = {
  text: finalUsageAnswer.text,
  responseId: 'msg_01Gq7Vd3Rk9Lm2Xw5Tb8Nc4P',
  requestId: 'req_011CUAbdK2wQ9nVf6pLx3RtZ',
  /** What message_start said: provisional, to be overridden. */
  startUsage: { input_tokens: 25, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1 },
  /** What message_delta said: the counts the run is billed for. */
  finalUsage: { input_tokens: 31, cache_creation_input_tokens: 1240, cache_read_input_tokens: 2816, output_tokens: 17 },
  response: {
    kind: 'stream',
    headers: headers('req_011CUAbdK2wQ9nVf6pLx3RtZ'),
    events: [
      messageStart('msg_01Gq7Vd3Rk9Lm2Xw5Tb8Nc4P', {
        input_tokens: 25,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
        output_tokens: 1,
        service_tier: 'standard',
      }),
      ...textBlock(0, finalUsageAnswer.parts),
      ping,
      ...end('end_turn', { input_tokens: 31, cache_creation_input_tokens: 1240, cache_read_input_tokens: 2816, output_tokens: 17 }),
    ],
  } satisfies ReplayResponse,
}

/**
 * A stream cut after message_start (issue 22): message_start has reported the input, 100 fresh
 * tokens, 40 read from the cache and 12 written to it; some text streams, and the stream ends before
 * message_delta (the connection drops, or an error event). The vendor's input counts are known; the
 * output is not. A cut run is billed for these input counts and an estimate of the output alone.
 */
const cutAnswer = pieces('The capital of Norway', ' is Oslo')
export const ANTHROPIC_CUT_AFTER_START = {
  partialText: cutAnswer.text,
  responseId: 'msg_01Kc5Tr8Wn2Qp7Vx4Ld9Hs3M',
  startUsage: { input_tokens: 100, cache_creation_input_tokens: 12, cache_read_input_tokens: 40, output_tokens: 1 },
  /** The events before the cut: message_start, a text block left open. */
  events: [
    messageStart('msg_01Kc5Tr8Wn2Qp7Vx4Ld9Hs3M', {
      input_tokens: 100,
      cache_creation_input_tokens: 12,
      cache_read_input_tokens: 40,
      cache_creation: { ephemeral_5m_input_tokens: 12, ephemeral_1h_input_tokens: 0 },
      output_tokens: 1,
      service_tier: 'standard',
    }),
    ...textBlock(0, cutAnswer.parts).slice(0, -1),
    ping,
  ],
  headers: headers('req_011CUAbeR4tW8yLm2Nq6Vc1X'),
}

/** The connection drops after the text so far. */
export const ANTHROPIC_CUT_DROPPED: ReplayResponse = { kind: 'stream', headers: ANTHROPIC_CUT_AFTER_START.headers, events: ANTHROPIC_CUT_AFTER_START.events, end: 'destroy' }

/** An error event after the text so far (the API overloaded mid-answer). */
export const ANTHROPIC_CUT_BY_ERROR: ReplayResponse = {
  kind: 'stream',
  headers: ANTHROPIC_CUT_AFTER_START.headers,
  events: [...ANTHROPIC_CUT_AFTER_START.events, namedEvent('error', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } })],
}
