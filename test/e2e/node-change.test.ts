import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, test } from 'vitest'
import { startServer, type ServerProcess } from './server-process.ts'
import { postTurn, readDatabase, request, type TurnAnswer } from './turn-client.ts'
import { machineCeiling } from '../helpers/machine-timeouts.ts'

/**
 * Issue 11, two processes: a server under NODE_ID=a streams a long turn and is killed with SIGKILL
 * mid-stream; a server under NODE_ID=b starts on the same DATA_DIR, as after a new container or a
 * LiteFS failover. It cannot know that a is dead, so the orphan stays `running` until its lease
 * expires: until then every new turn of the chat answers 409 run_in_progress naming the orphan; at
 * the lease's expiry b settles it as failed/interrupted, and the next turn is admitted. Read from
 * the database file after every step: the chat never holds two running customer runs.
 *
 * The lease is the production one (30 s, renewed every 10 s: decisions §4): a shorter one (LEASE_TTL_MS)
 * would save time, but b must start within what is left of a's lease for the 409 to be seen, and
 * on a busy machine a server takes 10 s or more to start.
 */

const LEASE_TTL_MS = 30_000
const START_TIMEOUT_MS = 25_000
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function killHard(server: ServerProcess): Promise<void> {
  const { child } = server
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  child.kill('SIGKILL')
  await exited
  expect(child.signalCode).toBe('SIGKILL')
}

type RunRow = { id: string; status: string; error: string | null; lease_owner: string | null; lease_expires_at: string | null; completed_at: string | null; settled_at: string | null }

