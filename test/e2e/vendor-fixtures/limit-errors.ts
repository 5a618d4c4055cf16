import type { ReplayResponse, Vendor } from './wire.ts'

/**
 * The refusals a vendor answers a request over its model's token limits with, before any stream:
 * the vendor's status, error JSON and, where it is known, its words. Messages quoted from the
 * vendors' answers as users have reported them; the ones not seen verbatim say so.
 */

export type LimitError = ReplayResponse & { kind: 'json' }

/** Which limit a request broke, with the numbers the vendor's message names. */
export type LimitBreach =
  | { limit: 'bytes'; bytes: number; max: number }
  | { limit: 'output'; requested: number; max: number }
  | { limit: 'input'; input: number; max: number }
  | { limit: 'window'; input: number; output: number; max: number }

const json = (status: number, body: unknown, headers: Record<string, string> = {}): LimitError => ({
  kind: 'json',
  status,
  headers: { 'content-type': 'application/json', ...headers },
  body,
})

/**
 * A body over the vendor's byte limit, refused at its front door before the body is read as tokens.
 * Anthropic's is recorded: HTTP 413, `{"error":{"type":"request_too_large","message":"Request exceeds
 * the maximum size"}}` (https://github.com/anthropics/claude-code/issues/10314, 2025-10-25; the same
 * body in anthropics/anthropic-sdk-python#938, 2025-04-14, and earendil-works/pi#2734, 2026-03-31), with
 * no top-level `type` and no figure. Google's front end answers 400 INVALID_ARGUMENT "Request payload
 * size exceeds the limit: N bytes." (https://github.com/google-gemini/deprecated-generative-ai-android/issues/26,
 * 2023-12-21; the status is that of Google APIs' INVALID_ARGUMENT, not seen in the issue). The other
 * four are not seen verbatim: a 413 in the vendor's own error envelope.
 */
function bytesError(vendor: Vendor, breach: { bytes: number; max: number }): LimitError {
  const tooLarge = `Request too large: ${breach.bytes} bytes exceeds the maximum of ${breach.max} bytes.`
  switch (vendor) {
    case 'anthropic':
      return json(413, { error: { type: 'request_too_large', message: 'Request exceeds the maximum size' } })
    case 'google':
      return json(400, { error: { code: 400, message: `Request payload size exceeds the limit: ${breach.max} bytes.`, status: 'INVALID_ARGUMENT' } }, { 'content-type': 'application/json; charset=UTF-8' })
    case 'openai':
    case 'deepseek':
      return json(413, { error: { message: tooLarge, type: 'invalid_request_error', param: null, code: 'request_too_large' } })
    case 'mistral':
      return json(413, { object: 'error', message: tooLarge, type: 'invalid_request_error', param: null, code: null })
    case 'xai':
      return json(413, { code: 'Payload Too Large', error: tooLarge })
    default: {
      const unknown: never = vendor
      throw new Error(`unknown vendor ${String(unknown)}`)
    }
  }
}

type TokenBreach = Exclude<LimitBreach, { limit: 'bytes' }>

function anthropic(breach: TokenBreach, model: string): LimitError {
  const message =
    breach.limit === 'output'
      ? `max_tokens: ${breach.requested} > ${breach.max}, which is the maximum allowed number of output tokens for ${model}`
      : breach.limit === 'input'
        ? `prompt is too long: ${breach.input} tokens > ${breach.max} maximum`
        : `input length and \`max_tokens\` exceed context limit: ${breach.input} + ${breach.output} > ${breach.max}, decrease input length or \`max_tokens\` and try again`
  const requestId = 'req_011CUReplayLimit0000000000'
  return json(400, { type: 'error', error: { type: 'invalid_request_error', message }, request_id: requestId }, { 'request-id': requestId })
}

