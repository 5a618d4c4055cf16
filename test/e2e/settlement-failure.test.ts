import Database from 'better-sqlite3'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { startServer, waitFor, type ServerProcess } from './server-process.ts'
import { postTurn, readDatabase, request } from './turn-client.ts'
import { machineCeiling } from '../helpers/machine-timeouts.ts'

/**
 * Issue 12, decision 020: a settlement cannot be lost. Before, a settlement that threw sent the chat
 * back to rest while its run stayed `running` and uncharged, its lease renewed for ever, so no sweep
 * ever settled it and the chat took the next turn beside it.
 *
 * Here the database itself refuses the settlement: another connection to the server's database file
 * adds a trigger that aborts any write ending a run of this chat (as a constraint, a full disk or a
 * failing volume refuses a write). Nothing in the server knows about it. The server tries the
 * settlement four times, then ends the stream with an `error`, releases the run's lease and stops
 * renewing it; turns are refused meanwhile. Once the database takes the write again, the sweep
 * settles the run as `interrupted`, once, within a lease of it.
 */

const LEASE_TTL_MS = 3_000

describe('a settlement the database refuses, over the real server', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-e2e-settlement-'))
  const dbFile = join(dataDir, 'parley.db')
  let server: ServerProcess
  let key = ''
  const api = (path: string, init: { method?: string; body?: unknown } = {}) => request(server.url, path, { key, ...init })
  const runRow = (runId: string) =>
    readDatabase(dbFile, (db) => db.prepare('SELECT status, error, lease_owner, lease_expires_at, settled_at FROM runs WHERE id = ?').get(runId)) as {
      status: string
      error: string | null
      lease_owner: string | null
      lease_expires_at: string | null
      settled_at: string | null
    }
  const entriesOf = (runId: string) =>
    readDatabase(dbFile, (db) => db.prepare('SELECT COUNT(*) FROM balance_entries WHERE run_id = ?').pluck().get(runId)) as number

  /** Another process's connection to the same file, as an operator's or a backup tool's would be. */
  function withDatabase<T>(work: (db: Database.Database) => T): T {
    const db = new Database(dbFile, { fileMustExist: true })
    try {
      db.pragma('busy_timeout = 5000')
      return work(db)
    } finally {
      db.close()
    }
  }

  beforeAll(async () => {
    server = await startServer({ env: { DATA_DIR: dataDir, NODE_ID: 'e2e-settlement', SANDBOX: 'on', LEASE_TTL_MS: String(LEASE_TTL_MS) }, timeoutMs: 25_000 })
    key = readFileSync(join(dataDir, 'dev-api-key.txt'), 'utf8').trim()
  }, machineCeiling(40_000))

  afterAll(async () => {
    await server?.stop(2_000)
    rmSync(dataDir, { recursive: true, force: true })
  })

  test('the run is left to the sweep (lease released, never renewed), no turn passes it, and the sweep settles it once within its lease', async () => {
    const created = await api('/api/v1/chats', { method: 'POST', body: { title: 'unsettled' } })
    expect(created.status, created.text).toBe(201)
    const chatId: string = created.json().id

    withDatabase((db) =>
      db.exec(`
        CREATE TRIGGER refuse_settlement BEFORE UPDATE OF status ON runs
        WHEN OLD.status = 'running' AND NEW.status <> 'running' AND OLD.chat_id = '${chatId}'
        BEGIN SELECT RAISE(ABORT, 'the volume refused the write'); END;
      `),
    )

    const started = Date.now()
    const turn = await postTurn(server.url, key, chatId, { model: 'sandbox/echo', input: [{ type: 'prompt', text: '/slow 20\nplease answer' }] }, 30_000)
    if (!turn.ok) throw new Error(`turn: HTTP ${turn.status} ${turn.text}`)
    expect(await turn.closed).toBe('end')
    const endedMs = Date.now() - started
    const runId: string = turn.frames[0]!.data.run_id
    // Everything streamed; the ending could not be written, four times over 4.2 s of backoff.
    expect(turn.frames.some((f) => f.event === 'delta')).toBe(true)
    expect(turn.frames.at(-1)).toMatchObject({
      event: 'error',
      data: { code: 'internal', message: 'the run could not be settled; it will be settled as interrupted for the usage known', details: { run_id: runId } },
    })
    expect(turn.frames.some((f) => f.event === 'done')).toBe(false)
    expect(endedMs).toBeGreaterThanOrEqual(4_200)

    // Still running, unbilled; its lease released (no owner, expired), so nobody is said to stream it.
    const left = runRow(runId)
    expect(left).toMatchObject({ status: 'running', lease_owner: null, settled_at: null })
    expect(Date.parse(left.lease_expires_at!)).toBeLessThanOrEqual(Date.now())
    expect(entriesOf(runId)).toBe(0)
    const inspected = await api(`/api/v1/runs/${runId}`)
    expect(inspected.json()).toMatchObject({ status: 'running', is_live: false })

    // No turn passes it: the turn tries to settle it first, and is refused while it cannot.
    const refused = await postTurn(server.url, key, chatId, { model: 'sandbox/echo', input: [{ type: 'prompt', text: 'next?' }] })
    expect(refused.ok).toBe(false)
    if (!refused.ok) {
      expect(refused.status).toBe(409)
      expect(refused.json().error).toMatchObject({ code: 'run_in_progress', details: { run_id: runId } })
    }

    // Two renewal ticks later the lease is where it was: never renewed. The sweep handed the run to
    // the chat's actor, which tried to settle it and failed.
    await new Promise((resolve) => setTimeout(resolve, (2 * LEASE_TTL_MS) / 3 + 200))
    expect(runRow(runId)).toMatchObject({ status: 'running', lease_owner: null, lease_expires_at: left.lease_expires_at })
    // Tried at each tick, not in a loop: a handful of failed attempts, each reported.
    const attempts = server.stderr().split(`run ${runId} not reaped`).length - 1
    expect(attempts).toBeGreaterThanOrEqual(1)
    expect(attempts).toBeLessThan(10)

    // The database takes writes again: the sweep settles the run within its lease.
    withDatabase((db) => db.exec('DROP TRIGGER refuse_settlement'))
    const repaired = Date.now()
    const settled = await waitFor('the sweep to settle the run', () => (runRow(runId).status === 'failed' ? runRow(runId) : undefined), LEASE_TTL_MS + 1_000, 20)
    const tookMs = Date.now() - repaired
    expect(settled).toMatchObject({ error: 'interrupted', lease_owner: null, lease_expires_at: null })
    expect(Date.parse(settled.settled_at!) - repaired).toBeLessThan(LEASE_TTL_MS)
    expect(entriesOf(runId)).toBe(1)
    const run = (await api(`/api/v1/runs/${runId}`)).json()
    expect(run).toMatchObject({ status: 'failed', error: 'interrupted', is_live: false, usage: null })
    expect(run.cost).not.toBeNull()
    console.log(`settlement failure: stream ended ${endedMs} ms after the turn began; swept ${tookMs} ms after the database took writes again (lease ${LEASE_TTL_MS} ms)`)

    // The chat takes the next turn, and the run is not billed again.
    const next = await postTurn(server.url, key, chatId, { model: 'sandbox/echo', input: [{ type: 'prompt', text: 'and now?' }] })
    if (!next.ok) throw new Error(`next turn: HTTP ${next.status} ${next.text}`)
    await next.frame('done', (f) => f.event === 'done', 20_000)
    expect(entriesOf(runId)).toBe(1)
  }, 60_000)
})
