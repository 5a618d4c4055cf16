import type { ReplayResponse } from './wire.ts'

/**
 * Gemini 2.5 Flash with thoughts included (`thinkingConfig.includeThoughts`), streamed
 * (`data:` events, CRLF line endings, each a GenerateContentResponse): a thought summary part
 * (`thought: true`), then a `functionCall` part that carries the `thoughtSignature` of the
 * reasoning behind it. Gemini 3 refuses a later request whose model turn has that call without its
 * signature; 2.5 takes it but thinks from scratch. The answer to the tool result ends with a text
 * part that carries a signature too.
 */

const MODEL = 'gemini-2.5-flash'
const chunk = (data: unknown) => `data: ${JSON.stringify(data)}\r\n\r\n`
const headers = { 'content-type': 'text/event-stream', 'server-timing': 'gfet4t7; dur=934' }

/** Opaque signatures, as Gemini sends them (base64). */
export const GEMINI_CALL_SIGNATURE = 'Cs0BAdHtim9Vq3kLw8R2nT5yX1pZ7cB4mF6jH0gD9sA2eU8iO3lK5vN1qW7rT4yE6uI0oP2aS8dF3gH5jK9lZ1xC4vB7nM0qW3eR6tY9uI2oP5aS1dF4gH7jK0lZ3xC6vB9nM2qW5eR8tY1uI4oP7aS0dF3gH6jK9lZ2xC5vB8nM1qW4eR7tY0uI3o='
export const GEMINI_TEXT_SIGNATURE = 'CmUBAdHtim8xK2pQ9wR4tY7uI0oP3aS6dF9gH2jK5lZ8xC1vB4nM7qW0eR3tY6uI9oP2aS5dF8gH1jK4lZ7xC0vB3nM6qW9eR2tY5uI8oP1aS4dF7gH0jK3lZ6xC9vB='

const usage = (prompt: number, candidates: number, thoughts: number) => ({
  promptTokenCount: prompt,
  candidatesTokenCount: candidates,
  totalTokenCount: prompt + candidates + thoughts,
  promptTokensDetails: [{ modality: 'TEXT', tokenCount: prompt }],
  thoughtsTokenCount: thoughts,
})

const candidate = (parts: unknown[], finish: boolean) => ({ content: { parts, role: 'model' }, ...(finish ? { finishReason: 'STOP' } : {}), index: 0 })

const thought = '**Checking the weather**\n\nThe user wants the weather in Oslo; get_weather answers that.'
const callResponseId = 'pQ7xaLm3Kd8Tz7IPq9WR2Ae'
export const GEMINI_SIGNED_TOOL_CALL = {
  thought,
  signature: GEMINI_CALL_SIGNATURE,
  arguments: { city: 'Oslo' },
  response: {
    kind: 'stream',
    headers,
    events: [
      chunk({ candidates: [candidate([{ text: thought, thought: true }], false)], usageMetadata: usage(64, 0, 71), modelVersion: MODEL, responseId: callResponseId }),
      chunk({
        candidates: [candidate([{ functionCall: { name: 'get_weather', args: { city: 'Oslo' } }, thoughtSignature: GEMINI_CALL_SIGNATURE }], true)],
        usageMetadata: usage(64, 15, 71),
        modelVersion: MODEL,
        responseId: callResponseId,
      }),
    ],
  } satisfies ReplayResponse,
}

const answerParts = ['It is sunny in Oslo', ', 21 °C and a light breeze.']
const answerResponseId = 'qR8yaMn4Le9Uz7IPr0XS3Bf'
export const GEMINI_SIGNED_ANSWER = {
  text: answerParts.join(''),
  signature: GEMINI_TEXT_SIGNATURE,
  response: {
    kind: 'stream',
    headers,
    events: [
      chunk({ candidates: [candidate([{ text: answerParts[0] }], false)], usageMetadata: usage(131, 6, 40), modelVersion: MODEL, responseId: answerResponseId }),
      chunk({
        candidates: [candidate([{ text: answerParts[1], thoughtSignature: GEMINI_TEXT_SIGNATURE }], true)],
        usageMetadata: usage(131, 16, 40),
        modelVersion: MODEL,
        responseId: answerResponseId,
      }),
    ],
  } satisfies ReplayResponse,
}
