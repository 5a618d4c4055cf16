import { connect, type Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { receiveDeadlines } from '../../src/http/app.ts'
import { DEFAULT_REQUEST_TIMEOUT_MS, readSettings } from '../../src/settings.ts'
import { listeningTestApp } from '../helpers/test-app.ts'
import { echo, parseSse } from '../helpers/turns.ts'

/**
 * Issue 11: slow bodies held connections forever. Over a real listening server and raw sockets,
 * a client that takes longer than the (here 1 s) request deadline to send its request is closed;
 * a response that lasts longer, a turn's stream, is not.
 */

const DEADLINE_MS = 1_000
/**
 * The trickle being sent when the server closed the connection. How long after the deadline it
 * closed is the machine's (Node checks every 250 ms here; a busy machine is later), so it is
 * measured (`measured`), not asserted: that the client had bytes left to send shows the server cut
 * it at its deadline (decision 019, "Under load").
 */
let sending: { unsent: () => number } | undefined

let ctx: Awaited<ReturnType<typeof listeningTestApp>>
let port: number
let auth: { authorization: string }

beforeAll(async () => {
  ctx = await listeningTestApp({ catalogue: [echo()], requestTimeoutMs: DEADLINE_MS })
  port = ctx.port
  auth = { authorization: ctx.authorization }
})

afterAll(() => ctx.close())

type Closed = { afterMs: number; received: string }

/** Opens a raw connection, runs `drive` on it, and resolves when the server closes it. */
function rawConnection(drive: (socket: Socket, timers: NodeJS.Timeout[]) => void): Promise<Closed> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    let received = ''
    let started = 0
    const timers: NodeJS.Timeout[] = []
    const giveUp = setTimeout(() => {
      socket.destroy()
      reject(new Error(`connection still open after 10 s; received ${JSON.stringify(received)}`))
    }, 10_000)
    socket.on('connect', () => {
      started = performance.now()
      drive(socket, timers)
    })
    socket.on('data', (chunk) => (received += chunk.toString('latin1')))
    socket.on('error', () => {})
    socket.on('close', () => {
      clearTimeout(giveUp)
      for (const t of timers) clearInterval(t)
      resolve({ afterMs: performance.now() - started, received })
    })
  })
}

/**
 * Writes `text` one byte every `everyMs` (while the socket stays writable). Returns how many bytes
 * were not sent yet: more than none when the server closed the connection means it closed it at its
 * deadline, before the client had finished, not after.
 */
function trickle(socket: Socket, timers: NodeJS.Timeout[], text: string, everyMs: number): { unsent: () => number } {
  let i = 0
  const timer = setInterval(() => {
    if (i >= text.length || socket.destroyed || !socket.writable) return clearInterval(timer)
    socket.write(text[i++]!)
  }, everyMs)
  timers.push(timer)
  return { unsent: () => text.length - i }
}

const measured: Record<string, number> = {}

