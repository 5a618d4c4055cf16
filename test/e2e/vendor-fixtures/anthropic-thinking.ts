import { namedEvent, pieces, type ReplayResponse } from './wire.ts'

/**
 * Anthropic with extended thinking on a tool-use turn (Messages API, streamed): a `thinking` block
 * whose signature arrives as a `signature_delta` just before the block stops, a `redacted_thinking`
 * block (its encrypted `data` whole in content_block_start), then the `tool_use` block. The API
 * requires the next request of a thinking + tool-use loop to carry these blocks back unchanged,
 * signature and data included, before the tool_use they led to; the answer to the tool result is a
 * plain text turn. Shapes as the API sends them.
 */

const MODEL = 'claude-sonnet-4-5-20250929'

const headers = (requestId: string) => ({
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  'request-id': requestId,
  'anthropic-organization-id': '2f8c1c52-3c6e-4d1b-9a0e-5f3b7d2a6c41',
})

const messageStart = (id: string, inputTokens: number) =>
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
      usage: { input_tokens: inputTokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 4, service_tier: 'standard' },
    },
  })

const end = (stopReason: string, outputTokens: number) => [
  namedEvent('message_delta', { type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: outputTokens } }),
  namedEvent('message_stop', { type: 'message_stop' }),
]

const thinking = pieces('The user wants the current weather in Oslo.', ' I have get_weather; I should call it with city Oslo', ' and answer from its result.')
/** The thinking block's signature, as Anthropic signs it (opaque base64). */
export const ANTHROPIC_THINKING_SIGNATURE =
  'EqQBCkYIBxgCKkDp3Nq2lZ7c0QmY8wLr1vTz4XbK9hGfA2sJ6uE5iO0pW3yR7tQ8nM1bV4cX2zL9kJ5hG3fD6sA0pO8iU7yT1rEgwQvR5tY2uI9oP3aS6dEaDF8gH4jK1lZ0xC7vB2nMIjBm9Qw3Er5Ty7Ui0Op2As4Df6Gh8Jk1Lz3Xc5Vb7Nm9Qw1Er3Ty5Ui7Op9As2Df4Gh6Jk8KlAQ=='
/** The redacted_thinking block's encrypted data (opaque). */
export const ANTHROPIC_REDACTED_DATA =
  'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB8URj2pLmN4Ks8wXb0Tc6Rr1Lw=='
export const ANTHROPIC_THINKING_TOOL_USE_ID = 'toolu_01VqN8bWx3Ke7sT2mYd5Rf9L'
export const ANTHROPIC_THINKING_REQUEST_ID = 'req_011CUAcT4hN9pQ2vX7yZ1bKd'
const toolArguments = ['', '{"city": ', '"Oslo"}']