describe('restart under another NODE_ID while a run is live', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-e2e-node-change-'))
  const dbFile = join(dataDir, 'parley.db')
  const servers: ServerProcess[] = []
  const start = async (nodeId: string) => {
    const server = await startServer({ env: { DATA_DIR: dataDir, NODE_ID: nodeId, LEASE_TTL_MS: undefined }, timeoutMs: START_TIMEOUT_MS })
    servers.push(server)
    return server
  }

  /** The chat's customer runs, straight from the file (read-only), and the invariant checked on them. */
  const runsOf = (chatId: string) => {
    const rows = readDatabase(dbFile, (db) =>
      db
        .prepare(
          `SELECT id, status, error, lease_owner, lease_expires_at, completed_at, settled_at FROM runs
           WHERE chat_id = ? AND origin = 'customer' ORDER BY created_at, rowid`,
        )
        .all(chatId) as RunRow[],
    )
    expect(rows.filter((r) => r.status === 'running').length, JSON.stringify(rows)).toBeLessThanOrEqual(1)
    return rows
  }

  afterAll(async () => {
    for (const s of servers) await s.stop(2_000)
    rmSync(dataDir, { recursive: true, force: true })
  })

  test('409 naming the orphan until it is settled as interrupted at its lease’s expiry, then the turn is admitted; never two running runs', async () => {
    // Process a: a long answer, killed once it streams.
    const a = await start('a')
    const key = readFileSync(join(dataDir, 'dev-api-key.txt'), 'utf8').trim()
    const chat = await request(a.url, '/api/v1/chats', { method: 'POST', key, body: { title: 'node change' } })
    expect(chat.status, chat.text).toBe(201)
    const chatId = chat.json().id as string

    const long = await postTurn(a.url, key, chatId, { model: 'sandbox/echo', input: [{ type: 'prompt', text: '/slow 200\n/long 300' }] }, 120_000)
    if (!long.ok) throw new Error(`HTTP ${long.status} ${long.text}`)
    await long.frame('a text delta', (f) => f.event === 'delta' && f.data.kind === 'text', 20_000)
    const orphanId = long.frames[0]!.data.run_id as string
    expect(runsOf(chatId)).toMatchObject([{ id: orphanId, status: 'running', lease_owner: 'a' }])
    await killHard(a)
    const killedAt = Date.now()
    expect(await long.closed).toBe('broken')
    const lease = runsOf(chatId)[0]!
    expect(lease).toMatchObject({ id: orphanId, status: 'running', lease_owner: 'a' })
    const leaseExpiresAt = Date.parse(lease.lease_expires_at!)

    // Process b, on the same data: a different node, which cannot know whether a still streams.
    const b = await start('b')
    const bReadyAt = Date.now()
    runsOf(chatId)

    // Its lease is live: the run is `running` and is_live, the durable answer read from the ledger.
    // This is b's own judgement of the lease, on its clock: b started within it, or the 409 below
    // could not be proved (the test's clock is compared with nothing).
    const inspected = await request(b.url, `/api/v1/runs/${orphanId}`, { key })
    expect(inspected.status, inspected.text).toBe(200)
    expect(inspected.json(), 'b must start within the orphan’s lease for this test to prove the 409').toMatchObject({ id: orphanId, status: 'running', is_live: true })
    /** Whether b, asked after a refusal, says the orphan's lease is over (is_live false) while the run is still running. */
    const expiredButRunning = async () => {
      const run = (await request(b.url, `/api/v1/runs/${orphanId}`, { key })).json() as { status: string; is_live: boolean }
      return run.status === 'running' && !run.is_live
    }

    const turn = (i: number) =>
      postTurn(b.url, key, chatId, { model: 'sandbox/echo', input: [{ type: 'prompt', text: `after the node change ${i}` }] }, 30_000)

    // Every turn is refused while the orphan is running, naming it; then one is admitted. Settled at
    // its lease's expiry, counted in turns rather than timed: once b itself reports the lease over
    // (is_live false), no further turn is refused; the next is admitted (the orphan settled by b's
    // sweep at the expiry, or reaped by that turn).
    let refused = 0
    let reportedOver = false
    let admitted: (TurnAnswer & { ok: true }) | null = null
    for (let i = 0; admitted === null; i++) {
      // 150 ms apart, 400 turns outlast the 30 s lease twice over: a bound on the loop, not a timing claim.
      expect(i, 'the orphan was never settled').toBeLessThan(400)
      const answer = await turn(i)
      const rows = runsOf(chatId)
      if (!answer.ok) {
        expect(reportedOver, `turn ${i} was refused after b reported the orphan’s lease over: it was not settled at its expiry`).toBe(false)
        expect(answer.status, answer.text).toBe(409)
        const error = answer.json().error
        expect(error.code).toBe('run_in_progress')
        expect(error.details).toEqual({ run_id: orphanId })
        expect(error.message).toContain(orphanId)
        refused++
        // A refusal writes nothing; the orphan may have been settled just after it was read.
        expect(rows.map((r) => r.id)).toEqual([orphanId])
        reportedOver = await expiredButRunning()
      } else {
        admitted = answer
        // Admitted only once the orphan is settled.
        expect(rows[0]).toMatchObject({ id: orphanId, status: 'failed', error: 'interrupted' })
        expect(rows[0]!.settled_at).not.toBeNull()
        expect(rows).toHaveLength(2)
      }
      await sleep(150)
    }
    expect(refused).toBeGreaterThan(0)

    const settled = runsOf(chatId)[0]!
    const settledAt = Date.parse(settled.completed_at!)
    // Never before the expiry: two times b wrote, in order (the test's clock is not read). How soon
    // after it is printed below, a figure, not a claim.
    expect(settledAt).toBeGreaterThanOrEqual(leaseExpiresAt)
    console.info(
      `node change: lease ${LEASE_TTL_MS} ms; b ready ${bReadyAt - killedAt} ms after the kill; orphan settled ` +
        `${settledAt - killedAt} ms after the kill, ${settledAt - bReadyAt} ms after b was ready, ` +
        `${settledAt - leaseExpiresAt} ms after its lease expired; ${refused} turns refused meanwhile`,
    )

    const newRunId = admitted.frames[0]?.data.run_id ?? (await admitted.frame('run', (f) => f.event === 'run')).data.run_id
    expect(await admitted.closed).toBe('end')
    expect(admitted.frames.at(-1)!.event).toBe('done')
    const rows = runsOf(chatId)
    expect(rows.map((r) => [r.id, r.status])).toEqual([
      [orphanId, 'failed'],
      [newRunId, 'succeeded'],
    ])
    const orphan = await request(b.url, `/api/v1/runs/${orphanId}`, { key })
    expect(orphan.json()).toMatchObject({ status: 'failed', error: 'interrupted', is_live: false })
    expect(orphan.json().settled_at).not.toBeNull()
    // Billed once, for the usage known.
    const charges = readDatabase(dbFile, (db) => db.prepare(`SELECT COUNT(*) AS n FROM balance_entries WHERE run_id = ?`).get(orphanId) as { n: number })
    expect(charges.n).toBe(1)
  }, machineCeiling(120_000))
})
