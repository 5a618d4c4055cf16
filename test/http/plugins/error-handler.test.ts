import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import {
  DomainError,
  InvalidRequestError,
  NotFoundError,
  PayloadTooLargeError,
  UnauthorizedError,
  ValidationError,
} from '../../../src/domain/errors.ts'
import { statusOf } from '../../../src/http/plugins/error-handler.ts'
import { countRows, expectError } from '../../helpers/http.ts'
import { createTestApp, type TestContext, type TestOrg } from '../../helpers/test-app.ts'

describe('statusOf', () => {
  it('maps each domain error code to its status of decisions §3', () => {
    expect(statusOf(new InvalidRequestError('x'))).toBe(400)
    expect(statusOf(new UnauthorizedError())).toBe(401)
    expect(statusOf(new NotFoundError('x'))).toBe(404)
    expect(statusOf(new PayloadTooLargeError('x'))).toBe(413)
    expect(statusOf(new ValidationError([{ in: 'body', pointer: '/a', message: 'bad' }]))).toBe(422)
  })

  it('treats an unmapped code as 500', () => {
    class Odd extends DomainError {
      readonly code = 'odd'
    }
    expect(statusOf(new Odd('x'))).toBe(500)
  })
})

describe('framework errors over HTTP', () => {
  let ctx: TestContext
  let org: TestOrg
  beforeEach(async () => {
    ctx = await createTestApp()
    org = ctx.org()
  })
  afterEach(async () => {
    await ctx.close()
  })

  it('answers malformed JSON with 400 invalid_request', async () => {
    for (const payload of ['{', '{"a":}', 'not json', '{"title":"x",}']) {
      const res = await ctx.app.inject({
        method: 'POST',
        url: '/api/v1/chats',
        headers: { ...org.auth, 'content-type': 'application/json' },
        payload,
      })
      expectError(res, 400, 'invalid_request')
    }
    expect(countRows(ctx.store, 'chats')).toBe(0)
  })

  it('answers a content type other than JSON with 400 invalid_request', async () => {
    for (const type of ['text/plain', 'application/xml', 'application/x-www-form-urlencoded']) {
      const res = await ctx.app.inject({
        method: 'POST',
        url: '/api/v1/chats',
        headers: { ...org.auth, 'content-type': type },
        payload: '{}',
      })
      expectError(res, 400, 'invalid_request')
    }
    expect(countRows(ctx.store, 'chats')).toBe(0)
  })

  it('accepts JSON with a charset parameter', async () => {
    const res = await ctx.app.inject({
      method: 'POST',
      url: '/api/v1/chats',
      headers: { ...org.auth, 'content-type': 'application/json; charset=utf-8' },
      payload: '{"title":"ok"}',
    })
    expect(res.statusCode).toBe(201)
  })

  it('gives every response a request id, echoing the caller’s', async () => {
    const mine = await ctx.app.inject({ url: '/api/v1/version', headers: { 'x-request-id': 'trace-123' } })
    expect(mine.headers['x-request-id']).toBe('trace-123')
    const a = await ctx.app.inject({ url: '/nowhere' })
    const b = await ctx.app.inject({ url: '/nowhere' })
    expect(a.headers['x-request-id']).toBeTruthy()
    expect(a.headers['x-request-id']).not.toBe(b.headers['x-request-id'])
  })

  it('puts a human-readable message naming the first problem in a 422', async () => {
    const res = await ctx.app.inject({ method: 'POST', url: '/api/v1/chats', headers: org.auth, payload: { title: 't'.repeat(51) } })
    const error = expectError(res, 422, 'validation_failed')
    expect(error.message).toContain('/title')
  })
})
