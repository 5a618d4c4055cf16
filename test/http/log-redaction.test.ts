import { connect } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { API_KEY_PREFIX, generateSecret, SESSION_TOKEN_PREFIX } from '../../src/domain/credentials.ts'
import type { App } from '../../src/http/app.ts'
import { redactText, serializeError } from '../../src/http/redact-url.ts'
import { captureLog, createTestApp, type TestContext } from '../helpers/test-app.ts'

/**
 * Issue 11: "URLs logged with query strings and unknown path ids redacted". Not only the `req`
 * serializer: log messages (Fastify's own, e.g. "Route GET:/… not found"), errors' messages and
 * stacks may quote the URL. Every line the app writes, at trace level, must be free of a secret
 * sent in the URL, whatever the answer: 404, 405, 400 bad encoding, validation errors, 401, and
 * errors Node's parser raises before there is a request.
 */

const key = generateSecret(API_KEY_PREFIX)
const session = generateSecret(SESSION_TOKEN_PREFIX)

/** Every form of a secret that must not reach a log: as sent, without its prefix, percent-encoded. */
const forms = (secret: string) => [secret, secret.slice(3), secret.slice(3, 24), encodeURIComponent(secret).replace('_', '%5F')]

const expectClean = (output: string, secrets: string[]) => {
  for (const secret of secrets) for (const form of forms(secret)) expect(output, `the log carries ${form}`).not.toContain(form)
}

describe('redactText', () => {
  it('leaves text without secrets byte for byte', () => {
    for (const text of [
      'incoming request',
      'Route GET:/api/v1/chats/0b6f5a0e-7c1e-4c6a-9a55-2f0d7d3b9a11/history?limit=5 not found',
      "Error: boom\n    at handler (/work/main/src/http/app.ts:12:3)\n    at next (node:internal/x:1:1)",
      'a=1&b=2 100% pk_short',
      '',
    ]) {
      expect(redactText(text)).toBe(text)
    }
  })

  it('redacts URLs quoted in a message, keeping the words around them', () => {
    expect(redactText(`Route GET:/api/v1/chats/${key} not found`)).toBe('Route GET:/api/v1/chats/[redacted] not found')
    expect(redactText(`Route GET:/api/v1/chats?api_key=abc&limit=2 not found`)).toBe('Route GET:/api/v1/chats?api_key=[redacted]&limit=2 not found')
    expect(redactText(`'/api/v1/chats/%zz?token=abc' is not a valid url component`)).toBe(`'/api/v1/chats/%zz?token=[redacted] is not a valid url component`)
    expect(redactText(`relay to http://10.0.0.1:8080/api/v1/chats?access_token=abc failed`)).toBe('relay to http://10.0.0.1:8080/api/v1/chats?access_token=[redacted] failed')
  })

  it('redacts a secret-shaped word, a credential name=value, and encoded forms anywhere', () => {
    expect(redactText(`bad id ${key}.`)).toBe('bad id [redacted]')
    expect(redactText(`Bearer ${session}`)).toBe('Bearer [redacted]')
    expect(redactText(`api_key=abc&page=2 token=xyz`)).toBe('api_key=[redacted]&page=2 token=[redacted]')
    expect(redactText(`id ${key.replace('pk_', 'pk%5F')} missing`)).toBe('id [redacted] missing')
  })

  it('scrubs an error as pino serializes it: message, stack, own properties, nested errors; never the error itself', () => {
    const error = Object.assign(new Error(`'/api/v1/chats/${key}%zz' is not a valid url component`), {
      code: 'FST_ERR_BAD_URL',
      url: `/x?api_key=${key}`,
      rawPacket: Buffer.from(`GET /api/v1/chats/${key} HTTP/1.1\r\n`),
      details: { where: [`/y/${session}`] },
      cause: new Error(`caused by /z?token=${key}`),
    })
    const serialized = serializeError(error) as Record<string, unknown>
    const json = JSON.stringify(serialized)
    expectClean(json, [key, session])
    expect(serialized).toMatchObject({ type: 'Error', code: 'FST_ERR_BAD_URL', url: '/x?api_key=[redacted]', rawPacket: '[binary]', details: { where: ['/y/[redacted]'] } })
    expect(serialized.message).toContain('[redacted]')
    expect(serialized.stack).toContain('caused by /z?token=[redacted]')
    // The error object is left as it was.
    expect(error.url).toBe(`/x?api_key=${key}`)
    expect(error.message).toContain(key)
  })
})

