import { request as httpRequest, type IncomingMessage } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestContext, type TestOrg } from '../helpers/test-app.ts'
import { fundedOrg, newChat, sandboxCatalogue } from '../helpers/turns.ts'

/**
 * Readers of runs' events are bounded (issue 36, docs/decisions/062-bounded-event-readers.md): per
 * run and per API key with 429 `rate_limited`, per node with 503 `unavailable`, each with
 * Retry-After and the connection closed; a place comes back when its reader goes. Small bounds here
 * (2 per run, 3 per key, 4 per node), so that each one is met by a handful of real connections.
 */
let ctx: TestContext
let port: number
let alice: TestOrg
let bob: TestOrg
const LIMITS = { perRun: 2, perKey: 3, perNode: 4 }

beforeAll(async () => {
  ctx = await createTestApp({ catalogue: sandboxCatalogue(), readerLimits: LIMITS })
  await ctx.app.listen({ port: 0, host: '127.0.0.1' })
  port = (ctx.app.server.address() as { port: number }).port
  alice = fundedOrg(ctx)
  bob = fundedOrg(ctx)
})
afterAll(async () => {
  await ctx?.close()
})

type Opened = { status: number; headers: IncomingMessage['headers']; body: string; close: () => void }

/** GET a run's events on a connection of its own; a 200 is held open (its body not read) until `close`. */
function read(org: TestOrg, runId: string): Promise<Opened> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path: `/api/v1/runs/${runId}/events`, headers: { ...org.auth, connection: 'keep-alive' }, agent: false }, (res) => {
      const close = () => {
        res.destroy()
        req.destroy()
      }
      if (res.statusCode === 200) return resolve({ status: 200, headers: res.headers, body: '', close })
      let body = ''
      res.setEncoding('utf8').on('data', (c: string) => (body += c))
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body, close }))
    })
    req.on('error', reject)
    req.end()
  })
}

/** A run that streams for a while: its readers stay open. */
async function slowRun(org: TestOrg): Promise<string> {
  const chatId = await newChat(ctx, org.auth)
  const res = await fetch(`http://127.0.0.1:${port}/api/v1/chats/${chatId}/responses`, {
    method: 'POST',
    headers: { ...org.auth, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'sandbox/echo', input: [{ type: 'prompt', text: '/slow 200\n' + 'word '.repeat(100) }] }),
  })
  const reader = res.body!.getReader()
  const first = new TextDecoder().decode((await reader.read()).value)
  void reader.cancel()
  return /"run_id":"([^"]+)"/.exec(first)![1]!
}

describe('bounded readers of run events', () => {
  it('past the run\'s bound, 429 run_readers with Retry-After and the connection closed; a place comes back when a reader goes', async () => {
    const run = await slowRun(alice)
    const first = await read(alice, run)
    const second = await read(alice, run)
    expect([first.status, second.status]).toEqual([200, 200])
    const third = await read(alice, run)
    expect(third.status).toBe(429)
    expect(JSON.parse(third.body).error).toMatchObject({ code: 'rate_limited', details: { reason: 'run_readers', limit: LIMITS.perRun } })
    expect(Number(third.headers['retry-after'])).toBeGreaterThanOrEqual(1)
    expect(third.headers.connection).toBe('close')
    first.close()
    let again: Opened | null = null
    // The place comes back once the server sees the connection close.
    for (let i = 0; i < 50 && again?.status !== 200; i++) {
      again = await read(alice, run)
      if (again.status !== 200) await new Promise((r) => setTimeout(r, 20))
    }
    expect(again!.status).toBe(200)
    second.close()
    again!.close()
  })

  it("past the key's bound, 429 key_readers; past the node's, 503 event_readers for every key", async () => {
    const runs = await Promise.all([slowRun(alice), slowRun(alice), slowRun(bob)])
    const held = [await read(alice, runs[0]!), await read(alice, runs[1]!), await read(alice, runs[0]!)]
    expect(held.map((h) => h.status)).toEqual([200, 200, 200])
    const overKey = await read(alice, runs[1]!)
    expect(overKey.status).toBe(429)
    expect(JSON.parse(overKey.body).error.details).toMatchObject({ reason: 'key_readers', limit: LIMITS.perKey })
    // Bob's first reader takes the node's last place; his second finds the node full.
    const bobs = await read(bob, runs[2]!)
    expect(bobs.status).toBe(200)
    const overNode = await read(bob, runs[2]!)
    expect(overNode.status).toBe(503)
    expect(JSON.parse(overNode.body).error).toMatchObject({ code: 'unavailable', details: { reason: 'event_readers', limit: LIMITS.perNode } })
    expect(Number(overNode.headers['retry-after'])).toBeGreaterThanOrEqual(1)
    expect(overNode.headers.connection).toBe('close')
    for (const h of [...held, bobs]) h.close()
  })

  it("another organisation's run answers 404 as a missing one, whatever its readers; a refused or missing read holds no place", async () => {
    const run = await slowRun(alice)
    const readers = [await read(alice, run), await read(alice, run)]
    const theirs = await read(bob, run)
    expect(theirs.status).toBe(404)
    const missing = await read(bob, '01a226bd-cc6c-72a7-b750-411811237a28')
    expect(JSON.parse(theirs.body)).toEqual(JSON.parse(missing.body.replace('01a226bd-cc6c-72a7-b750-411811237a28', run)))
    // Bob still has all his room: his 404s gave their places back.
    const bobRun = await slowRun(bob)
    expect((await read(bob, bobRun)).status).toBe(200)
    readers.forEach((r) => r.close())
  })
})
