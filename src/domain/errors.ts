/**
 * Typed domain errors. The HTTP layer maps each `code` to a status in one place
 * (src/http/plugins/error-handler.ts), so the rules never speak HTTP.
 */
/** One thing wrong with a request: where (a JSON pointer into `in`) and what. */
export type Problem = { in: 'body' | 'query' | 'path'; pointer: string; message: string }

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

export class ValidationError extends DomainError {
  readonly code = 'validation_failed'
  readonly problems: Problem[]
  constructor(problems: Problem[]) {
    super(describeProblems(problems), { problems })
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