function openai(breach: TokenBreach): LimitError {
  switch (breach.limit) {
    case 'input':
      return json(400, {
        error: {
          message: `Input tokens exceed the configured limit of ${breach.max} tokens. Your messages resulted in ${breach.input} tokens. Please reduce the length of the messages.`,
          type: 'invalid_request_error',
          param: 'input',
          code: 'context_length_exceeded',
        },
      })
    case 'window':
      return json(400, {
        error: {
          message: 'Your input exceeds the context window of this model. Please adjust your input and try again.',
          type: 'invalid_request_error',
          param: 'input',
          code: 'context_length_exceeded',
        },
      })
    case 'output':
      // Wording not seen verbatim for the Responses API; shaped as the chat-completions one.
      return json(400, {
        error: {
          message: `max_output_tokens is too large: ${breach.requested}. This model supports at most ${breach.max} completion tokens, whereas you provided ${breach.requested}.`,
          type: 'invalid_request_error',
          param: 'max_output_tokens',
          code: 'invalid_value',
        },
      })
  }
}

function google(breach: TokenBreach): LimitError {
  const message =
    breach.limit === 'output'
      ? // Vertex AI's wording for an out-of-range maxOutputTokens; the Gemini API's is not seen verbatim.
        `Unable to submit request because it has a maxOutputTokens value of ${breach.requested} but the supported range is from 1 (inclusive) to ${breach.max + 1} (exclusive). Update the value and try again.`
      : `The input token count (${breach.limit === 'input' ? breach.input : breach.input + breach.output}) exceeds the maximum number of tokens allowed (${breach.max}).`
  return json(400, { error: { code: 400, message, status: 'INVALID_ARGUMENT' } }, { 'content-type': 'application/json; charset=UTF-8' })
}

function mistral(breach: TokenBreach): LimitError {
  // Mistral's wording is remembered, not seen verbatim here; its error envelope is the fixture's.
  const message =
    breach.limit === 'output'
      ? `max_tokens (${breach.requested}) is too large for model with ${breach.max} maximum context length`
      : `Prompt contains ${breach.input} tokens and ${breach.limit === 'window' ? breach.output : 0} draft tokens, too large for model with ${breach.max} maximum context length`
  return json(400, { object: 'error', message, type: 'invalid_request_message_error', param: null, code: '3051' })
}

function xai(breach: TokenBreach): LimitError {
  const message =
    breach.limit === 'output'
      ? `max_tokens (${breach.requested}) exceeds the maximum of ${breach.max} for this model.`
      : `This model's maximum prompt length is ${breach.max} but the request contains ${breach.limit === 'input' ? breach.input : breach.input + breach.output} tokens.`
  return json(400, { code: 'Client specified an invalid argument', error: message })
}

function deepseek(breach: TokenBreach): LimitError {
  const message =
    breach.limit === 'output'
      ? `Invalid max_tokens value, the valid range of max_tokens is [1, ${breach.max}]`
      : breach.limit === 'input'
        ? `This model's maximum context length is ${breach.max} tokens. However, you requested ${breach.input} tokens (${breach.input} in the messages, 0 in the completion). Please reduce the length of the messages or completion.`
        : `This model's maximum context length is ${breach.max} tokens. However, you requested ${breach.input + breach.output} tokens (${breach.input} in the messages, ${breach.output} in the completion). Please reduce the length of the messages or completion.`
  return json(400, { error: { message, type: 'invalid_request_error', param: null, code: 'invalid_request_error' } })
}

/** The vendor's answer to a request that broke `breach`. */
export function limitError(vendor: Vendor, breach: LimitBreach, model: string): LimitError {
  if (breach.limit === 'bytes') return bytesError(vendor, breach)
  switch (vendor) {
    case 'anthropic':
      return anthropic(breach, model)
    case 'openai':
      return openai(breach)
    case 'google':
      return google(breach)
    case 'mistral':
      return mistral(breach)
    case 'xai':
      return xai(breach)
    case 'deepseek':
      return deepseek(breach)
    default: {
      const unknown: never = vendor
      throw new Error(`unknown vendor ${String(unknown)}`)
    }
  }
}
