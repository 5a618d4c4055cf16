import { mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { runAdmin, startServer, waitFor, type ServerProcess } from './server-process.ts'
import { postTurn, readDatabase, request } from './turn-client.ts'
import { machineCeiling } from '../helpers/machine-timeouts.ts'

/**
 * Two real server processes over one SQLite file, standing in for a LiteFS primary and a replica
 * (decision 009): the replica's `.primary` file names the primary, as LiteFS's does. The replica
 * opens the file read-only, so a write it made itself would fail; every write it is sent must reach
 * the primary, turns and cancels included, and come back whole.
 */
describe('a LiteFS replica relays writes to the primary', () => {
  const shared = mkdtempSync(join(tmpdir(), 'parley-e2e-litefs-'))
  const dbFile = join(shared, 'parley.db')
  const replicaPrimaryFile = join(shared, 'replica.primary')
  let primary: ServerProcess
  let replica: ServerProcess
  let key = ''

  const env = (node: string, primaryFile: string) => ({
    DATA_DIR: join(shared, node),
    LITEFS_DIR: shared,
    LITEFS_PRIMARY_FILE: primaryFile,
    // Each node's own LiteFS position file, as each LiteFS mount has one; absent: no position known.
    LITEFS_POSITION_FILE: join(shared, `${node}.pos`),
    NODE_ID: node,
  })
  const setPosition = (node: string, txid: number) => writeFileSync(join(shared, `${node}.pos`), `${txid.toString(16).padStart(16, '0')}/00000000deadbeef\n`)
  const settlesWithin = async (promise: Promise<unknown>, ms: number) =>
    Promise.race([promise.then(() => true), new Promise((resolve) => setTimeout(() => resolve(false), ms))])
  const on = (server: ServerProcess, path: string, init: { method?: string; body?: unknown } = {}) => request(server.url, path, { key, ...init })

  beforeAll(async () => {
    // The primary has no .primary file; it creates the database and the dev organisation.
    primary = await startServer({ env: env('node-a', join(shared, 'primary.primary')) })
    key = readFileSync(join(shared, 'node-a', 'dev-api-key.txt'), 'utf8').trim()
    writeFileSync(replicaPrimaryFile, `127.0.0.1:${primary.port}`)
    replica = await startServer({ env: env('node-b', replicaPrimaryFile) })
  }, machineCeiling(60_000))

  afterAll(async () => {
    await Promise.all([replica?.stop(), primary?.stop()])
    rmSync(shared, { recursive: true, force: true })
  })

  test('the replica starts read-only: no dev organisation of its own, no key file', () => {
    expect(replica.stdout()).not.toMatch(/pk_/)
    expect(() => readFileSync(join(shared, 'node-b', 'dev-api-key.txt'))).toThrow()
    expect(readDatabase(dbFile, (db) => db.prepare('SELECT count(*) AS n FROM organisations').get())).toEqual({ n: 1 })
  })

  test('a chat created through the replica is written by the primary and readable on both', async () => {
    const created = await on(replica, '/api/v1/chats', { method: 'POST', body: { title: 'via the replica', namespace: 'acme/eu' } })
    expect(created.status, created.text).toBe(201)
    const id = created.json().id
    for (const server of [primary, replica]) {
      const read = await on(server, `/api/v1/chats/${id}`)
      expect(read.status, read.text).toBe(200)
      expect(read.json()).toMatchObject({ id, title: 'via the replica', namespace: 'acme/eu' })
    }
  })

  test('a turn sent to the replica streams from the primary, frame by frame, and is written there', async () => {
    const chat = (await on(replica, '/api/v1/chats', { method: 'POST', body: {} })).json().id
    const answer = await postTurn(replica.url, key, chat, { model: 'sandbox/echo', input: [{ type: 'prompt', text: '/slow 150\n/long 3' }] })
    if (!answer.ok) throw new Error(`HTTP ${answer.status}: ${answer.text}`)
    expect(answer.headers.get('content-type')).toMatch(/^text\/event-stream/)
    expect(await answer.closed).toBe('end')
    const events = answer.frames.map((f) => f.event)
    expect(events).toEqual(['run', 'config_warnings', 'translation_warnings', 'block_start', 'delta', 'delta', 'delta', 'block_stop', 'done'])
    // Relayed as they came: 150 ms apart at the source, so not all in one read.
    const deltas = answer.frames.filter((f) => f.event === 'delta')
    expect(deltas.at(-1)!.read).toBeGreaterThan(deltas[0]!.read)

    const runId = answer.frames[0]!.data.run_id
    const run = await on(replica, `/api/v1/runs/${runId}`)
    expect(run.status, run.text).toBe(200)
    expect(run.json()).toMatchObject({ status: 'succeeded', chat_id: chat })
    const parts = (await on(replica, `/api/v1/chats/${chat}/history`)).json().data.map((p: { part: { type: string } }) => p.part.type)
    expect(parts).toEqual(['prompt', 'message'])
  })

  test('a cancel sent to the replica reaches the run on the primary', async () => {
    const chat = (await on(replica, '/api/v1/chats', { method: 'POST', body: {} })).json().id
    const answer = await postTurn(replica.url, key, chat, { model: 'sandbox/echo', input: [{ type: 'prompt', text: '/slow 400\n/long 50' }] })
    if (!answer.ok) throw new Error(`HTTP ${answer.status}: ${answer.text}`)
    const runId = (await answer.frame('run', () => true)).data.run_id
    await answer.frame('delta', () => true)
    const cancelled = await on(replica, `/api/v1/runs/${runId}/cancel`, { method: 'POST' })
    expect(cancelled.status, cancelled.text).toBe(200)
    expect(cancelled.json()).toMatchObject({ id: runId, status: 'cancelled' })
    expect(await answer.closed).toBe('end')
    expect(answer.frames.at(-1)).toMatchObject({ event: 'error', data: { code: 'cancelled' } })
  })

  test('errors come back as the primary gave them, status and envelope', async () => {
    const missing = await on(replica, '/api/v1/chats/00000000-0000-4000-8000-000000000000/responses', {
      method: 'POST',
      body: { model: 'sandbox/echo', input: [{ type: 'prompt', text: 'hi' }] },
    })
    expect(missing.status).toBe(404)
    expect(missing.json().error.code).toBe('not_found')
    const invalid = await on(replica, '/api/v1/chats', { method: 'POST', body: { title: 42 } })
    expect(invalid.status).toBe(422)
    expect(invalid.json().error.details.problems).toEqual([expect.objectContaining({ in: 'body', pointer: '/title' })])
  })

  test('the admin CLI writes on the primary only: on the replica it says where the primary is, and writes nothing', async () => {
    const count = () => readDatabase(dbFile, (db) => db.prepare('SELECT count(*) AS n FROM organisations').get())
    const before = count()
    const onReplica = await runAdmin(join(shared, 'node-b'), ['org', 'create', '--name', 'Nope'], 30_000, env('node-b', replicaPrimaryFile))
    expect(onReplica.code).toBe(1)
    expect(onReplica.stderr).toContain('read replica')
    expect(onReplica.stderr).toContain(`http://127.0.0.1:${primary.port}`)
    expect(count()).toEqual(before)
    const onPrimary = await runAdmin(join(shared, 'node-a'), ['org', 'create', '--name', 'Acme'], 30_000, env('node-a', join(shared, 'primary.primary')))
    expect(onPrimary.code, onPrimary.stderr).toBe(0)
    expect(JSON.parse(onPrimary.stdout)).toMatchObject({ name: 'Acme' })
  }, machineCeiling(60_000))

  test('a write already relayed once is refused by a node that is not the primary (no relay loops)', async () => {
    const res = await fetch(`${replica.url}/api/v1/chats`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-parley-forwarded-by': 'node-c' },
      body: '{}',
    })
    expect(res.status).toBe(503)
    expect((await res.json()).error.code).toBe('unavailable')
  })

  test('with no primary known, writes are 503 unavailable and reads still answer', async () => {
    writeFileSync(replicaPrimaryFile, '')
    try {
      const write = await waitFor('the replica to see that no primary is known', async () => {
        const res = await on(replica, '/api/v1/chats', { method: 'POST', body: {} })
        return res.status === 503 ? res : undefined
      })
      expect(write.json().error).toMatchObject({ code: 'unavailable', message: expect.stringContaining('no primary is known') })
      expect((await on(replica, '/api/v1/chats')).status).toBe(200)
    } finally {
      writeFileSync(replicaPrimaryFile, `127.0.0.1:${primary.port}`)
    }
    await waitFor('writes through the replica again', async () => (await on(replica, '/api/v1/chats', { method: 'POST', body: {} })).status === 201)
  })

  test('a replica whose primary is down answers writes 503 and keeps serving reads', async () => {
    writeFileSync(replicaPrimaryFile, '127.0.0.1:1')
    try {
      const write = await waitFor('the replica to relay to the unreachable primary', async () => {
        const res = await on(replica, '/api/v1/chats', { method: 'POST', body: {} })
        return res.status === 503 && /did not answer/.test(res.text) ? res : undefined
      })
      expect(write.json().error.code).toBe('unavailable')
      expect((await on(replica, '/api/v1/chats')).status).toBe(200)
    } finally {
      writeFileSync(replicaPrimaryFile, `127.0.0.1:${primary.port}`)
    }
    await waitFor('writes through the replica again', async () => (await on(replica, '/api/v1/chats', { method: 'POST', body: {} })).status === 201)
  })

  describe('read your writes: a relayed write is answered once the replica has it', () => {
    afterAll(() => {
      for (const node of ['node-a', 'node-b']) rmSync(join(shared, `${node}.pos`), { force: true })
    })

    test('a JSON answer waits for the TXID the primary reports in its header', async () => {
      setPosition('node-a', 100)
      setPosition('node-b', 99)
      const created = on(replica, '/api/v1/chats', { method: 'POST', body: { title: 'lagging' } })
      expect(await settlesWithin(created, 400)).toBe(false)
      setPosition('node-b', 100)
      const res = await created
      expect(res.status, res.text).toBe(201)
      expect(res.headers.get('x-parley-txid')).toBe('0000000000000064')
      // Read on the same replica right after: there.
      expect((await on(replica, `/api/v1/chats/${res.json().id}`)).status).toBe(200)
    })

    test("a turn streams at once; its terminal frame waits for the primary's position after the run (a trailer)", async () => {
      setPosition('node-a', 200)
      setPosition('node-b', 200)
      const chat = (await on(replica, '/api/v1/chats', { method: 'POST', body: {} })).json().id
      setPosition('node-a', 300)
      const answer = await postTurn(replica.url, key, chat, { model: 'sandbox/echo', input: [{ type: 'prompt', text: '/long 3' }] })
      if (!answer.ok) throw new Error(`HTTP ${answer.status}: ${answer.text}`)
      await answer.frame('block_stop', () => true)
      expect(await settlesWithin(answer.closed, 400)).toBe(false)
      expect(answer.frames.map((f) => f.event)).not.toContain('done')
      setPosition('node-b', 300)
      expect(await answer.closed).toBe('end')
      expect(answer.frames.at(-1)!.event).toBe('done')
    })

    test('a replica that does not catch up answers anyway after a while, rather than never', async () => {
      setPosition('node-a', 500)
      setPosition('node-b', 400)
      const started = Date.now()
      const res = await on(replica, '/api/v1/chats', { method: 'POST', body: {} })
      expect(res.status).toBe(201)
      expect(Date.now() - started).toBeGreaterThanOrEqual(4_500)
    }, 15_000)
  })

  test('the primary moves without a restart: the demoted node ends its run with unavailable, the promoted one settles it at once and takes turns', async () => {
    const chat = (await on(primary, '/api/v1/chats', { method: 'POST', body: {} })).json().id
    const answer = await postTurn(primary.url, key, chat, { model: 'sandbox/echo', input: [{ type: 'prompt', text: '/slow 300\n/long 200' }] })
    if (!answer.ok) throw new Error(`HTTP ${answer.status}: ${answer.text}`)
    const runId = (await answer.frame('run', () => true)).data.run_id
    await answer.frame('delta', () => true)

    // LiteFS hands the lease over: node-a's .primary now names node-b, and node-b's is gone.
    writeFileSync(join(shared, 'primary.primary'), `127.0.0.1:${replica.port}`)
    unlinkSync(replicaPrimaryFile)
    expect(await answer.closed).toBe('end')
    expect(answer.frames.at(-1)).toMatchObject({ event: 'error', data: { code: 'unavailable', details: { run_id: runId } } })

    // The promoted node settled the run at once, not after its 30 s lease.
    const settled = await waitFor('the run to be settled by the new primary', async () => {
      const run = (await on(replica, `/api/v1/runs/${runId}`)).json()
      return run.status !== 'running' ? run : undefined
    }, 10_000)
    expect(settled).toMatchObject({ status: 'failed', error: 'interrupted', is_live: false })

    // A turn on the same chat through the demoted node is relayed to the new primary and runs there.
    const next = await postTurn(primary.url, key, chat, { model: 'sandbox/echo', input: [{ type: 'prompt', text: 'after the move' }] })
    if (!next.ok) throw new Error(`HTTP ${next.status}: ${next.text}`)
    expect(await next.closed).toBe('end')
    expect(next.frames.at(-1)!.event).toBe('done')
    const nextRun = next.frames[0]!.data.run_id
    expect(readDatabase(dbFile, (db) => db.prepare('SELECT lease_owner, status FROM runs WHERE id = ?').get(nextRun))).toMatchObject({ status: 'succeeded' })
    expect((await on(primary, `/api/v1/runs/${nextRun}`)).json()).toMatchObject({ status: 'succeeded' })

    // Neither process restarted (before, both exited with 75 to be restarted in their new role).
    expect(primary.child.exitCode).toBeNull()
    expect(replica.child.exitCode).toBeNull()
  }, 30_000)
})
