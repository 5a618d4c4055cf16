import { fixedCatalogue } from '../../src/providers/catalogue/catalogue-service.ts'
import { mkdtempSync, rmSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { composeApp } from '../../src/compose.ts'
import { buildApp, DEFAULT_BODY_LIMIT, type App } from '../../src/http/app.ts'
import { TURN_BODY_LIMIT } from '../../src/http/routes/api/v1/chats/responses.ts'
import { openDatabase } from '../../src/store/database.ts'
import { createStore, type Store } from '../../src/store/index.ts'
import { countRows } from '../helpers/http.ts'

/**
 * Issue 22, item 9 (decision 030): HTTP edge cases answer with a status in the error envelope,
 * over a real listening server and raw sockets: a request body with a Content-Encoding is refused
 * (400, the status every operation with a body documents for an unsupported body);
 * `Expect: 100-continue` is answered with the refusal itself (413 over the limit, 401 without a
 * key, 404 for no route), never with `100 Continue` first; CONNECT is 405, not a closed socket.
 */

let app: App
let store: Store
let port: number
let dir: string
let db: ReturnType<typeof openDatabase>
let host: { stopAll: () => void }
let key: string

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'parley-http-edge-'))
  db = openDatabase(join(dir, 'parley.db'))
  store = createStore(db)
  const deps = composeApp({
    store,
    catalogue: fixedCatalogue([]),
    allModels: [],
    env: { NODE_ID: 'test-node' },
    build: { version: '0.0.0-test', commit: 'test' },
  })
  host = deps.host
  app = await buildApp(deps, { requestTimeoutMs: 3_000 })
  await app.listen({ port: 0, host: '127.0.0.1' })
  port = (app.server.address() as { port: number }).port
  const org = store.organisations.create('edge', 'edge')
  key = store.apiKeys.create(org.id, 'test').key
})

afterAll(async () => {
  host.stopAll()
  await app.close()
  db.close()
  rmSync(dir, { recursive: true, force: true })
})

type Raw = { status: number; statuses: number[]; headers: Record<string, string>; body: string; text: string }

function parse(text: string): Raw {
  // Every status line the server wrote (an interim 100 Continue included), then the final answer.
  const statuses = [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]))
  const final = text.replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, '')
  const [head = '', ...rest] = final.split('\r\n\r\n')
  const [statusLine = '', ...lines] = head.split('\r\n')
  const headers: Record<string, string> = {}
  for (const line of lines) {
    const at = line.indexOf(':')
    headers[line.slice(0, at).trim().toLowerCase()] = line.slice(at + 1).trim()
  }
  return { status: Number(statusLine.split(' ')[1]), statuses, headers, body: rest.join('\r\n\r\n'), text }
}

/**
 * Writes `head`, then (only once the server says `100 Continue`, when `body` is given) the body;
 * reads until the server closes the connection, or 5 s pass.
 */
function exchange(head: string, body?: Buffer): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    const chunks: Buffer[] = []
    let sentBody = false
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error(`no close after 5 s; received ${JSON.stringify(Buffer.concat(chunks).toString('latin1'))}`))
    }, 5_000)
    socket.on('data', (chunk) => {
      chunks.push(chunk)
      if (body && !sentBody && Buffer.concat(chunks).toString('latin1').startsWith('HTTP/1.1 100 Continue\r\n\r\n')) {
        sentBody = true
        socket.write(body)
      }
    })
    socket.on('error', () => {})
    socket.on('close', () => {
      clearTimeout(timer)
      resolve(parse(Buffer.concat(chunks).toString('latin1')))
    })
    socket.write(head)
  })
}

function expectEnvelope(res: Raw, status: number, code: string) {
  expect(res.status, res.text.slice(0, 500)).toBe(status)
  expect(res.headers['content-type']).toMatch(/^application\/json/)
  const body = JSON.parse(res.body) as { error: { code: string; message: string } }
  expect(Object.keys(body)).toEqual(['error'])
  expect(body.error.code).toBe(code)
  expect(body.error.message.length).toBeGreaterThan(0)
  return body.error
}

const request = (method: string, path: string, headers: Record<string, string | number>) =>
  `${method} ${path} HTTP/1.1\r\nHost: localhost\r\n${Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('')}\r\n`

