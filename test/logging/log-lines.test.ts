import { randomUUID } from 'node:crypto'
import { afterEach, describe, expect, it } from 'vitest'
import { errorCodeOf } from '../../src/http/plugins/error-handler.ts'
import { chooseLogFormat, logStream } from '../../src/logging/log-format.ts'
import { runSettledLine } from '../../src/logging/run-settled-line.ts'
import type { RunOutcome } from '../../src/domain/runs/run-outcome.ts'
import { captureLog, createTestApp, type TestContext } from '../helpers/test-app.ts'

const contexts: TestContext[] = []
afterEach(async () => {
  for (const ctx of contexts.splice(0)) await ctx.close()
})

const jsonLines = (text: string) =>
  text
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, any>)

describe('chooseLogFormat', () => {
  it('pretty for a terminal in development, JSON in production or when piped, LOG_FORMAT over both', () => {
    expect(chooseLogFormat({}, true)).toBe('pretty')
    expect(chooseLogFormat({ NODE_ENV: 'development' }, true)).toBe('pretty')
    expect(chooseLogFormat({}, false)).toBe('json')
    expect(chooseLogFormat({ NODE_ENV: 'production' }, true)).toBe('json')
    expect(chooseLogFormat({ NODE_ENV: 'production', LOG_FORMAT: 'pretty' }, false)).toBe('pretty')
    expect(chooseLogFormat({ LOG_FORMAT: 'json' }, true)).toBe('json')
    expect(chooseLogFormat({ LOG_FORMAT: '' }, false)).toBe('json')
  })

  it('refuses an unknown LOG_FORMAT, naming the choices', () => {
    expect(() => chooseLogFormat({ LOG_FORMAT: 'yaml' }, true)).toThrow(/LOG_FORMAT must be one of pretty, json/)
  })
})

describe('pretty logs', () => {
  it('writes readable lines through pino-pretty, with the same redaction as JSON', async () => {
    const log = captureLog()
    const ctx = await createTestApp({ logger: { level: 'info', stream: logStream('pretty', log.stream) } })
    contexts.push(ctx)
    const org = ctx.org()
    const res = await ctx.app.inject({ method: 'GET', url: '/api/v1/chats', headers: { ...org.auth, 'x-request-id': 'pretty-1' } })
    expect(res.statusCode).toBe(200)
    expect(log.text).toMatch(/INFO.*: request completed/)
    expect(log.text).toContain('pretty-1')
    // Not one JSON object a line.
    expect(() => JSON.parse(log.text.trim().split('\n')[0]!)).toThrow()
    expect(log.text).not.toContain(org.key)
    expect(log.text).not.toContain(org.key.slice(3))
  })

  it('json adds no stream: pino writes its own JSON lines', () => {
    expect(logStream('json')).toBeUndefined()
  })
})

describe('the error code on every 4xx/5xx log line', () => {
  it('each failed request\'s "request completed" line names the code its body sent; a success names none', async () => {
    const log = captureLog()
    const ctx = await createTestApp({ logger: { level: 'info', stream: log.stream }, rateLimitPerMinute: 5 })
    contexts.push(ctx)
    const org = ctx.org()
    const asked = [
      { method: 'GET', url: '/api/v1/chats', headers: {} }, // 401: no key
      { method: 'GET', url: `/api/v1/chats/${randomUUID()}`, headers: org.auth }, // 404
      { method: 'POST', url: '/api/v1/chats', headers: { ...org.auth, 'content-type': 'application/json' }, payload: '{"title": 5}' }, // 422
      { method: 'POST', url: '/api/v1/chats', headers: { ...org.auth, 'content-type': 'application/json' }, payload: '{"title":' }, // 400
      { method: 'PATCH', url: '/api/v1/chats', headers: org.auth }, // 405
      { method: 'GET', url: '/nowhere', headers: {} }, // 404 without a route
      { method: 'GET', url: '/api/v1/chats', headers: org.auth }, // 200
      { method: 'GET', url: '/api/v1/chats', headers: org.auth },
      { method: 'GET', url: '/api/v1/chats', headers: org.auth },
      { method: 'GET', url: '/api/v1/chats', headers: org.auth }, // 429 (the 5th keyed request was the 404's 4 before)
    ] as const
    const answers = new Map<string, { status: number; code: string | null }>()
    for (const [i, r] of asked.entries()) {
      const id = `req-${i}`
      const res = await ctx.app.inject({ ...r, headers: { ...r.headers, 'x-request-id': id } } as never)
      answers.set(id, { status: res.statusCode, code: res.statusCode >= 400 ? res.json().error.code : null })
    }
    const statuses = [...answers.values()].map((a) => a.status)
    expect(new Set(statuses)).toEqual(new Set([400, 401, 404, 405, 422, 429, 200]))

    const completed = jsonLines(log.text).filter((line) => line.msg === 'request completed')
    expect(completed).toHaveLength(asked.length)
    for (const line of completed) {
      const answer = answers.get(line.reqId)!
      expect(line.res.statusCode).toBe(answer.status)
      if (answer.status >= 400) expect(line.error_code, `${line.reqId} (${answer.status})`).toBe(answer.code)
      else expect(line).not.toHaveProperty('error_code')
    }
  })

  it('errorCodeOf reads the envelope as sent and nothing else', () => {
    expect(errorCodeOf('{"error":{"code":"not_found","message":"x"}}')).toBe('not_found')
    expect(errorCodeOf('{"data":[]}')).toBeNull()
    expect(errorCodeOf('{"error":')).toBeNull()
    expect(errorCodeOf(Buffer.from('{"error":{"code":"x"}}'))).toBeNull()
    expect(errorCodeOf(undefined)).toBeNull()
  })
})

describe('runSettledLine', () => {
  const outcome = (over: Partial<RunOutcome> = {}): RunOutcome => ({
    status: 'succeeded',
    stopReason: 'end_turn',
    error: null,
    usage: { input_tokens: 120, output_tokens: 34, reasoning_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0 },
    providerResponseId: null,
    modelServed: null,
    pendingToolCalls: [],
    latencyMs: 812,
    firstDeltaMs: 95,
    streamOpened: true,
    vendorRequests: 1,
    contextRefusal: null,
    ...over,
  })
  const run = { runId: 'r1', chatId: 'c1', orgId: 'o1', model: { name: 'sandbox/echo' } }

  it('names the run, its chat, model, status, tokens, cost and latency', () => {
    expect(runSettledLine(run, outcome(), '0.0012')).toEqual({
      run_id: 'r1',
      chat_id: 'c1',
      org_id: 'o1',
      model: 'sandbox/echo',
      charge: 'usage',
      status: 'succeeded',
      stop_reason: 'end_turn',
      error_code: null,
      input_tokens: 120,
      output_tokens: 34,
      usage_estimated: false,
      cost: '0.0012',
      latency_ms: 812,
    })
  })

  it('a failed run carries its error code, and an estimate says so', () => {
    const line = runSettledLine(run, outcome({ status: 'failed', stopReason: null, error: { code: 'upstream_error', message: 'boom' }, usageLost: true }), '0')
    expect(line).toMatchObject({ status: 'failed', error_code: 'upstream_error', usage_estimated: true })
    expect(JSON.stringify(line)).not.toContain('boom')
  })
})
