import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import {
  DatabaseUnavailableError,
  DomainError,
  InvalidRequestError,
  NotFoundError,
  PayloadTooLargeError,
  retryAfterOf,
  ValidationError,
  type Problem,
} from '../../domain/errors.ts'
import { databaseErrorOf, sqliteCodeOf } from '../../store/sqlite-errors.ts'
import { allowedMethods, EdgeRefusal } from '../edge-errors.ts'
import { problemsFromAjv } from './validation.ts'
import { sendEnvelope } from '../send-envelope.ts'

/** docs/guide/errors.md: the one place where a domain error code becomes an HTTP status. */
export function statusOf(error: DomainError): number {
  switch (error.code) {
    case 'invalid_request':
    case 'previous_response_not_found':
      return 400
    case 'unauthorized':
      return 401
    case 'not_found':
      return 404
    case 'insufficient_balance':
      return 402
    case 'run_in_progress':
    case 'idempotency_key_reused':
    case 'retry_not_allowed':
      return 409
    case 'payload_too_large':
      return 413
    case 'validation_failed':
    case 'unsupported_attachment':
    case 'unknown_tool_use_id':
    case 'context_too_large':
      return 422
    case 'rate_limited':
      return 429
    case 'upstream_error':
      return 502
    case 'unavailable':
      return 503
    default:
      return 500
  }
}

export function sendError(reply: FastifyReply, error: DomainError): FastifyReply {
  const body: { code: string; message: string; details?: unknown; hint?: string | null } = { code: error.code, message: error.message }
  if (error.details !== undefined) body.details = error.details
  if (error.hint !== undefined) body.hint = error.hint
  // A condition that passes (the database's write lock, a full disk, a cap on running runs or turns): when to come back.
  const retryAfter = retryAfterOf(error)
  if (retryAfter !== null) reply.header('retry-after', String(retryAfter))
  return sendEnvelope(reply, statusOf(error), body)
}


const contextToWhere: Record<string, Problem['in']> = { body: 'body', querystring: 'query', params: 'path' }

/** Framework errors (validation, parsing, limits) expressed as the domain's errors. */
function translate(error: FastifyError): DomainError | null {
  if (error instanceof DomainError) return error
  // The database's condition (docs/decisions/028-busy-and-full-database.md): busy, full or read-only
  // is a 503 with Retry-After, whichever route's statement met it; corruption and bugs stay 500s.
  const database = databaseErrorOf(error)
  if (database) return database
  if (error.validation) {
    const where = contextToWhere[error.validationContext ?? 'body'] ?? 'body'
    const problems = problemsFromAjv(error.validation as never, where)
    // A malformed identifier in the path is a 400 (docs/guide/errors.md); everything else is 422.
    if (where === 'path') return new InvalidRequestError(`invalid path parameter: ${problems.map((p) => p.pointer).join(', ')}`, { problems })
    return new ValidationError(problems)
  }
  if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return new PayloadTooLargeError('the request body is too large')
  if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return new InvalidRequestError('unsupported content type: send application/json')
  }
  if (error.statusCode === 400) return new InvalidRequestError(error.message.replace(/^Body is not valid JSON but content-type is set to 'application\/json'/, 'malformed JSON body'))
  if (error.statusCode === 404) return new NotFoundError('not found')
  return null
}

/** The `error.code` of an error envelope as sent, or null for any other body. */
export function errorCodeOf(payload: unknown): string | null {
  if (typeof payload !== 'string' || !payload.startsWith('{"error":')) return null
  try {
    const code = (JSON.parse(payload) as { error?: { code?: unknown } }).error?.code
    return typeof code === 'string' ? code : null
  } catch {
    return null
  }
}

export function installErrorHandler(app: FastifyInstance): void {
  // Every 4xx/5xx log line names its error code, whoever answered (a route, a hook, the rate limit,
  // this handler): Fastify writes "request completed" through reply.log after onSend.
  app.addHook('onSend', async (_request, reply, payload) => {
    if (reply.statusCode >= 400) {
      const code = errorCodeOf(payload)
      if (code !== null) reply.log = reply.log.child({ error_code: code })
    }
    return payload
  })
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof EdgeRefusal) {
      const body = { code: error.code, message: error.message, ...(error.hint === undefined ? {} : { hint: error.hint }) }
      return sendEnvelope(reply.headers(error.headers), error.status, body)
    }
    const known = translate(error)
    if (known instanceof DatabaseUnavailableError) {
      // The operator's line: which condition, and SQLite's own code (never in the answer).
      request.log.warn({ reason: known.reason, sqlite_code: sqliteCodeOf(known.cause) }, 'database unavailable')
    }
    if (known) return sendError(reply, known)
    request.log.error({ err: error }, 'unhandled error')
    return sendEnvelope(reply, 500, { code: 'internal', message: 'internal error' })
  })
  // HTTP/1.1 requires Host (RFC 9112 §3.2). Node's own check answers an empty 400, so buildApp turns
  // it off (requireHostHeader: false) and the check is made here, before any other hook.
  app.addHook('onRequest', async (request, reply) => {
    if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) {
      reply.header('connection', 'close')
      return sendError(reply, new InvalidRequestError('the Host header is required'))
    }
  })
  // Known path, other method: 405 with Allow; unknown path: 404. Neither echoes the URL. Answered
  // in onRequest, before the body is read or parsed (decision 030): Fastify would otherwise parse
  // a JSON body for its not-found handler. The handler stays for what reaches it another way.
  app.addHook('onRequest', async (request, reply) => {
    if (request.is404) return answerNotFound(app, request, reply)
  })
  app.setNotFoundHandler((request, reply) => answerNotFound(app, request, reply))
}

function answerNotFound(app: FastifyInstance, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const allow = allowedMethods(app, request.url)
  if (allow.length > 0) {
    return sendEnvelope(reply.header('allow', allow.join(', ')), 405, { code: 'method_not_allowed', message: `${request.method} is not allowed here; use ${allow.join(', ')}` })
  }
  return sendError(reply, new NotFoundError(`no route for ${request.method} at this path`))
}
