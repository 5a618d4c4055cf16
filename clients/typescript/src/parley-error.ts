import type { ErrorBody } from './turn-events.ts'

/**
 * An answer of the API other than success: an HTTP error (the error envelope's body) or an `error`
 * event that ended a turn's stream. `runId` is set when the body names a run (`details.run_id`), as
 * a 502 `upstream_error` does so the caller can send `retry_of`.
 */
export class ParleyApiError extends Error {
  override readonly name: string = 'ParleyApiError'
  readonly code: ErrorBody['code']
  readonly details: unknown
  readonly hint: string | null
  readonly runId: string | null

  constructor(
    /** The HTTP status; null for an `error` event inside a stream that had answered 200. */
    readonly status: number | null,
    body: ErrorBody,
  ) {
    super(body.message)
    this.code = body.code
    this.details = body.details
    this.hint = body.hint ?? null
    this.runId = runIdOf(body.details)
  }

  /** The error an HTTP answer carries: its envelope, or a description when the body is not one (a proxy's page). */
  static fromResponse(response: Response, body: unknown): ParleyApiError {
    if (isEnvelope(body)) return new ParleyApiError(response.status, body.error)
    return new ParleyApiError(response.status, {
      code: 'unexpected_response',
      message: `${response.status} ${response.statusText} without the API's error envelope`,
      details: typeof body === 'string' ? { body: body.slice(0, 500) } : undefined,
    })
  }
}

/**
 * A turn whose first answer was lost (the connection broke before a status line arrived) and that,
 * sent again with the same idempotency key, turned out to have been accepted the first time (409
 * `idempotency_key_reused`). The answer to the send again is not the stream (docs/guide/runs.md):
 * read the run's events with `turns.resume(runId)`, or the run with GET /api/v1/runs/{run_id} and its
 * output with the chat's history.
 */
export class TurnAlreadyAccepted extends ParleyApiError {
  override readonly name = 'TurnAlreadyAccepted'
  override readonly runId: string

  constructor(refusal: ParleyApiError, runId: string) {
    super(refusal.status, { code: refusal.code, message: refusal.message, details: refusal.details, hint: refusal.hint })
    this.runId = runId
  }
}

function isEnvelope(body: unknown): body is { error: ErrorBody } {
  if (typeof body !== 'object' || body === null || !('error' in body)) return false
  const error = (body as { error: unknown }).error
  return typeof error === 'object' && error !== null && typeof (error as ErrorBody).code === 'string' && typeof (error as ErrorBody).message === 'string'
}

function runIdOf(details: unknown): string | null {
  if (typeof details !== 'object' || details === null) return null
  const runId = (details as { run_id?: unknown }).run_id
  return typeof runId === 'string' ? runId : null
}
