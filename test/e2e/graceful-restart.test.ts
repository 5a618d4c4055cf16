import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, test } from 'vitest'
import { startServer, type ServerProcess } from './server-process.ts'
import { postTurn, readDatabase, request } from './turn-client.ts'
import { machineCeiling } from '../helpers/machine-timeouts.ts'

/**
 * Issue 20: a planned restart (SIGTERM, as a rolling deploy sends) while chats have live runs. The
 * server gives its runs SHUTDOWN_GRACE_MS to end, then stops and settles the rest as interrupted
 * (docs/decisions/009-multi-node-litefs.md): it leaves no lease to lapse, so the next turn on those
 * chats is admitted the moment the new process answers, under another node id, with no 409.
 * Before, every such chat answered 409 run_in_progress for what was left of a 30 s lease.
 */

const START_TIMEOUT_MS = 25_000

describe('SIGTERM while runs are live, then a restart', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-e2e-graceful-'))
  const dbFile = join(dataDir, 'parley.db')
  const servers: ServerProcess[] = []
  const start = async (nodeId: string, graceMs: number) => {
    const server = await startServer({ env: { DATA_DIR: dataDir, NODE_ID: nodeId, SHUTDOWN_GRACE_MS: String(graceMs) }, timeoutMs: START_TIMEOUT_MS })
    servers.push(server)
    return server
  }
  afterAll(async () => {
    for (const s of servers) await s.stop(2_000)
    rmSync(dataDir, { recursive: true, force: true })
  })

  test('runs still streaming at the end of the grace are settled as interrupted; a run that ends within it succeeds; the next turns are admitted at once', async () => {
    const a = await start('a', 1_500)
    const key = readFileSync(join(dataDir, 'dev-api-key.txt'), 'utf8').trim()
    const newChat = async () => (await request(a.url, '/api/v1/chats', { method: 'POST', key, body: {} })).json().id as string
    const longChats = [await newChat(), await newChat(), await newChat()]
    const shortChat = await newChat()

    // Three answers far longer than the grace, and one that ends within it.
    const long = await Promise.all(
      longChats.map((chat) => postTurn(a.url, key, chat, { model: 'sandbox/echo', input: [{ type: 'prompt', text: '/slow 200\n/long 300' }] }, 60_000)),
    )
    const short = await postTurn(a.url, key, shortChat, { model: 'sandbox/echo', input: [{ type: 'prompt', text: '/slow 100\n/long 4' }] }, 60_000)
    for (const answer of [...long, short]) {
      if (!answer.ok) throw new Error(`HTTP ${answer.status} ${answer.text}`)
      await answer.frame('a delta', (f) => f.event === 'delta', 20_000)
    }

    const code = await a.stop(15_000)
    expect(code).toBe(0)
    for (const answer of long) {
      if (!answer.ok) throw new Error('unreachable')
      expect(await answer.closed).toBe('end')
      expect(answer.frames.at(-1)).toMatchObject({ event: 'error', data: { code: 'interrupted' } })
    }
    if (!short.ok) throw new Error('unreachable')
    expect(await short.closed).toBe('end')
    expect(short.frames.at(-1)!.event).toBe('done')

    // Nothing is left running or leased in the ledger: each run ended, and was billed once.
    const runs = readDatabase(dbFile, (db) =>
      db.prepare(`SELECT chat_id, status, error, lease_owner, cost_units IS NOT NULL AS billed FROM runs WHERE origin = 'customer'`).all(),
    ) as { chat_id: string; status: string; error: string | null; lease_owner: string | null; billed: number }[]
    expect(runs.filter((r) => r.status === 'running')).toEqual([])
    for (const chat of longChats) expect(runs.find((r) => r.chat_id === chat)).toMatchObject({ status: 'failed', error: 'interrupted', lease_owner: null, billed: 1 })
    expect(runs.find((r) => r.chat_id === shortChat)).toMatchObject({ status: 'succeeded', billed: 1 })

    // The restarted node (another id, as a new container) admits the next turn on every chat at once.
    const b = await start('b', 1_500)
    for (const chat of [...longChats, shortChat]) {
      const next = await postTurn(b.url, key, chat, { model: 'sandbox/echo', input: [{ type: 'prompt', text: 'after the restart' }] })
      expect(next.ok ? 200 : `${next.status} ${next.text}`).toBe(200)
      if (next.ok) expect(await next.closed).toBe('end')
    }
  }, machineCeiling(90_000))
})
