import { DONE, dataEvent, namedEvent, pieces, type ReplayResponse, type Vendor } from './wire.ts'

/**
 * A short streamed text answer, in each vendor's stream shape (as the recorded fixtures beside this
 * file), whose usage reports the input tokens the replay server counted for the request: so a test
 * can make a vendor count differently from Parley's estimator and see what Parley learns from it.
 * The answer says COUNTED_ANSWER_TEXT unless given another text.
 */

export type CountedInput = {
  /** Every input token of the request, as the vendor counted it. */
  total: number
  /** How many of them the vendor says it read from its prompt cache (default 0). */
  cacheRead?: number
  /** How many it says it wrote to its cache (Anthropic only; default 0). */
  cacheWrite?: number
}

type Answer = { parts: string[]; text: string }

const ANSWER: Answer = pieces('Noted', ': the whole conversation', ' is in view.')
const OUTPUT_TOKENS = 9

export const COUNTED_ANSWER_TEXT = ANSWER.text
/** The output tokens every counted-usage answer reports, whatever its text. */
export const COUNTED_OUTPUT_TOKENS = OUTPUT_TOKENS

/** `text` in up to three streamed pieces, split after spaces (so the pieces join back to `text`). */
function answerOf(text: string): Answer {
  const words = text.split(/(?<= )/)
  if (words.length < 3) return pieces(text)
  const a = Math.ceil(words.length / 3)
  const b = Math.ceil((2 * words.length) / 3)
  return pieces(words.slice(0, a).join(''), words.slice(a, b).join(''), words.slice(b).join(''))
}

let serial = 0
const nextId = () => (++serial).toString(16).padStart(8, '0')

