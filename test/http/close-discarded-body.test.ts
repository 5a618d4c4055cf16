import { connect, type Socket } from 'node:net'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { DEFAULT_BODY_LIMIT } from '../../src/http/app.ts'
import { listeningTestApp } from '../helpers/test-app.ts'
import { echo, parseSse } from '../helpers/turns.ts'

/**
 * Closing the server (the shutdown's app.close()) with a client that sent a request's headers and
 * part of a large body, got its answer before the server read the body, and keeps the connection
 * open. Node's close() spares that connection (it is not idle) and stops checking request
 * deadlines, so close waited for the client: 30 s here, until the test gave up. Measured over a real
 * listening server and a raw socket.
 */

/**
 * Past each test's own timeout: a close that waited for the client (the defect) never ends within
 * the test; a close that ended it ends. No time is asserted.
 */
const REQUEST_TIMEOUT_MS = 20_000

let ctx: Awaited<ReturnType<typeof listeningTestApp>>
let port: number
let auth: string
let sockets: Socket[] = []

beforeEach(async () => {
  ctx = await listeningTestApp({ catalogue: [echo()], requestTimeoutMs: REQUEST_TIMEOUT_MS })
  port = ctx.port
  auth = ctx.authorization
})

afterEach(async () => {
  for (const s of sockets) s.destroy()
  sockets = []
  await ctx.close()
})

/** Sends headers declaring `length` bytes and `sent` of them, and resolves with the response's first bytes. */
function partialBody(headers: string, length: number, sent: number): Promise<{ socket: Socket; received: () => string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    sockets.push(socket)
    let received = ''
    const giveUp = setTimeout(() => reject(new Error(`no response; received ${JSON.stringify(received)}`)), 5_000)
    socket.on('error', () => {})
    socket.on('connect', () => {
      socket.write(`POST /api/v1/chats HTTP/1.1\r\nHost: localhost\r\n${headers}Content-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`)
      socket.write('{"title":"' + 'x'.repeat(sent))
    })
    socket.on('data', (chunk) => {
      received += chunk.toString('latin1')
      if (!/\r\n\r\n/.test(received)) return
      clearTimeout(giveUp)
      resolve({ socket, received: () => received })
    })
  })
}

/**
 * Closes the app and waits until the server has ended `socket` too (the client never ends it). A
 * close that waited for the client, the defect, would not end within the test's timeout.
 */
async function closeWith(socket: Socket): Promise<true> {
  const hungUp = socket.destroyed ? Promise.resolve() : new Promise((resolve) => socket.once('close', resolve))
  await ctx.app.close()
  await hungUp
  return true
}

describe('closing the server with a connection whose request body was discarded', () => {
  it('a 401 answered before the body was read', async () => {
    const { socket, received } = await partialBody('', 100_000, 10)
    expect(received()).toMatch(/^HTTP\/1\.1 401 /)
    expect(received()).toMatch(/Connection: keep-alive/i)
    // The client keeps its connection and never sends the rest: close ends it and is over.
    expect(socket.destroyed).toBe(false)
    expect(await closeWith(socket)).toBe(true)
  }, 15_000)

  it('a 413 for a declared length over the limit', async () => {
    const { socket, received } = await partialBody(`Authorization: ${auth}\r\n`, DEFAULT_BODY_LIMIT * 2, 10)
    expect(received()).toMatch(/^HTTP\/1\.1 413 /)
    // Fastify answers a declared length over the limit with Connection: close: it never waited.
    expect(received()).toMatch(/connection: close/i)
    expect(await closeWith(socket)).toBe(true)
  }, 15_000)

  it('a turn still streaming when close starts is not cut: it gets its last frame, then close ends', async () => {
    const chat = await fetch(`http://127.0.0.1:${port}/api/v1/chats`, { method: 'POST', headers: { authorization: auth, 'content-type': 'application/json' }, body: '{}' })
    const { id } = (await chat.json()) as { id: string }
    // A discarded body on another connection too: that one is closed, the stream is not.
    await partialBody('', 100_000, 10)
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/chats/${id}/responses`, {
      method: 'POST',
      headers: { authorization: auth, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sandbox/echo', input: [{ type: 'prompt', text: '/slow 100\none two three four five six' }] }),
    })
    expect(res.status).toBe(200)
    const closing = ctx.app.close()
    // A connection destroyed under the stream would make text() throw; it ends with the stream's own last frame.
    const frames = parseSse(await res.text())
    await closing
    expect(frames[0]!.event).toBe('run')
    expect(frames.at(-1)).toMatchObject({ event: 'error', data: { code: 'unavailable' } })
  }, 15_000)
})
