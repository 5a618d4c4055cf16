/**
 * Errors as OpenAI's API sends them (docs/decisions/055-openai-facade.md): `{error: {message, type,
 * param, code}}` with OpenAI's statuses. Pure: it takes Parley's envelope as the one error handler
 * wrote it (src/http/plugins/error-handler.ts), so every refusal, wherever it was made, is translated
 * in one place and never decided twice.
 */
export type OpenAIErrorType = 'invalid_request_error' | 'authentication_error' | 'permission_error' | 'rate_limit_error' | 'insufficient_quota' | 'server_error'

export type OpenAIError = { status: number; body: { error: { message: string; type: OpenAIErrorType; param: string | null; code: string | null } } }

type ParleyError = { code: string; message: string; details?: unknown }

/** `/input/0/content` → `input[0].content`, as OpenAI names a parameter. */
export function paramOf(pointer: string): string | null {
  if (pointer === '' || pointer === '/') return null
  let param = ''
  for (const segment of pointer.slice(1).split('/')) {
    const token = segment.replaceAll('~1', '/').replaceAll('~0', '~')
    param += /^\d+$/.test(token) ? `[${token}]` : param === '' ? token : `.${token}`
  }
  return param
}

function firstPointer(details: unknown): string | null {
  const problems = (details as { problems?: { pointer?: unknown; in?: unknown }[] } | undefined)?.problems
  const first = Array.isArray(problems) ? problems[0] : undefined
  if (!first || first.in !== 'body' || typeof first.pointer !== 'string') return null
  return paramOf(first.pointer)
}

const error = (status: number, type: OpenAIErrorType, message: string, code: string | null, param: string | null = null): OpenAIError => ({
  status,
  body: { error: { message, type, param, code } },
})

/** Parley's error (its status and envelope) as OpenAI would have answered it. */
export function toOpenAIError(status: number, parley: ParleyError): OpenAIError {
  const { code, message, details } = parley
  switch (code) {
    case 'validation_failed':
    case 'invalid_request':
    case 'unsupported_attachment':
    case 'unknown_tool_use_id':
    case 'retry_not_allowed':
    case 'payload_too_large':
    case 'method_not_allowed':
    case 'headers_too_large':
    case 'request_timeout':
      // OpenAI answers every malformed request with 400 (a 413 and a 405 keep their own status).
      return error(status === 413 || status === 405 ? status : 400, 'invalid_request_error', message, code === 'validation_failed' ? 'invalid_value' : code, firstPointer(details))
    case 'context_too_large':
      return error(400, 'invalid_request_error', message, 'context_length_exceeded', 'input')
    case 'previous_response_not_found':
      return error(400, 'invalid_request_error', message, code, 'previous_response_id')
    case 'not_found':
      return error(404, 'invalid_request_error', message, 'not_found')
    case 'unauthorized':
      return error(401, 'authentication_error', message, 'invalid_api_key')
    case 'forbidden':
      return error(403, 'permission_error', message, code)
    case 'run_in_progress':
      // OpenAI's answer to a second response on a conversation that has one running.
      return error(400, 'invalid_request_error', message, 'conversation_locked', 'conversation')
    case 'idempotency_key_reused':
      return error(409, 'invalid_request_error', message, code)
    case 'insufficient_balance':
      return error(429, 'insufficient_quota', message, 'insufficient_quota')
    case 'rate_limited':
      return error(429, 'rate_limit_error', message, 'rate_limit_exceeded')
    case 'upstream_error':
      return error(502, 'server_error', message, code)
    case 'unavailable':
      return error(503, 'server_error', message, 'service_unavailable')
    default:
      return error(status >= 500 ? status : 500, 'server_error', message, code)
  }
}

/** Whether a path is the facade's (everything under /v1/ but the catalogue, which is Parley's own). */
export function isFacadePath(url: string): boolean {
  return url.startsWith('/v1/') && !url.startsWith('/v1/catalogue')
}