function anthropic(model: string, c: Required<CountedInput>, answer: Answer): ReplayResponse {
  const fresh = c.total - c.cacheRead - c.cacheWrite
  const usage = { input_tokens: fresh, cache_creation_input_tokens: c.cacheWrite, cache_read_input_tokens: c.cacheRead }
  return {
    kind: 'stream',
    headers: { 'content-type': 'text/event-stream; charset=utf-8', 'request-id': `req_011CUCounted${nextId()}` },
    events: [
      namedEvent('message_start', {
        type: 'message_start',
        message: { model, id: `msg_01Counted${nextId()}`, type: 'message', role: 'assistant', content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1, service_tier: 'standard' } },
      }),
      namedEvent('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
      ...answer.parts.map((text) => namedEvent('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } })),
      namedEvent('content_block_stop', { type: 'content_block_stop', index: 0 }),
      namedEvent('message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { ...usage, output_tokens: OUTPUT_TOKENS } }),
      namedEvent('message_stop', { type: 'message_stop' }),
    ],
  }
}

/** The Responses API stream: OpenAI names each event (`event:` lines), xAI sends `data:` lines only. */
function responses(vendor: 'openai' | 'xai', model: string, c: Required<CountedInput>, answer: Answer): ReplayResponse {
  let n = 0
  const e = (type: string, fields: Record<string, unknown>) =>
    vendor === 'openai' ? namedEvent(type, { type, sequence_number: n++, ...fields }) : dataEvent({ type, sequence_number: n++, ...fields })
  const id = `resp_counted${nextId()}`
  const messageId = `msg_counted${nextId()}`
  const text = answer.text
  const item = (done: boolean) => ({
    id: messageId,
    type: 'message',
    status: done ? 'completed' : 'in_progress',
    content: done ? [{ type: 'output_text', annotations: [], logprobs: [], text }] : [],
    role: 'assistant',
  })
  const response = (status: string, output: unknown[], usage: unknown) => ({ id, object: 'response', created_at: 1760547213, status, error: null, incomplete_details: null, model, output, usage })
  const part = { type: 'output_text', annotations: [], logprobs: [], text: '' }
  return {
    kind: 'stream',
    headers: { 'content-type': 'text/event-stream; charset=utf-8', 'x-request-id': `req_counted${nextId()}` },
    events: [
      e('response.created', { response: response('in_progress', [], null) }),
      e('response.output_item.added', { output_index: 0, item: item(false) }),
      e('response.content_part.added', { item_id: messageId, output_index: 0, content_index: 0, part }),
      ...answer.parts.map((delta) => e('response.output_text.delta', { item_id: messageId, output_index: 0, content_index: 0, delta, logprobs: [] })),
      e('response.output_text.done', { item_id: messageId, output_index: 0, content_index: 0, text, logprobs: [] }),
      e('response.content_part.done', { item_id: messageId, output_index: 0, content_index: 0, part: { ...part, text } }),
      e('response.output_item.done', { output_index: 0, item: item(true) }),
      e('response.completed', {
        response: response('completed', [item(true)], {
          input_tokens: c.total,
          input_tokens_details: { cached_tokens: c.cacheRead },
          output_tokens: OUTPUT_TOKENS,
          output_tokens_details: { reasoning_tokens: 0 },
          total_tokens: c.total + OUTPUT_TOKENS,
        }),
      }),
    ],
  }
}

function google(model: string, c: Required<CountedInput>, answer: Answer): ReplayResponse {
  const responseId = `counted${nextId()}`
  const usageMetadata = {
    promptTokenCount: c.total,
    candidatesTokenCount: OUTPUT_TOKENS,
    totalTokenCount: c.total + OUTPUT_TOKENS,
    ...(c.cacheRead ? { cachedContentTokenCount: c.cacheRead } : {}),
    promptTokensDetails: [{ modality: 'TEXT', tokenCount: c.total }],
  }
  return {
    kind: 'stream',
    headers: { 'content-type': 'text/event-stream' },
    events: answer.parts.map(
      (text, i) =>
        `data: ${JSON.stringify({
          candidates: [{ content: { parts: [{ text }], role: 'model' }, ...(i === answer.parts.length - 1 ? { finishReason: 'STOP' } : {}), index: 0 }],
          usageMetadata,
          modelVersion: model,
          responseId,
        })}\r\n\r\n`,
    ),
  }
}

/** Mistral, xAI and DeepSeek: chat-completions chunks, usage on the chunk with finish_reason, then [DONE]. */
function chatCompletions(vendor: 'mistral' | 'deepseek', model: string, c: Required<CountedInput>, answer: Answer): ReplayResponse {
  const id = `counted-${nextId()}`
  const chunk = (delta: Record<string, unknown>, finishReason: string | null, usage?: unknown) =>
    dataEvent({ id, object: 'chat.completion.chunk', created: 1760547301, model, choices: [{ index: 0, delta, finish_reason: finishReason }], ...(usage ? { usage } : {}) })
  const base = { prompt_tokens: c.total, completion_tokens: OUTPUT_TOKENS, total_tokens: c.total + OUTPUT_TOKENS }
  const usage =
    vendor === 'deepseek'
      ? { ...base, prompt_tokens_details: { cached_tokens: c.cacheRead }, prompt_cache_hit_tokens: c.cacheRead, prompt_cache_miss_tokens: c.total - c.cacheRead }
      : base
  return {
    kind: 'stream',
    headers: { 'content-type': 'text/event-stream; charset=utf-8' },
    events: [
      chunk({ role: 'assistant', content: '' }, null),
      ...answer.parts.map((content) => chunk({ content }, null)),
      chunk({ content: '' }, 'stop', usage),
      DONE,
    ],
  }
}

/**
 * A text answer from `vendor`'s `model` whose usage reports `input` as the request's input tokens.
 * It says `text` (default COUNTED_ANSWER_TEXT); its usage reports COUNTED_OUTPUT_TOKENS of output either way.
 */
export function countedUsageAnswer(vendor: Vendor, model: string, input: CountedInput, text?: string): ReplayResponse {
  const c: Required<CountedInput> = { cacheRead: 0, cacheWrite: 0, ...input }
  if (vendor !== 'anthropic') c.cacheWrite = 0
  const answer = text === undefined ? ANSWER : answerOf(text)
  switch (vendor) {
    case 'anthropic':
      return anthropic(model, c, answer)
    case 'openai':
    case 'xai':
      return responses(vendor, model, c, answer)
    case 'google':
      return google(model, c, answer)
    case 'mistral':
    case 'deepseek':
      return chatCompletions(vendor, model, c, answer)
  }
}