export const ANTHROPIC_THINKING_TOOL_CALL = {
  thinking: thinking.text,
  signature: ANTHROPIC_THINKING_SIGNATURE,
  redactedData: ANTHROPIC_REDACTED_DATA,
  toolUseId: ANTHROPIC_THINKING_TOOL_USE_ID,
  arguments: toolArguments.join(''),
  requestId: ANTHROPIC_THINKING_REQUEST_ID,
  response: {
    kind: 'stream',
    headers: headers(ANTHROPIC_THINKING_REQUEST_ID),
    events: [
      messageStart('msg_01Tk3WzRq8Hn5Vb2Lp7Xc4Js', 512),
      namedEvent('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } }),
      ...thinking.parts.map((text) =>
        namedEvent('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: text } }),
      ),
      namedEvent('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: ANTHROPIC_THINKING_SIGNATURE } }),
      namedEvent('content_block_stop', { type: 'content_block_stop', index: 0 }),
      namedEvent('content_block_start', { type: 'content_block_start', index: 1, content_block: { type: 'redacted_thinking', data: ANTHROPIC_REDACTED_DATA } }),
      namedEvent('content_block_stop', { type: 'content_block_stop', index: 1 }),
      namedEvent('content_block_start', {
        type: 'content_block_start',
        index: 2,
        content_block: { type: 'tool_use', id: ANTHROPIC_THINKING_TOOL_USE_ID, name: 'get_weather', input: {} },
      }),
      ...toolArguments.map((partial_json) =>
        namedEvent('content_block_delta', { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json } }),
      ),
      namedEvent('content_block_stop', { type: 'content_block_stop', index: 2 }),
      ...end('tool_use', 96),
    ],
  } satisfies ReplayResponse,
}

const answer = pieces('It is sunny in Oslo', ', 21 °C with a light breeze.')
export const ANTHROPIC_THINKING_ANSWER = {
  text: answer.text,
  response: {
    kind: 'stream',
    headers: headers('req_011CUAcU9mR2sW6xB4nF8yQe'),
    events: [
      messageStart('msg_01Yb6Pc2Nd8Qe4Rf0Sg6Th2U', 640),
      namedEvent('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
      ...answer.parts.map((text) => namedEvent('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } })),
      namedEvent('content_block_stop', { type: 'content_block_stop', index: 0 }),
      ...end('end_turn', 18),
    ],
  } satisfies ReplayResponse,
}

/**
 * Extended thinking as the API streams it today: the thinking block's last thinking_delta
 * is empty (`"thinking": ""`), then its signature_delta, then content_block_stop; the answer
 * follows as a text block, and message_delta repeats the whole usage. The empty delta must neither
 * end the block nor cost it its signature: the next request replays the block, signed.
 */
const summarised = pieces('The user asks for the capital of Norway.', ' That is Oslo; one sentence is enough.')
const signedAnswer = pieces('The capital of Norway', ' is Oslo.')
export const ANTHROPIC_THINKING_EMPTY_LAST_DELTA_SIGNATURE =
  'ErUBCkYICBgCIkB7n3Qm0xVr2Kc8Lp5Tw1Yd9Hs4Gf6Ja3Ze7Nb2Xq0Uv8Ri5Oc1Mk9Pl4Wt6Ey3Ss7Dg2Fh5Jj8Ka1EgxD4hQw9Rt2Yu7Io3PaGgzV6bN1mC8xZ4lK0jHiMJ5tR2wQ8eY1uI4oP7aS3dF6gH9jK2lZ5xC8vB1nM4qW7eR0tY3uI6oP9aS2dF5gH8jK1lZ4xC7vB0nM3qW6eR9tY2uI5oP8aS1dF4gH7jK0lZ3xC6vB9nM2qW5eR8tY1uI4oP7aS0dF3gH6jK9lZ2xC5vB8nM1qW4eR7tYGAE='
export const ANTHROPIC_THINKING_EMPTY_LAST_DELTA = {
  thinking: summarised.text,
  signature: ANTHROPIC_THINKING_EMPTY_LAST_DELTA_SIGNATURE,
  text: signedAnswer.text,
  usage: { input_tokens: 58, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 143 },
  response: {
    kind: 'stream',
    headers: headers('req_011CUAcV2kT8nR5wP1xQ7bLm'),
    events: [
      messageStart('msg_01Rw4Kd8Tn2Vb6Xc0Ym5Lq3S', 58),
      namedEvent('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } }),
      ...[...summarised.parts, ''].map((text) =>
        namedEvent('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: text } }),
      ),
      namedEvent('content_block_delta', {
        type: 'content_block_delta',
        index: 0,
        delta: { type: 'signature_delta', signature: ANTHROPIC_THINKING_EMPTY_LAST_DELTA_SIGNATURE },
      }),
      namedEvent('content_block_stop', { type: 'content_block_stop', index: 0 }),
      namedEvent('content_block_start', { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } }),
      ...signedAnswer.parts.map((text) => namedEvent('content_block_delta', { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text } })),
      namedEvent('content_block_stop', { type: 'content_block_stop', index: 1 }),
      namedEvent('message_delta', {
        type: 'message_delta',
        delta: { stop_reason: 'end_turn', stop_sequence: null },
        usage: { input_tokens: 58, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 143 },
      }),
      namedEvent('message_stop', { type: 'message_stop' }),
    ],
  } satisfies ReplayResponse,
}
