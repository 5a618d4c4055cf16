/**
 * Typed domain errors. The HTTP layer maps each `code` to a status in one place
 * (src/http/plugins/error-handler.ts), so the rules never speak HTTP.
 */
/** One thing wrong with a request: where (a JSON pointer into `in`) and what. */
export type Problem = { in: 'body' | 'query' | 'path' | 'header'; pointer: string; message: string }

export abstract class DomainError extends Error {
  abstract readonly code: string
  readonly details?: unknown
  readonly hint?: string | null
  constructor(message: string, details?: unknown, hint?: string | null) {
    super(message)
    this.name = new.target.name
    this.details = details
    this.hint = hint
  }
}

export class InvalidRequestError extends DomainError {
  readonly code = 'invalid_request'
}

export class UnauthorizedError extends DomainError {
  readonly code = 'unauthorized'
  constructor(message = 'a valid API key is required: send Authorization: Bearer <API_KEY>') {
    super(message)
  }
}

export class NotFoundError extends DomainError {
  readonly code = 'not_found'
}

/** The OpenAI facade's `previous_response_id` names no response of this organisation that can be continued (decision 055). */
export class PreviousResponseNotFoundError extends DomainError {
  readonly code = 'previous_response_not_found'
  constructor(responseId: string) {
    super(`Previous response with id '${responseId}' not found.`)
  }
}

export class ValidationError extends DomainError {
  readonly code = 'validation_failed'
  readonly problems: Problem[]
  /** `hint`: what to do about it, when the problems alone do not say (a model not active names those that are). */
  constructor(problems: Problem[], hint?: string) {
    super(describeProblems(problems), { problems }, hint)
    this.problems = problems
  }
}

export class PayloadTooLargeError extends DomainError {
  readonly code = 'payload_too_large'
}

export function describeProblems(problems: Problem[]): string {
  const first = problems[0]
  if (!first) return 'the request is invalid'
  const where = first.pointer === '' ? `the ${first.in === 'query' ? 'query string' : first.in}` : `${first.in} ${first.pointer}`
  const more = problems.length > 1 ? ` (and ${problems.length - 1} more)` : ''
  return `${where}: ${first.message}${more}`
}

export class InsufficientBalanceError extends DomainError {
  readonly code = 'insufficient_balance'
}

/** 409 family: the chat's state forbids the submission. */
export class RunInProgressError extends DomainError {
  readonly code = 'run_in_progress'
  constructor(runId: string | null) {
    super(
      runId === null
        ? 'a turn of this chat is being started; wait for its run to finish'
        : `run ${runId} of this chat is still running; wait for it to finish or cancel it`,
      { run_id: runId },
    )
  }
}

export class IdempotencyKeyReusedError extends DomainError {
  readonly code = 'idempotency_key_reused'
  constructor(runId: string) {
    super(
      `this idempotency key was already used by run ${runId}; read that run instead of resubmitting`,
      { run_id: runId },
      `GET /api/v1/runs/${runId}`,
    )
  }
}

export class RetryNotAllowedError extends DomainError {
  readonly code = 'retry_not_allowed'
}

export class UnsupportedAttachmentError extends DomainError {
  readonly code = 'unsupported_attachment'
}

export class UnknownToolUseIdError extends DomainError {
  readonly code = 'unknown_tool_use_id'
}

export class ContextTooLargeError extends DomainError {
  readonly code = 'context_too_large'
}

export class UpstreamError extends DomainError {
  readonly code = 'upstream_error'
}

export class UnavailableError extends DomainError {
  readonly code = 'unavailable'
}

/** Why the database cannot take a write now (docs/decisions/028-busy-and-full-database.md). */
export type DatabaseUnavailableReason = 'database_busy' | 'storage_full' | 'read_only'

/**
 * 503 `unavailable`: the database cannot take this request now (its write lock held elsewhere past
 * the wait, a full disk, a node that cannot write). Nothing was written; `retryAfterSeconds` says
 * when to try again (the `Retry-After` header), `details.reason` which condition it was.
 */
export class DatabaseUnavailableError extends UnavailableError {
  readonly reason: DatabaseUnavailableReason
  readonly retryAfterSeconds: number
  constructor(message: string, reason: DatabaseUnavailableReason, retryAfterSeconds: number, hint: string, options: { cause?: unknown } = {}) {
    super(message, { reason }, hint)
    this.reason = reason
    this.retryAfterSeconds = retryAfterSeconds
    if ('cause' in options) this.cause = options.cause
  }
}

export class RateLimitedError extends DomainError {
  readonly code = 'rate_limited'
}

