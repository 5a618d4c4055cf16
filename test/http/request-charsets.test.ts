import { connect } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { LightMyRequestResponse } from 'fastify'
import { expectError } from '../helpers/http.ts'
import { createTestApp, type TestContext, type TestOrg } from '../helpers/test-app.ts'
import { fundedOrg, newChat, sandboxCatalogue } from '../helpers/turns.ts'

/**
 * Issue 36, item 4 (docs/decisions/057-request-charsets.md): a request body is read as UTF-8 only. A
 * body whose Content-Type declares another charset (`charset=utf-16`, `latin1`, `iso-8859-1`, ...) is
 * refused before it is read or parsed, on every route that takes a body, native and facade alike:
 * 415 `unsupported_media_type` in the envelope (OpenAI's shape under /v1), naming the charset, and
 * nothing written. `charset=utf-8` (any case, `utf8`, quoted) or no charset is taken as before.
 * The app answers over a real listening socket as well as through inject, and every answer is
 * checked against its /openapi.json (test/helpers/contract-check.ts), which must list the 415.
 */

let ctx: TestContext
let org: TestOrg
let port: number
let tables: string[]

beforeAll(async () => {
  ctx = await createTestApp({ catalogue: sandboxCatalogue() })
  org = fundedOrg(ctx)
  await ctx.app.listen({ port: 0, host: '127.0.0.1' })
  port = (ctx.app.server.address() as { port: number }).port
  tables = (ctx.store.db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`).all() as { name: string }[]).map((t) => t.name)
})
afterAll(async () => {
  await ctx.close()
})

/** Rows in every table: a refusal changes none. */
const rowsOfEveryTable = () => Object.fromEntries(tables.map((t) => [t, (ctx.store.db.prepare(`SELECT count(*) AS n FROM "${t}"`).get() as { n: number }).n]))

const FOREIGN = ['utf-16', 'UTF-16LE', 'latin1', 'iso-8859-1', 'ISO-8859-15', 'windows-1252', 'us-ascii', '"utf-16"', 'utf-7']

const send = (url: string, contentType: string, payload: string | Buffer, auth = org.auth) =>
  ctx.app.inject({ method: 'POST', url, headers: { ...auth, 'content-type': contentType }, payload })

function expectCharsetRefusal(res: LightMyRequestResponse, declared: string) {
  const error = expectError(res, 415, 'unsupported_media_type')
  expect(error.message).toContain(`charset=${declared}`)
  expect(error.message).toMatch(/only UTF-8 is accepted/)
  return error
}

describe('a body declared in a charset other than UTF-8, on the native API', () => {
  it('charset=utf-16 on chat creation: 415 in the envelope, naming the charset, nothing written', async () => {
    const before = rowsOfEveryTable()
    // What a client declaring UTF-16 sends: the JSON as UTF-16 bytes.
    const res = await send('/api/v1/chats', 'application/json; charset=utf-16', Buffer.from('\ufeff{"title":"sixteen"}', 'utf16le'))
    const error = expectCharsetRefusal(res, 'utf-16')
    expect(res.json().error.hint).toMatch(/UTF-8/)
    expect(error.message).not.toContain('sixteen')
    expect(rowsOfEveryTable()).toEqual(before)
  })

  it.each(FOREIGN)('charset=%s: 415, nothing written, whatever the bytes (here valid UTF-8 JSON)', async (charset) => {
    const before = rowsOfEveryTable()
    const res = await send('/api/v1/chats', `application/json; charset=${charset}`, '{"title":"plain"}')
    expectCharsetRefusal(res, charset.startsWith('"') ? charset.slice(1, -1) : charset)
    expect(rowsOfEveryTable()).toEqual(before)
  })

  it('a second charset parameter cannot slip another charset past a first utf-8', async () => {
    const before = rowsOfEveryTable()
    expectCharsetRefusal(await send('/api/v1/chats', 'application/json; charset=utf-8; charset=latin1', '{}'), 'latin1')
    expectCharsetRefusal(await send('/api/v1/chats', 'application/json;CHARSET = utf-16 ', '{}'), 'utf-16')
    expect(rowsOfEveryTable()).toEqual(before)
  })

  it('on every route that takes a body: a turn, a configuration publish, a cancel', async () => {
    const chatId = await newChat(ctx, org.auth)
    const before = rowsOfEveryTable()
    const turn = { model: 'sandbox/echo', input: [{ type: 'prompt', text: 'hi' }] }
    expectCharsetRefusal(await send(`/api/v1/chats/${chatId}/responses`, 'application/json; charset=latin1', JSON.stringify(turn)), 'latin1')
    expectCharsetRefusal(await send('/api/v1/config/instructions', 'application/json; charset=utf-16', JSON.stringify({ mode: 'append', body: 'be brief' })), 'utf-16')
    expectCharsetRefusal(await send(`/api/v1/runs/00000000-0000-4000-8000-000000000000/cancel`, 'application/json; charset=utf-16', '{}'), 'utf-16')
    expect(rowsOfEveryTable()).toEqual(before)
  })

  it('the route and the key are judged first: 404 for no route, 401 without a key', async () => {
    let res = await send('/api/v1/nothing', 'application/json; charset=utf-16', '{}')
    expectError(res, 404, 'not_found')
    res = await send('/api/v1/chats', 'application/json; charset=utf-16', '{}', {} as TestOrg['auth'])
    expectError(res, 401, 'unauthorized')
  })

  it('a request without a body is not refused for the charset its Content-Type names', async () => {
    const res = await ctx.app.inject({ method: 'GET', url: '/api/v1/chats', headers: { ...org.auth, 'content-type': 'application/json; charset=utf-16' } })
    expect(res.statusCode, res.body).toBe(200)
  })
})

describe('a body declared UTF-8, or with no charset', () => {
  it.each(['application/json', 'application/json; charset=utf-8', 'application/json; charset=UTF-8', 'application/json;charset=utf8', 'application/json; charset="UTF-8"'])(
    '%s: taken',
    async (contentType) => {
      const res = await send('/api/v1/chats', contentType, JSON.stringify({ title: 'naïve café' }))
      expect(res.statusCode, res.body).toBe(201)
      expect(res.json().title).toBe('naïve café')
    },
  )

  it('a turn declared charset=UTF-8 is taken and streamed', async () => {
    const chatId = await newChat(ctx, org.auth)
    const res = await send(`/api/v1/chats/${chatId}/responses`, 'application/json; charset=UTF-8', JSON.stringify({ model: 'sandbox/echo', input: [{ type: 'prompt', text: 'hi' }] }))
    expect(res.statusCode, res.body).toBe(200)
    expect(res.body).toContain('event: done')
  })
})

describe('on the OpenAI facade (/v1)', () => {
  it("charset=utf-16 on /v1/responses and /v1/conversations: 415 in OpenAI's error shape, nothing written", async () => {
    const before = rowsOfEveryTable()
    for (const [url, body] of [
      ['/v1/responses', { model: 'sandbox/echo', input: 'hi' }],
      ['/v1/conversations', { items: [{ role: 'user', content: 'hi' }] }],
    ] as const) {
      const res = await send(url, 'application/json; charset=utf-16', JSON.stringify(body))
      expect(res.statusCode, res.body).toBe(415)
      const error = (res.json() as { error: { message: string; type: string; param: string | null; code: string } }).error
      expect(error).toMatchObject({ type: 'invalid_request_error', param: null, code: 'unsupported_media_type' })
      expect(error.message).toContain('charset=utf-16')
      expect(error.message).toMatch(/only UTF-8 is accepted/)
    }
    expect(rowsOfEveryTable()).toEqual(before)
  })

  it('charset=UTF-8 is taken', async () => {
    const res = await send('/v1/conversations', 'application/json; charset=UTF-8', JSON.stringify({ items: [{ role: 'user', content: 'hi' }] }))
    expect(res.statusCode, res.body).toBe(200)
  })
})

describe('over a socket, with Expect: 100-continue', () => {
  /** Writes the head, and the body only if the server says 100 Continue; reads until it closes the connection. */
  function exchange(head: string, body: string): Promise<{ statuses: number[]; text: string }> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1')
      const chunks: Buffer[] = []
      const timer = setTimeout(() => {
        socket.destroy()
        reject(new Error(`no close; received ${JSON.stringify(Buffer.concat(chunks).toString('latin1'))}`))
      }, 5_000)
      socket.on('data', (chunk) => {
        chunks.push(chunk)
        if (Buffer.concat(chunks).toString('latin1').startsWith('HTTP/1.1 100 Continue\r\n\r\n')) socket.write(body)
      })
      socket.on('error', () => {})
      socket.on('close', () => {
        clearTimeout(timer)
        const text = Buffer.concat(chunks).toString('latin1')
        resolve({ statuses: [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1])), text })
      })
      socket.write(head)
    })
  }

  it('charset=utf-16: 415 at once, never 100 Continue, so the body is never sent; nothing written', async () => {
    const before = rowsOfEveryTable()
    const body = '{"title":"never sent"}'
    const res = await exchange(
      `POST /api/v1/chats HTTP/1.1\r\nHost: localhost\r\nAuthorization: ${org.auth.authorization}\r\nContent-Type: application/json; charset=utf-16\r\n` +
        `Content-Length: ${body.length}\r\nExpect: 100-continue\r\n\r\n`,
      body,
    )
    expect(res.statuses).toEqual([415])
    expect(res.text).toMatch(/\r\nconnection: close\r\n/i)
    const envelope = JSON.parse(res.text.slice(res.text.indexOf('\r\n\r\n') + 4)) as { error: { code: string; message: string } }
    expect(envelope.error.code).toBe('unsupported_media_type')
    expect(envelope.error.message).toContain('charset=utf-16')
    expect(rowsOfEveryTable()).toEqual(before)
  })
})