describe('request deadlines on a listening server', () => {
  it('settings: REQUEST_TIMEOUT_MS, 60 s by default, a positive whole number', () => {
    expect(readSettings({}).requestTimeoutMs).toBe(DEFAULT_REQUEST_TIMEOUT_MS)
    expect(DEFAULT_REQUEST_TIMEOUT_MS).toBe(60_000)
    expect(readSettings({ REQUEST_TIMEOUT_MS: '30000' }).requestTimeoutMs).toBe(30_000)
    expect(() => readSettings({ REQUEST_TIMEOUT_MS: '0' })).toThrow(/REQUEST_TIMEOUT_MS/)
    expect(() => readSettings({ REQUEST_TIMEOUT_MS: 'soon' })).toThrow(/REQUEST_TIMEOUT_MS/)
  })

  it('the server carries the deadlines, and no socket inactivity timeout', () => {
    expect(ctx.app.server.requestTimeout).toBe(DEADLINE_MS)
    expect(ctx.app.server.headersTimeout).toBe(DEADLINE_MS)
    expect(ctx.app.server.timeout).toBe(0)
    expect(receiveDeadlines()).toMatchObject({ requestTimeout: 60_000, http: { headersTimeout: 10_000, connectionsCheckingInterval: 1_000 } })
  })

  it('an authenticated client trickling its body a byte every 300 ms is closed at the deadline with a 408', async () => {
    const body = JSON.stringify({ title: 'x'.repeat(80) })
    const closed = await rawConnection((socket, timers) => {
      socket.write(
        `POST /api/v1/chats HTTP/1.1\r\nHost: localhost\r\nAuthorization: ${auth.authorization}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
      )
      sending = trickle(socket, timers, body, 300)
    })
    measured.authenticatedBody = closed.afterMs
    expect(closed.received).toMatch(/^HTTP\/1\.1 408 /)
    expect(closed.afterMs).toBeGreaterThanOrEqual(DEADLINE_MS - 50)
    expect(sending!.unsent()).toBeGreaterThan(0)
    expect(ctx.store.db.prepare('SELECT count(*) AS n FROM chats').get()).toEqual({ n: 0 })
  })

  it('an unauthenticated client trickling its body is closed at the deadline too', async () => {
    const body = JSON.stringify({ title: 'y'.repeat(80) })
    const closed = await rawConnection((socket, timers) => {
      socket.write(`POST /api/v1/chats HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`)
      sending = trickle(socket, timers, body, 300)
    })
    measured.unauthenticatedBody = closed.afterMs
    // Authentication answers 401 before the body is read; the unfinished body still meets the deadline.
    expect(closed.received).toMatch(/^HTTP\/1\.1 401 /)
    expect(sending!.unsent()).toBeGreaterThan(0)
  })

  it('a client trickling its headers is closed at the headers deadline', async () => {
    const closed = await rawConnection((socket, timers) => (sending = trickle(socket, timers, 'GET /api/v1/version HTTP/1.1\r\nHost: localhost\r\nX-Slow: ' + 'z'.repeat(100), 300)))
    measured.headers = closed.afterMs
    expect(closed.received).toMatch(/^HTTP\/1\.1 408 /)
    expect(sending!.unsent()).toBeGreaterThan(0)
  })

  it('an idle connection that never sends headers is closed', async () => {
    const closed = await rawConnection(() => {})
    measured.idle = closed.afterMs
    // Closed by the server (rawConnection gives up after 10 s otherwise), and not before the deadline.
    expect(closed.afterMs).toBeGreaterThanOrEqual(DEADLINE_MS - 50)
  })

  it('a normal request still works, and so does one whose body arrives within the deadline', async () => {
    const version = await fetch(`http://127.0.0.1:${port}/api/v1/version`)
    expect(version.status).toBe(200)
    expect((await version.json()).version).toBe('0.0.0-test')

    const body = JSON.stringify({ title: 'in time' })
    const closed = await rawConnection((socket, timers) => {
      socket.write(
        `POST /api/v1/chats HTTP/1.1\r\nHost: localhost\r\nAuthorization: ${auth.authorization}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`,
      )
      // Half the body now, the rest well within the deadline.
      socket.write(body.slice(0, 5))
      setTimeout(() => socket.write(body.slice(5)), DEADLINE_MS / 2)
    })
    expect(closed.received).toMatch(/^HTTP\/1\.1 201 /)
  })

  it('a turn streaming longer than the deadline completes', async () => {
    const chat = await fetch(`http://127.0.0.1:${port}/api/v1/chats`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: '{}',
    })
    expect(chat.status).toBe(201)
    const { id } = (await chat.json()) as { id: string }
    const words = Array.from({ length: 20 }, (_, i) => `word${i}`)
    const started = performance.now()
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/chats/${id}/responses`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sandbox/echo', input: [{ type: 'prompt', text: `/slow 200\n${words.slice(0, 10).join(' ')}\n${words.slice(10).join(' ')}` }] }),
    })
    expect(res.status).toBe(200)
    const text = await res.text()
    const streamedMs = performance.now() - started
    measured.turnStream = streamedMs
    // About 4 s: well past the deadline and Node's next check.
    expect(streamedMs).toBeGreaterThan(2 * DEADLINE_MS + 500)
    const frames = parseSse(text)
    const events = frames.map((f) => f.event)
    expect(events[0]).toBe('run')
    expect(events).not.toContain('error')
    const deltas = frames.filter((f) => f.event === 'delta').map((f) => JSON.stringify(f.data)).join('')
    expect(deltas).toContain('word19')
    console.log('closing times (ms):', Object.fromEntries(Object.entries(measured).map(([k, v]) => [k, Math.round(v)])))
  })
})