describe('a request body with a Content-Encoding', () => {
  const post = (encoding: string, body: Buffer, extra: Record<string, string> = {}) =>
    app.inject({
      method: 'POST',
      url: '/api/v1/chats',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-encoding': encoding, ...extra },
      payload: body,
    })

  it.each(['gzip', 'deflate', 'br', 'GZIP', 'identity, gzip'])('%s: 400 in the envelope, with Accept-Encoding: identity, nothing written', async (encoding) => {
    const before = countRows(store, 'chats')
    for (const body of [gzipSync('{"title":"zipped"}'), Buffer.from('{"title":"plain"}')]) {
      const res = await post(encoding, body)
      expect(res.statusCode, res.body).toBe(400)
      expect(res.headers['content-type']).toMatch(/^application\/json/)
      expect(res.headers['accept-encoding']).toBe('identity')
      const error = (res.json() as { error: { code: string; message: string; hint: string } }).error
      expect(error.code).toBe('invalid_request')
      expect(error.message).toMatch(/Content-Encoding/)
      expect(error.hint).toMatch(/without a Content-Encoding/)
    }
    expect(countRows(store, 'chats')).toBe(before)
  })

  it('identity is no encoding: the body is taken', async () => {
    const res = await post('identity', Buffer.from('{"title":"plain"}'))
    expect(res.statusCode, res.body).toBe(201)
  })

  it('the route and the key come first: 404 for no route, 401 without a key', async () => {
    let res = await app.inject({ method: 'POST', url: '/api/v1/nothing', headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, payload: '{}' })
    expect(res.statusCode).toBe(404)
    res = await app.inject({ method: 'POST', url: '/api/v1/chats', headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, payload: '{}' })
    expect(res.statusCode).toBe(401)
  })

  it('a request without a body is not refused for its Content-Encoding header', async () => {
    const res = await app.inject({ method: 'GET', url: '/api/v1/chats', headers: { authorization: `Bearer ${key}`, 'content-encoding': 'gzip' } })
    expect(res.statusCode, res.body).toBe(200)
  })
})

describe('Expect: 100-continue', () => {
  const keyed = (length: number, extra: Record<string, string | number> = {}) => ({
    authorization: `Bearer ${key}`,
    'content-type': 'application/json',
    'content-length': length,
    expect: '100-continue',
    ...extra,
  })

  it('a declared length over the 1 MiB limit: 413 at once, no 100 Continue, connection closed', async () => {
    const res = await exchange(request('POST', '/api/v1/chats', keyed(DEFAULT_BODY_LIMIT + 1)))
    expect(res.statuses).toEqual([413])
    expectEnvelope(res, 413, 'payload_too_large')
    expect(res.headers.connection).toBe('close')
  })

  it('a declared length over the turn limit on the turn route: 413 at once, no 100 Continue', async () => {
    const res = await exchange(request('POST', '/api/v1/chats/3f2c1b0a-9d8e-4f7a-b6c5-d4e3f2a1b0c9/responses', keyed(TURN_BODY_LIMIT + 1)))
    expect(res.statuses).toEqual([413])
    expectEnvelope(res, 413, 'payload_too_large')
  })

  it('without a key: 401 at once, no 100 Continue', async () => {
    const res = await exchange(request('POST', '/api/v1/chats', { 'content-type': 'application/json', 'content-length': 2, expect: '100-continue' }))
    expect(res.statuses).toEqual([401])
    expectEnvelope(res, 401, 'unauthorized')
    expect(res.headers.connection).toBe('close')
  })

  it('to no route: 404 at once, no 100 Continue', async () => {
    const res = await exchange(request('POST', '/api/v1/nothing', keyed(2)))
    expect(res.statuses).toEqual([404])
    expectEnvelope(res, 404, 'not_found')
  })

  it('with a Content-Encoding: 400 at once, no 100 Continue', async () => {
    const res = await exchange(request('POST', '/api/v1/chats', keyed(2, { 'content-encoding': 'gzip' })))
    expect(res.statuses).toEqual([400])
    expect(expectEnvelope(res, 400, 'invalid_request').message).toMatch(/Content-Encoding/)
  })

  it('within the limit: 100 Continue, then the body is read and answered', async () => {
    const body = Buffer.from('{"title":"continued"}')
    const res = await exchange(request('POST', '/api/v1/chats', keyed(body.length, { connection: 'close' })), body)
    expect(res.statuses).toEqual([100, 201])
    expect(res.status).toBe(201)
    expect(JSON.parse(res.body)).toMatchObject({ title: 'continued' })
  })
})

describe('a body refused unread', () => {
  it('within the limit, the connection is kept: the body is discarded and the next request on it is answered', async () => {
    const body = `{"x":"${'['.repeat(50_000)}"}`
    const first = request('POST', '/api/v1/nothing', { 'content-type': 'application/json', 'content-length': body.length })
    const second = request('GET', '/healthz', { connection: 'close' })
    const res = await exchange(first + body + second)
    expect(res.statuses).toEqual([404, 200])
  })

  it('over the limit, the connection is closed after the answer', async () => {
    const res = await exchange(request('POST', '/api/v1/chats', { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': DEFAULT_BODY_LIMIT + 1 }))
    expect(res.statuses).toEqual([413])
    expectEnvelope(res, 413, 'payload_too_large')
    expect(res.headers.connection).toBe('close')
  })
})

describe('CONNECT', () => {
  it.each(['example.com:443', '/api/v1/chats'])('CONNECT %s: 405 in the envelope, then the connection is closed', async (target) => {
    const res = await exchange(`CONNECT ${target} HTTP/1.1\r\nHost: ${target.startsWith('/') ? 'localhost' : target}\r\n\r\n`)
    const error = expectEnvelope(res, 405, 'method_not_allowed')
    expect(error.message).toMatch(/CONNECT/)
    expect(res.headers.connection).toBe('close')
    expect(res.headers.allow).toBeDefined()
    expect(Number(res.headers['content-length'])).toBe(Buffer.byteLength(res.body))
  })
})