describe('log lines of the real app', () => {
  const log = captureLog()
  let ctx: TestContext
  let app: App
  let realKey = ''
  let auth: Record<string, string> = {}

  /** The log lines written since `from`, parsed. */
  const linesSince = (from: number) =>
    log.text
      .slice(from)
      .trim()
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as Record<string, any>)

  beforeAll(async () => {
    ctx = await createTestApp({ logger: { level: 'trace', stream: log.stream } })
    app = ctx.app
    ;({ key: realKey, auth } = ctx.org('logs'))
  })

  afterAll(() => ctx.close())

  /** One request through inject: its status, and what it logged. */
  const logged = async (method: string, url: string, extra: { body?: unknown; headers?: Record<string, string> } = {}) => {
    const from = log.text.length
    const res = await app.inject({ method: method as never, url, headers: { ...auth, ...extra.headers }, ...(extra.body === undefined ? {} : { payload: extra.body as never }) })
    const text = log.text.slice(from)
    expect(text, `${method} ${url} logged nothing`).not.toBe('')
    return { status: res.statusCode, code: res.json().error?.code as string | undefined, text, lines: linesSince(from) }
  }

  it('a 404 for an unknown path with a key as its id and in the query', async () => {
    const r = await logged('GET', `/api/v1/nothing/${key}?api_key=${key}&q=${session}`)
    expect([r.status, r.code]).toEqual([404, 'not_found'])
    expectClean(r.text, [key, session, realKey])
    expect(r.lines.find((l) => l.msg === 'incoming request')?.req.url).toBe('/api/v1/nothing/[redacted]?api_key=[redacted]&q=[redacted]')
  })

  it('a 404 under a known prefix, with the key in a deeper segment', async () => {
    const r = await logged('GET', `/api/v1/chats/0b6f5a0e-7c1e-4c6a-9a55-2f0d7d3b9a11/nope/${key}?token=${key}`)
    expect(r.status).toBe(404)
    expectClean(r.text, [key, realKey])
  })

  it('a 405 on a known path, the key in the query', async () => {
    const r = await logged('DELETE', `/api/v1/version?api_key=${key}`)
    expect([r.status, r.code]).toEqual([405, 'method_not_allowed'])
    expectClean(r.text, [key, realKey])
  })

  it('a 400 for bad percent-encoding next to a key in the path and the query', async () => {
    const r = await logged('GET', `/api/v1/chats/${key}%zz?api_key=${key}`)
    expect([r.status, r.code]).toEqual([400, 'invalid_request'])
    expectClean(r.text, [key, realKey])
  })

  it('a 400 for a key pasted as a chat id (path validation)', async () => {
    const r = await logged('GET', `/api/v1/chats/${key}/history?limit=5`)
    expect([r.status, r.code]).toEqual([400, 'invalid_request'])
    expectClean(r.text, [key, realKey])
  })

  it('a 422 for an unknown query parameter named and valued by a key', async () => {
    const chat = await app.inject({ method: 'POST', url: '/api/v1/chats', headers: auth, payload: {} })
    const chatId = chat.json().id as string
    const r = await logged('GET', `/api/v1/chats/${chatId}/history?${key}=1&api_key=${key}`)
    expect([r.status, r.code]).toEqual([422, 'validation_failed'])
    expectClean(r.text, [key, realKey])
  })

  it('a 422 for a body that fails validation, with the key in the query and the body', async () => {
    const r = await logged('POST', `/api/v1/chats?key=${key}`, { body: { namespace: `Bad ${key}`, title: key } })
    expect([r.status, r.code]).toEqual([422, 'validation_failed'])
    expectClean(r.text, [key, realKey])
  })

  it('a 401 for a key sent in the query instead of the header', async () => {
    const from = log.text.length
    const res = await app.inject({ method: 'GET', url: `/api/v1/chats?api_key=${key}` })
    expect(res.statusCode).toBe(401)
    expectClean(log.text.slice(from), [key])
  })

  it('messages and errors logged through the app logger with a URL in them', () => {
    const from = log.text.length
    // What Fastify's default 404 handler and reply warnings write.
    app.log.info(`Route GET:/api/v1/chats/${key}?api_key=${key} not found`)
    app.log.info('Route %s:%s not found', 'GET', `/x?token=${key}`)
    app.log.warn(`Reply was already sent, did you forget to "return reply" in the "/api/v1/chats/${key}" (GET) route?`)
    // An error as the only argument: pino takes its message as the line's msg.
    app.log.error(new Error(`'/api/v1/chats/${key}%zz' is not a valid url component`))
    app.log.error({ err: new Error(`relay of /api/v1/chats?api_key=${key} failed`) }, 'relaying a write to the primary failed')
    app.log.info({ msg: `from an object /y/${session}` })
    // Request loggers are children: they inherit the scrubbing.
    app.log.child({ reqId: 'child' }).info(`Route POST:/api/v1/chats/${key}/responses not found`)
    const text = log.text.slice(from)
    expect(linesSince(from)).toHaveLength(7)
    expectClean(text, [key, session])
    expect(text).toContain('Route GET:/api/v1/chats/[redacted]?api_key=[redacted] not found')
    expect(text).toContain('Route GET:/x?token=[redacted] not found')
  })

  it('errors raised before there is a request: a bad request line and oversized headers, over a socket', async () => {
    await app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = app.server.address() as { port: number }
    const raw = (bytes: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect(port, '127.0.0.1', () => socket.end(bytes))
        let answer = ''
        socket.setEncoding('utf8').on('data', (chunk: string) => (answer += chunk))
        socket.on('close', () => resolve(answer))
        socket.on('error', reject)
      })
    const from = log.text.length
    const badLine = await raw(`GET /api/v1/chats/${key}?api_key=${key}\x01 HTTP/1.1\r\nHost: x\r\n\r\n`)
    expect(badLine).toMatch(/^HTTP\/1\.1 400/)
    const huge = await raw(`GET /api/v1/chats/${key}?api_key=${key} HTTP/1.1\r\nHost: x\r\nX-Fill: ${'a'.repeat(20_000)}\r\n\r\n`)
    expect(huge).toMatch(/^HTTP\/1\.1 431/)
    expectClean(log.text.slice(from), [key])
  })

  it('nothing the app logged in this file carries a secret', () => {
    expect(log.text).not.toBe('')
    expectClean(log.text, [key, session, realKey])
    expect(log.text.toLowerCase()).not.toContain('bearer')
  })
})
