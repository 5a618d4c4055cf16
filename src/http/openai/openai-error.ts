/**
 * Errors as OpenAI's API sends them (docs/decisions/055-openai-facade.md): `{error: {message, type,
 * param, code}}` with OpenAI's statuses. Pure: it takes Parley's envelope as the one error handler
 * wrote it (src/http/send-envelope.ts), so every refusal, wherever it was made, is translated in
 * one place and never decided twice.
 */
export const OPENAI_ERROR_TYPES = ['invalid_request_error', 'authentication_error', 'permission_error', 'rate_limit_error', 'insufficient_quota', 'server_error'] as const
export type OpenAIErrorType = (typeof OPENAI_ERROR_TYPES)[number]

export type OpenAIError = { status: number; body: { error: { message: string; type: OpenAIErrorType; param: string | null; code: string } } }

type ParleyError = { code: string; message: string; details?: unknown }

/**
 * Each of Parley's codes as OpenAI answers it: the status (null: Parley's own), the type, the code
 * (null: Parley's own) and the parameter it concerns when it is always the same one. OpenAI answers
 * every malformed request with 400; a second response on a running conversation is its
 * `conversation_locked`; a balance that cannot pay, its `insufficient_quota`.
 */
const TABLE: Record<string, { status: number | null; type: OpenAIErrorType; code: string | null; param?: string }> = {
  validation_failed: { status: 400, type: 'invalid_request_error', code: 'invalid_value' },
  invalid_request: { status: 400, type: 'invalid_request_error', code: null },
  unsupported_attachment: { status: 400, type: 'invalid_request_error', code: null },
  unknown_tool_use_id: { status: 400, type: 'invalid_request_error', code: null },
  retry_not_allowed: { status: 400, type: 'invalid_request_error', code: null },
  headers_too_large: { status: null, type: 'invalid_request_error', code: null },
  request_timeout: { status: null, type: 'invalid_request_error', code: null },
  payload_too_large: { status: 413, type: 'invalid_request_error', code: null },
  // A body declared in a charset other than UTF-8, refused before any operation runs (decision 057).
  unsupported_media_type: { status: null, type: 'invalid_request_error', code: null },
  method_not_allowed: { status: 405, type: 'invalid_request_error', code: null },
  context_too_large: { status: 400, type: 'invalid_request_error', code: 'context_length_exceeded', param: 'input' },
  previous_response_not_found: { status: 400, type: 'invalid_request_error', code: null, param: 'previous_response_id' },
  run_in_progress: { status: 400, type: 'invalid_request_error', code: 'conversation_locked', param: 'conversation' },
  not_found: { status: 404, type: 'invalid_request_error', code: null },
  unauthorized: { status: 401, type: 'authentication_error', code: 'invalid_api_key' },
  idempotency_key_reused: { status: 409, type: 'invalid_request_error', code: null },
  insufficient_balance: { status: 429, type: 'insufficient_quota', code: 'insufficient_quota' },
  rate_limited: { status: 429, type: 'rate_limit_error', code: 'rate_limit_exceeded' },
  upstream_error: { status: 502, type: 'server_error', code: null },
  unavailable: { status: 503, type: 'server_error', code: 'service_unavailable' },
  internal: { status: 500, type: 'server_error', code: null },
}

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

/** Parley's error (its status and envelope) as OpenAI would have answered it. */
export function toOpenAIError(status: number, parley: ParleyError): OpenAIError {
  const entry = TABLE[parley.code] ?? { status: status >= 500 ? status : 500, type: 'server_error' as const, code: null }
  const param = entry.param ?? firstPointer(parley.details)
  return { status: entry.status ?? status, body: { error: { message: parley.message, type: entry.type, param, code: entry.code ?? parley.code } } }
}

/** The codes each status may carry, for the document (src/http/schemas/openai-responses.ts). */
export function openaiCodesOf(status: number): string[] {
  const codes = Object.entries(TABLE).flatMap(([parley, entry]) => ((entry.status ?? -1) === status ? [entry.code ?? parley] : []))
  return [...new Set(codes)]
}

/**
 * Whether a URL is the facade's: everything under /v1/ but the catalogue, which is Parley's own.
 * Read as the router reads it: the query left out, a trailing slash ignored (`/v1/` is `/v1`).
 */
export function isFacadePath(url: string): boolean {
  const path = (url.split('?')[0] ?? '').replace(/\/+$/, '')
  return path.startsWith('/v1/') && !path.startsWith('/v1/catalogue')
}
