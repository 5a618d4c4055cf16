import { describe, expect, it } from 'vitest'
import { describeProblems, NotFoundError, ValidationError } from '../../src/domain/errors.ts'

describe('ValidationError', () => {
  it('carries its problems as details and names the first in its message', () => {
    const problems = [
      { in: 'body' as const, pointer: '/title', message: 'is too long' },
      { in: 'body' as const, pointer: '/namespace', message: 'is empty' },
    ]
    const error = new ValidationError(problems)
    expect(error.code).toBe('validation_failed')
    expect(error.details).toEqual({ problems })
    expect(error.message).toBe('body /title: is too long (and 1 more)')
  })
})

describe('describeProblems', () => {
  it('names the part of the request for a root pointer', () => {
    expect(describeProblems([{ in: 'query', pointer: '', message: 'is odd' }])).toBe('the query string: is odd')
    expect(describeProblems([])).toBe('the request is invalid')
  })
})

describe('NotFoundError', () => {
  it('has the not_found code and its own name', () => {
    const error = new NotFoundError('chat x not found')
    expect(error.code).toBe('not_found')
    expect(error.name).toBe('NotFoundError')
  })
})
