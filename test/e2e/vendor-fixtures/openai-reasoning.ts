import { namedEvent, type ReplayResponse } from './wire.ts'

/**
 * gpt-5 on the Responses API, streamed, for a request with `store: false` (decision 026): the API
 * keeps nothing, so it returns the reasoning item's `encrypted_content` (asked for with `include:
 * ["reasoning.encrypted_content"]`) in the item's `response.output_item.done`. No summary was asked
 * for: the reasoning item's summary is empty. Then a function call to get_weather for Oslo, its
 * arguments streamed in `response.function_call_arguments.delta` events. Every event names its
 * `type` and a `sequence_number`, as the API's streaming events do.
 */

const MODEL = 'gpt-5-2025-08-07'

export const OPENAI_REASONING_ITEM_ID = 'rs_07c4e1a9b3d5f2086a0068f1c2d3e4f58190a6b7c8d9e0f1a2'
/** Opaque to Parley: the reasoning, encrypted by OpenAI for this item id. */
export const OPENAI_ENCRYPTED_REASONING =
  'gAAAAABo8cLTq4mZ1vN7xR2kP9sW5yB3hD6jF0gL8cV1nM4tQ7eU2iO5aS9dG3hJ6kL0zX8cV2bN5mQ1wE4rT7yU0iO3pA6sD9fG2hJ5kL8zX1cV4bN7mQ0wE3rT6yU9iO2pA5sD8fG1hJ4kL7zX0cV3bN6mQ9wE2rT5yU8iO1pA4sD7fG0hJ3kL6zX9cV2bN5mQ8wE1rT4yU7iO0pA3sD6fG9hJ2kL5zX8cV1bN4mQ7wE0rT3yU6iO9pA2sD5fG8hJ1kL4zX7cV0bN3mQ6wE9rT2yU5iO8pA1sD4fG7hJ0kL3zX6cV9bN2mQ5wE8rT1yU4iO7pA0sD3fG6hJ9kL2zX5cV8bN1mQ4wE7rT0yU3iO6pA9sD2fG5hJ8kL1zX4cV7bN0mQ3wE6rT9yU2iO5pA8sD1fG4hJ7kL0zX3cV6bN9mQ2wE5rT8yU1iO4pA7sD0fG3hJ6kL9zX2cV5bN8mQ1wE4rT7yU0iO3pA6sD9fG2hJ5kL8zX1cV4bN7mQ0wE3rT6yU9iO2pA5sD8fG1hJ4kL7zX0cV3bN6mQ9=='
export const OPENAI_FUNCTION_CALL_ITEM_ID = 'fc_07c4e1a9b3d5f2086a0068f1c2d4a7b28190c3d4e5f6a7b8c9'
export const OPENAI_REASONING_CALL_ID = 'call_R8sT2vW5xY9zA3bC6dE0fG4h'
const RESPONSE_ID = 'resp_07c4e1a9b3d5f2086a0068f1c2d2b9c08190e1f2a3b4c5d6e7'
const argumentPieces = ['{"ci', 'ty":"Os', 'lo"}']

/** The response object of response.created / response.in_progress / response.completed, as a store: false request gets it. */
const response = (status: 'in_progress' | 'completed', output: unknown[], usage: unknown) => ({
  id: RESPONSE_ID,
  object: 'response',
  created_at: 1760741075,
  status,
  error: null,
  incomplete_details: null,
  instructions: null,
  max_output_tokens: null,
  model: MODEL,
  output,
  parallel_tool_calls: true,
  previous_response_id: null,
  reasoning: { effort: 'medium', summary: null },
  store: false,
  text: { format: { type: 'text' }, verbosity: 'medium' },
  tool_choice: 'auto',
  tools: [{ type: 'function', name: 'get_weather', description: 'Current weather for a city.', parameters: {}, strict: false }],
  usage,
  metadata: {},
})

const reasoningAdded = { id: OPENAI_REASONING_ITEM_ID, type: 'reasoning', summary: [] }
const reasoningDone = { ...reasoningAdded, encrypted_content: OPENAI_ENCRYPTED_REASONING }
const call = { id: OPENAI_FUNCTION_CALL_ITEM_ID, type: 'function_call', call_id: OPENAI_REASONING_CALL_ID, name: 'get_weather' }
const callDone = { ...call, status: 'completed', arguments: argumentPieces.join('') }

const events = (() => {
  let n = 0
  const e = (type: string, fields: Record<string, unknown>) => namedEvent(type, { type, sequence_number: n++, ...fields })
  return [
    e('response.created', { response: response('in_progress', [], null) }),
    e('response.in_progress', { response: response('in_progress', [], null) }),
    e('response.output_item.added', { output_index: 0, item: reasoningAdded }),
    e('response.output_item.done', { output_index: 0, item: reasoningDone }),
    e('response.output_item.added', { output_index: 1, item: { ...call, status: 'in_progress', arguments: '' } }),
    ...argumentPieces.map((delta) => e('response.function_call_arguments.delta', { item_id: call.id, output_index: 1, delta })),
    e('response.function_call_arguments.done', { item_id: call.id, output_index: 1, arguments: callDone.arguments }),
    e('response.output_item.done', { output_index: 1, item: callDone }),
    e('response.completed', {
      response: response('completed', [reasoningDone, callDone], {
        input_tokens: 287,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: 151,
        output_tokens_details: { reasoning_tokens: 128 },
        total_tokens: 438,
      }),
    }),
  ]
})()

/** The reasoning item with its encrypted content, then the call it led to. */
export const OPENAI_REASONING_TOOL_CALL = {
  reasoningItemId: OPENAI_REASONING_ITEM_ID,
  encryptedContent: OPENAI_ENCRYPTED_REASONING,
  callId: OPENAI_REASONING_CALL_ID,
  arguments: callDone.arguments,
  response: {
    kind: 'stream',
    headers: { 'content-type': 'text/event-stream; charset=utf-8', 'x-request-id': 'req_4d7a0c3f6b9e42d1a5c8f0b3e6d9a2c5' },
    events,
  } satisfies ReplayResponse,
}