/**
 * 429 `rate_limited`: the organisation already has as many running customer runs as it may hold
 * at once (MAX_RUNNING_RUNS_PER_ORG, docs/decisions/033-running-run-caps.md). Nothing was written;
 * `retryAfterSeconds` is the `Retry-After` header.
 */
export class RunningRunsLimitError extends RateLimitedError {
  readonly retryAfterSeconds: number
  constructor(limit: number, retryAfterSeconds = 1) {
    super(
      `this organisation already has ${limit} running runs, the most it may have at once`,
      { reason: 'running_runs', limit, retry_after_seconds: retryAfterSeconds },
      'wait for one of your running runs to finish (or cancel one), then submit the turn again',
    )
    this.retryAfterSeconds = retryAfterSeconds
  }
}

/**
 * 503 `unavailable`: this node is serving as many turns as it takes at once (MAX_CONCURRENT_TURNS,
 * decision 033). Answered before the body is read; nothing was written.
 */
export class TurnCapacityError extends UnavailableError {
  readonly retryAfterSeconds: number
  constructor(limit: number, retryAfterSeconds = 1) {
    super(
      `this server is serving ${limit} turns, the most it takes at once`,
      { reason: 'concurrent_turns', limit, retry_after_seconds: retryAfterSeconds },
      'try again after Retry-After seconds',
    )
    this.retryAfterSeconds = retryAfterSeconds
  }
}

/**
 * 503 `unavailable`: this node is serving many turns and its event loop runs late, so it takes new
 * connections in slowly (decision 033): the turn is refused at once, nothing read or written, rather
 * than left waiting unseen in the kernel's queue.
 */
export class TurnOverloadError extends UnavailableError {
  readonly retryAfterSeconds: number
  constructor(loopDelayMs: number, retryAfterSeconds = 1) {
    super(
      'this server is overloaded: its event loop runs late while it serves many turns',
      { reason: 'overloaded', loop_delay_ms: Math.round(loopDelayMs), retry_after_seconds: retryAfterSeconds },
      'try again after Retry-After seconds',
    )
    this.retryAfterSeconds = retryAfterSeconds
  }
}

/**
 * 503 `unavailable`: the worker threads that read large bodies have as many waiting as they take
 * (docs/decisions/034-body-work-off-the-event-loop.md). Nothing was written.
 */
export class BodyWorkBusyError extends UnavailableError {
  readonly retryAfterSeconds = 1
  constructor() {
    super('the server is reading too many large request bodies at once', { reason: 'body_work_queue_full' }, 'try again after Retry-After seconds')
  }
}

/** Which bound a reader of a run's events met (docs/decisions/062-bounded-event-readers.md). */
export type ReaderBound = 'run_readers' | 'key_readers' | 'event_readers'

/**
 * 429 `rate_limited`: the run already has as many readers of its events on this node as it may
 * (`run_readers`), or the API key holds as many event streams here as it may (`key_readers`).
 * Nothing was opened; `retryAfterSeconds` is the `Retry-After` header.
 */
export class ReadersLimitError extends RateLimitedError {
  readonly retryAfterSeconds: number
  constructor(bound: Exclude<ReaderBound, 'event_readers'>, limit: number, retryAfterSeconds: number) {
    super(
      bound === 'run_readers' ? `this run already has ${limit} readers of its events, the most it may have at once` : `this API key already holds ${limit} event streams, the most it may hold at once`,
      { reason: bound, limit, retry_after_seconds: retryAfterSeconds },
      'close a stream you no longer read, or try again after Retry-After seconds',
    )
    this.retryAfterSeconds = retryAfterSeconds
  }
}

/**
 * 503 `unavailable`: this node serves as many event streams as it keeps room for beside its turns
 * and its health answers (`event_readers`, MAX_EVENT_READERS). Nothing was opened.
 */
export class ReaderCapacityError extends UnavailableError {
  readonly retryAfterSeconds: number
  constructor(limit: number, retryAfterSeconds: number) {
    super(
      `this server is serving ${limit} event streams, the most it takes at once`,
      { reason: 'event_readers', limit, retry_after_seconds: retryAfterSeconds },
      'try again after Retry-After seconds, or read the run once it has ended',
    )
    this.retryAfterSeconds = retryAfterSeconds
  }
}

/** The `Retry-After` (seconds) a refusal that passes carries, or null: every refusal that says when to come back has `retryAfterSeconds`. */
export function retryAfterOf(error: DomainError): number | null {
  const seconds = (error as { retryAfterSeconds?: unknown }).retryAfterSeconds
  return typeof seconds === 'number' ? seconds : null
}
