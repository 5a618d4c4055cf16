import Database from 'better-sqlite3'
import type { LightMyRequestResponse } from 'fastify'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { SERVER_BUSY_TIMEOUT_MS } from '../../src/store/database.ts'
import { expectError } from '../helpers/http.ts'
import { createTestApp, type TestContext, type TestOrg } from '../helpers/test-app.ts'
import { fundedOrg, history, newChat, postTurn, prompt, sandboxCatalogue, snapshotRows, turn } from '../helpers/turns.ts'

/**
 * docs/decisions/028-busy-and-full-database.md: a database that cannot take a write (its lock held
 * by another process, its disk full) answers 503 `unavailable` in the error envelope, with a
 * Retry-After and a hint, whichever path met it: a route's own statement or the turn path's group
 * commit. Never a 500; the file stays intact; reads go on.
 */

let ctx: TestContext
let org: TestOrg
let chatId: string

beforeEach(async () => {
  ctx = await createTestApp({ catalogue: sandboxCatalogue() })
  org = fundedOrg(ctx)
  chatId = await newChat(ctx, org.auth)
  await turn(ctx, org.auth, chatId, { input: [prompt('before anything happened')] })
})
afterEach(async () => {
  await ctx.close()
})

function expectUnavailable(res: LightMyRequestResponse, reason: string): void {
  const error = expectError(res, 503, 'unavailable')
  expect(error).toMatchObject({ details: { reason } })
  expect((error as { hint?: string }).hint).toMatch(/retry/)
  expect(error.message).not.toMatch(/SQLITE/)
  expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1)
}

const createChat = () => ctx.app.inject({ method: 'POST', url: '/api/v1/chats', headers: org.auth, payload: {} })
const integrity = () => ctx.store.db.pragma('integrity_check', { simple: true })

describe('SQLITE_FULL (no room for the write)', () => {
  /** The file may not grow by a single page from here. */
  const fillUp = () => ctx.store.db.pragma(`max_page_count = ${ctx.store.db.pragma('page_count', { simple: true }) as number}`)
  const makeRoom = () => ctx.store.db.pragma('max_page_count = 1073741823')

  it('a turn answers 503 storage_full before any stream, writes nothing, and the database stays intact', async () => {
    const before = snapshotRows(ctx.store)
    fillUp()
    // 200 kB of prompt needs dozens of new pages.
    const res = await postTurn(ctx, org.auth, chatId, { model: 'sandbox/echo', input: [prompt('full disk '.repeat(20_000))] })
    expectUnavailable(res, 'storage_full')
    expect(res.headers['retry-after']).toBe('60')
    expect(snapshotRows(ctx.store)).toEqual(before)
    expect(integrity()).toBe('ok')

    // Reads go on.
    expect((await history(ctx, org.auth, chatId)).data.length).toBeGreaterThan(0)
    // Room again: the same turn goes through.
    makeRoom()
    const after = await turn(ctx, org.auth, chatId, { input: [prompt('full disk '.repeat(20_000))] })
    expect(after.events.at(-1)).toBe('done')
    expect(integrity()).toBe('ok')
  })

  it("a route's own write (creating chats) answers 503 storage_full once the file cannot grow, never a 500", async () => {
    fillUp()
    const statuses: number[] = []
    let refused: LightMyRequestResponse | null = null
    // Each chat is a small row: the pages left fill within a few hundred.
    for (let i = 0; i < 2_000 && refused === null; i++) {
      const res = await createChat()
      statuses.push(res.statusCode)
      if (res.statusCode !== 201) refused = res
    }
    expect(refused, 'no chat creation was refused').not.toBeNull()
    expectUnavailable(refused!, 'storage_full')
    expect(new Set(statuses)).toEqual(new Set([201, 503]))
    expect(integrity()).toBe('ok')
    makeRoom()
    expect((await createChat()).statusCode).toBe(201)
  })
})

describe('SQLITE_BUSY (the write lock held by another process)', () => {
  let other: Database.Database
  beforeEach(() => {
    other = new Database(ctx.store.db.name)
  })
  afterEach(() => {
    if (other.inTransaction) other.exec('ROLLBACK')
    other.close()
  })

  it('the server connection waits for a lock only SERVER_BUSY_TIMEOUT_MS at a time', () => {
    expect(ctx.store.db.pragma('busy_timeout', { simple: true })).toBe(SERVER_BUSY_TIMEOUT_MS)
    expect(SERVER_BUSY_TIMEOUT_MS).toBeLessThanOrEqual(50)
  })

  it("a route's own write answers 503 database_busy with Retry-After at once; reads are served", async () => {
    other.exec('BEGIN IMMEDIATE')
    // The wait is the connection's busy_timeout (at most 50 ms, asserted above), not the old 5 s; timings belong in bench/.
    const res = await createChat()
    expectUnavailable(res, 'database_busy')
    expect(res.headers['retry-after']).toBe('1')
    expect((await history(ctx, org.auth, chatId)).data.length).toBeGreaterThan(0)
    other.exec('ROLLBACK')
    expect((await createChat()).statusCode).toBe(201)
  })

  it('a turn submitted while the lock is held waits for it, without a stream opened before, and succeeds once it is released', async () => {
    other.exec('BEGIN IMMEDIATE')
    const pending = postTurn(ctx, org.auth, chatId, { model: 'sandbox/echo', input: [prompt('waiting for the lock')] })
    let answered = false
    void pending.then(() => (answered = true))
    await new Promise((resolve) => setTimeout(resolve, 400))
    expect(answered).toBe(false)
    // Meanwhile reads are served.
    expect((await history(ctx, org.auth, chatId)).data.length).toBeGreaterThan(0)
    other.exec('ROLLBACK')
    const res = await pending
    expect(res.statusCode, res.body).toBe(200)
    expect(res.body).toContain('event: done')
  })
})
