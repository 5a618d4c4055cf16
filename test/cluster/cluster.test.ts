import Database from 'better-sqlite3'
import { closeSync, existsSync, openSync, readFileSync, readSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test, type TestContext } from 'vitest'
import { waitFor } from '../e2e/server-process.ts'
import { postTurn, request, type HttpAnswer, type TurnAnswer } from '../e2e/turn-client.ts'
import { assertClusterCanRun, percentile, sleep, startLitefsCluster, type ClusterNode, type LitefsCluster } from './litefs-cluster.ts'
import { machineCeiling } from '../helpers/machine-timeouts.ts'
import { blocks, readFrames, rebuiltForm, seqOf, withoutUnstored, type Frame } from '../e2e/run-events-client.ts'

/**
 * Parley on a real three-node LiteFS cluster (issue 20): three `litefs mount` processes on
 * loopback, each with its own FUSE mount and the real server under its `exec`, the primary elected
 * through Consul's session/KV API (spoken by test/helpers/consul-lease-service.ts). Two nodes are
 * candidates, as production's primary region; the third only replicates.
 *
 * Runs under `npm run test:cluster` only (a missing litefs binary or /dev/fuse fails this file).
 * Timeouts are generous: the cluster shares two cores with other test files.
 */
assertClusterCanRun()
const MODEL = 'sandbox/echo'
const SLOW_TURN = '/slow 200\n/long 12'

describe('Parley on a three-node LiteFS cluster', () => {
  let cluster: LitefsCluster
  let key = ''
  let primary: ClusterNode
  let replicas: ClusterNode[] = []

  const on = (node: ClusterNode, path: string, init: { method?: string; body?: unknown; timeoutMs?: number } = {}) =>
    request(node.url, path, { key, timeoutMs: 30_000, ...init })
  /** On a failed test, the tails of every node's LiteFS and Parley logs and the lease events. */
  const dumpOnFailure = (context: TestContext) => context.onTestFailed(() => console.error(cluster.report(60)))

  beforeAll(async () => {
    cluster = await startLitefsCluster({ nodes: 3, lease: { type: 'consul', ttlMs: 2_000, lockDelayMs: 1_000 } })
    try {
      await cluster.start()
      primary = await cluster.waitForPrimary()
      replicas = cluster.nodes.filter((n) => n !== primary)
      key = cluster.apiKey()
    } catch (error) {
      console.error(cluster.report(80))
      throw error
    }
  }, machineCeiling(300_000))

  afterAll(async () => {
    await cluster?.stop()
  }, 120_000)

  test('boot: exactly one primary, named host:port by the other two, and the database in WAL mode on every copy', async (context) => {
    dumpOnFailure(context)
    const infos = await Promise.all(cluster.nodes.map((n) => cluster.info(n)))
    expect(infos.map((i) => i?.isPrimary)).toEqual(cluster.nodes.map((n) => n === primary))
    expect(primary.candidate).toBe(true)
    // Consul's key is held by the primary's session, acquired once.
    expect(cluster.lease!.holder(cluster.leaseKey)).toMatchObject({ hostname: primary.hostname, session: expect.any(String) })
    expect(cluster.lease!.acquisitions(cluster.leaseKey)).toHaveLength(1)
    expect(cluster.lease!.unsupported()).toEqual([])

    // LiteFS's .primary: absent on the primary, the primary's host:port on each replica.
    expect(cluster.primaryFile(primary)).toBeNull()
    for (const replica of replicas) expect(cluster.primaryFile(replica)).toBe(`127.0.0.1:${primary.apiPort}`)

    // Parley agrees: its readiness names each node's role.
    for (const node of cluster.nodes) {
      const ready = await on(node, '/readyz')
      expect(ready.status, `${node.name}: ${ready.text}`).toBe(200)
      expect(ready.json().role).toBe(node === primary ? 'primary' : 'replica')
    }
    // Only the primary bootstrapped the dev organisation.
    expect(cluster.nodes.filter((n) => existsSync(join(n.dataDir, 'dev-api-key.txt')))).toEqual([primary])

    // WAL from the first start: the header's read/write versions are 2 (WAL) on every copy, and SQLite says so.
    const primaryTxid = await waitFor('every copy at the primary position', () => {
      const txids = cluster.nodes.map((n) => cluster.position(n))
      return txids[0] !== null && txids.every((t) => t === txids[0]) ? txids[0] : undefined
    }, 30_000)
    for (const node of cluster.nodes) {
      const header = Buffer.alloc(100)
      const fd = openSync(node.dbFile, 'r')
      try {
        readSync(fd, header, 0, 100, 0)
      } finally {
        closeSync(fd)
      }
      expect(header.subarray(0, 16).toString('latin1'), node.name).toBe('SQLite format 3\0')
      expect([header[18], header[19]], `${node.name}: file format read/write versions`).toEqual([2, 2])
      expect(cluster.readCopy(node, (db) => db.pragma('journal_mode', { simple: true })), node.name).toBe('wal')
    }
    // The primary writes through its WAL, which LiteFS shows in its mount.
    expect(existsSync(`${primary.dbFile}-wal`)).toBe(true)
    // A write through the primary lands, and the replicas move to its position.
    const created = await on(primary, '/api/v1/chats', { method: 'POST', body: { title: 'boot' } })
    expect(created.status, created.text).toBe(201)
    const txid = BigInt(`0x${created.headers.get('x-parley-txid')}`)
    expect(txid).toBeGreaterThan(primaryTxid!)
    await waitFor('the replicas to reach the write', () => replicas.every((r) => (cluster.position(r) ?? 0n) >= txid), 30_000)

    // A replica waits for the primary's database to arrive migrated: no server start fails and is restarted.
    for (const n of cluster.nodes) expect(cluster.starts(n), n.name).toHaveLength(1)
    const starts = cluster.nodes.map((n) => `${n.name} ${n === primary ? 'primary' : 'replica'}: ${cluster.starts(n).length} start(s), litefs exits ${JSON.stringify(cluster.exits(n).map((e) => e.code))}`)
    console.log(`boot: every node ready ${cluster.bootMs()} ms after the three litefs mounts started (${starts.join('; ')})`)
  }, 120_000)

  test('routing: a turn sent to a replica runs on the primary, whose node holds the run', async (context) => {
    dumpOnFailure(context)
    const [a, b] = replicas as [ClusterNode, ClusterNode]
    const created = await on(a, '/api/v1/chats', { method: 'POST', body: { title: 'routed' } })
    expect(created.status, created.text).toBe(201)
    const chat = created.json().id as string

    const answer = await postTurn(b.url, key, chat, { model: MODEL, input: [{ type: 'prompt', text: SLOW_TURN }] }, 90_000)
    if (!answer.ok) throw new Error(`HTTP ${answer.status}: ${answer.text}`)
    const runId = (await answer.frame('run', () => true, 30_000)).data.run_id as string
    // While it streams, every copy shows the run running under the primary's NODE_ID.
    await waitFor(
      'the running run, leased by the primary, on every copy',
      () =>
        cluster.nodes.every((n) => {
          const row = cluster.readCopy(n, (db) => db.prepare('SELECT status, lease_owner FROM runs WHERE id = ?').get(runId)) as { status: string; lease_owner: string } | undefined
          return row?.status === 'running' && row.lease_owner === primary.name
        }),
      30_000,
      25,
    )
    expect(answer.isClosed()).toBe(false)
    expect(await answer.closed).toBe('end')
    expect(answer.frames.at(-1)!.event).toBe('done')

    const run = await on(a, `/api/v1/runs/${runId}`)
    expect(run.status, run.text).toBe(200)
    expect(run.json()).toMatchObject({ id: runId, chat_id: chat, status: 'succeeded' })
    // The run was settled by the primary's server, and by no other.
    const settledBy = cluster.nodes.filter((n) => readFileSync(n.parleyLog, 'utf8').split('\n').some((line) => line.includes('"run settled"') && line.includes(runId)))
    expect(settledBy.map((n) => n.name)).toEqual([primary.name])
  }, 180_000)

  test('routing: two concurrent turns on one chat through two replicas: one 200, one 409', async (context) => {
    dumpOnFailure(context)
    const [a, b] = replicas as [ClusterNode, ClusterNode]
    const chat = (await on(a, '/api/v1/chats', { method: 'POST', body: {} })).json().id as string
    const body = { model: MODEL, input: [{ type: 'prompt', text: SLOW_TURN }] }
    const answers: TurnAnswer[] = await Promise.all([postTurn(a.url, key, chat, body, 90_000), postTurn(b.url, key, chat, body, 90_000)])
    const statuses = answers.map((x) => (x.ok ? 200 : x.status))
    expect([...statuses].sort(), JSON.stringify(answers.map((x) => (x.ok ? 'stream' : x.text)))).toEqual([200, 409])
    const refused = answers.find((x) => !x.ok) as { ok: false } & HttpAnswer
    expect(refused.json().error.code).toBe('run_in_progress')
    const streamed = answers.find((x) => x.ok)!
    if (!streamed.ok) throw new Error('unreachable')
    expect(await streamed.closed).toBe('end')
    expect(streamed.frames.at(-1)!.event).toBe('done')
  }, 180_000)

  test('read your writes across nodes: a write through one replica, read through the other with its TXID (header or cookie), is always seen; a TXID the copy never reaches is 503, not stale data', async (context) => {
    dumpOnFailure(context)
    const [a, b] = replicas as [ClusterNode, ClusterNode]
    const read = (node: ClusterNode, path: string, headers: Record<string, string>) =>
      fetch(`${node.url}${path}`, { headers: { authorization: `Bearer ${key}`, ...headers }, signal: AbortSignal.timeout(10_000) })
    let withoutTxidMissed = 0
    for (let i = 0; i < 30; i++) {
      const created = await on(a, '/api/v1/chats', { method: 'POST', body: { title: `ryw ${i}` } })
      expect(created.status, created.text).toBe(201)
      const id = created.json().id as string
      const txid = created.headers.get('x-parley-txid')
      const cookie = created.headers.get('set-cookie')
      expect(txid).toMatch(/^[0-9a-f]{16}$/)
      expect(cookie).toContain(`parley-txid=${txid}`)
      // Through the other replica: odd rounds with the header, even ones with the cookie only.
      const presented: Record<string, string> = i % 2 === 0 ? { cookie: cookie!.split(';')[0]! } : { 'x-parley-txid': txid! }
      const seen = await read(b, `/api/v1/chats/${id}`, presented)
      expect(seen.status, await seen.clone().text()).toBe(200)
      expect(((await seen.json()) as { title: string }).title).toBe(`ryw ${i}`)
      // The same write read straight after through the primary's other replica, with nothing presented, may miss (counted only).
      const blind = await on(a, '/api/v1/chats', { method: 'POST', body: { title: `blind ${i}` } })
      if ((await read(b, `/api/v1/chats/${blind.json().id}`, {})).status === 404) withoutTxidMissed++
    }
    // A position this copy will not reach within the bound: 503 with Retry-After, never the older data.
    const ahead = (cluster.position(primary)! + 1_000_000n).toString(16).padStart(16, '0')
    const started = Date.now()
    const refused = await read(b, '/api/v1/chats', { 'x-parley-txid': ahead })
    expect(refused.status).toBe(503)
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/)
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('unavailable')
    console.log(`read your writes: 30 of 30 reads through another replica saw their write; without the TXID ${withoutTxidMissed} of 30 missed it; a TXID never reached was refused after ${Date.now() - started} ms`)
  }, 180_000)

  test('resume through a replica: a turn dropped on one replica resumes on the other with Last-Event-ID; the finished run read there from the start or after an id equals what the turn streamed (rebuilt: one delta per block)', async (context) => {
    dumpOnFailure(context)
    const [a, b] = replicas as [ClusterNode, ClusterNode]
    const auth = { authorization: `Bearer ${key}` }
    const turnOn = (node: ClusterNode, chat: string, text: string, stopWhen?: (frames: Frame[]) => boolean) =>
      readFrames(
        `${node.url}/api/v1/chats/${chat}/responses`,
        { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ model: MODEL, input: [{ type: 'prompt', text }] }) },
        stopWhen,
      )
    // The turn's head carries its admission's TXID (decision 029): a replica reading the run waits until its copy has the run.
    const eventsOn = (node: ClusterNode, runId: string, headers: Record<string, string> = {}, query = '') =>
      readFrames(`${node.url}/api/v1/runs/${runId}/events${query}`, { headers: { ...auth, ...headers } })
    const increasing = (frames: Frame[]) => {
      const seqs = frames.map(seqOf)
      expect(seqs).toEqual([...new Set(seqs)].sort((x, y) => x - y))
    }

    // 1. Dropped mid-turn on replica a, resumed on replica b while the primary still runs it.
    const chat = (await on(a, '/api/v1/chats', { method: 'POST', body: { title: 'resume' } })).json().id as string
    const first = await turnOn(a, chat, SLOW_TURN, (fs) => fs.filter((f) => f.event === 'delta').length === 3)
    expect(first.status, first.text).toBe(200)
    const runId = first.frames[0]!.data.run_id as string
    const txid = first.headers.get('x-parley-txid')
    expect(txid).toMatch(/^[0-9a-f]{16}$/)
    const resumed = await eventsOn(b, runId, { 'last-event-id': first.frames.at(-1)!.id!, 'x-parley-txid': txid! })
    expect(resumed.status, resumed.text).toBe(200)
    expect(resumed.frames.at(-1)!.event).toBe('done')
    const joined = [...first.frames, ...resumed.frames]
    increasing(joined)
    // Every frame once: the two halves together are the whole run as b rebuilds it, and as the primary does.
    const fromB = await eventsOn(b, runId)
    const fromPrimary = await eventsOn(primary, runId)
    expect(fromB.frames).toEqual(fromPrimary.frames)
    expect(withoutUnstored(rebuiltForm(joined))).toEqual(fromB.frames)
    expect(blocks(fromB.frames).map((x) => x.text).join('').split(' ').length).toBeGreaterThanOrEqual(12)

    // 2. A whole turn through replica a, then its run read through replica b at once (the run has just finished on the primary).
    const chat2 = (await on(a, '/api/v1/chats', { method: 'POST', body: { title: 'replay' } })).json().id as string
    const whole = await turnOn(a, chat2, '/think step by step\n/long 8')
    expect(whole.status, whole.text).toBe(200)
    expect(whole.frames.at(-1)!.event).toBe('done')
    expect(whole.frames.every((f) => f.id !== null)).toBe(true)
    const runId2 = whole.frames[0]!.data.run_id as string
    const txid2 = { 'x-parley-txid': whole.headers.get('x-parley-txid')! }
    const expected = withoutUnstored(rebuiltForm(whole.frames))
    // Without Last-Event-ID: every frame, in the rebuilt form.
    expect((await eventsOn(b, runId2, txid2)).frames).toEqual(expected)
    // With Last-Event-ID inside the text block (after its second delta): the rest of that block's text in one delta, then the rest.
    const textDeltas = whole.frames.filter((f) => f.event === 'delta' && f.data.kind === 'text')
    expect(textDeltas.length).toBeGreaterThanOrEqual(3)
    const cut = textDeltas[1]!.id!
    const after = withoutUnstored(rebuiltForm(whole.frames.filter((f) => seqOf(f) > seqOf(textDeltas[1]!))))
    expect((await eventsOn(b, runId2, { ...txid2, 'last-event-id': cut })).frames).toEqual(after)
    // And after a block_stop, by ?after on the other replica.
    const stop = whole.frames.find((f) => f.event === 'block_stop')!
    const afterStop = withoutUnstored(rebuiltForm(whole.frames.filter((f) => seqOf(f) > seqOf(stop))))
    expect((await eventsOn(a, runId2, txid2, `?after=${encodeURIComponent(stop.id!)}`)).frames).toEqual(afterStop)
    // Each of these reads was served by the replica from its own copy, not relayed: the replicas' logs name them, the primary's does not.
    const named = (node: ClusterNode) => readFileSync(node.parleyLog, 'utf8').includes(`/api/v1/runs/${runId2}/events`)
    expect([a, b].map(named)).toEqual([true, true])
    expect(named(primary)).toBe(false)
  }, 180_000)

  test('no 500 from a replica: a raw write on its mount fails at the file level, and every route answers below 500 or 503', async (context) => {
    dumpOnFailure(context)
    const replica = replicas[0]!
    const orgs = (node: ClusterNode) => (cluster.readCopy(node, (db) => db.prepare('SELECT count(*) AS n FROM organisations').get()) as { n: number }).n
    const before = orgs(primary)

    // LiteFS lets the file be opened for writing on a replica, then refuses the write itself.
    let rawError: { code?: string; message: string } | null = null
    const raw = new Database(replica.dbFile, { fileMustExist: true })
    try {
      raw.pragma('busy_timeout = 5000')
      raw.prepare("INSERT INTO organisations (id, name, slug, created_at) VALUES ('raw-write', 'Raw', 'raw-write', '2026-01-01T00:00:00Z')").run()
    } catch (error) {
      rawError = { code: (error as { code?: string }).code, message: (error as Error).message }
    } finally {
      raw.close()
    }
    console.log(`raw write on ${replica.name}'s LiteFS mount: ${rawError?.code} (${rawError?.message})`)
    expect(rawError, 'the INSERT on a replica succeeded').not.toBeNull()
    expect(rawError!.code).toMatch(/^SQLITE_(IOERR|READONLY)/)
    expect(orgs(replica)).toBe(before)

    // Writes and reads through both replicas, several at once.
    const answers: { node: string; route: string; status: number; text: string }[] = []
    const record = async (node: ClusterNode, route: string, call: Promise<HttpAnswer>) => {
      const res = await call
      answers.push({ node: node.name, route, status: res.status, text: res.text })
      return res
    }
    const round = async (node: ClusterNode, i: number) => {
      const created = await record(node, 'POST /chats', on(node, '/api/v1/chats', { method: 'POST', body: { title: `hammer ${i}`, namespace: 'hammer/eu' } }))
      const id = created.status === 201 ? (created.json().id as string) : '00000000-0000-4000-8000-000000000000'
      await Promise.all([
        record(node, 'GET /chats/:id', on(node, `/api/v1/chats/${id}`)),
        record(node, 'GET /chats', on(node, '/api/v1/chats?namespace=hammer')),
        record(node, 'GET /chats/:id/history', on(node, `/api/v1/chats/${id}/history`)),
        record(node, 'GET /namespaces', on(node, '/api/v1/namespaces')),
        record(node, 'GET /usage', on(node, '/api/v1/usage')),
        record(node, 'POST /chats (invalid)', on(node, '/api/v1/chats', { method: 'POST', body: { title: 42 } })),
        record(node, 'POST /config/instructions', on(node, '/api/v1/config/instructions', { method: 'POST', body: { namespace: 'hammer', mode: 'append', body: `round ${i}` } })),
      ])
      const turn = await postTurn(node.url, key, id, { model: MODEL, input: [{ type: 'prompt', text: `hello ${i}` }] }, 60_000)
      if (turn.ok) {
        await turn.closed
        answers.push({ node: node.name, route: 'POST /responses', status: 200, text: turn.frames.map((f) => f.event).join(',') })
        const runId = turn.frames[0]?.data.run_id as string
        await record(node, 'POST /runs/:id/cancel', on(node, `/api/v1/runs/${runId}/cancel`, { method: 'POST' }))
        await record(node, 'GET /runs/:id', on(node, `/api/v1/runs/${runId}`))
      } else {
        answers.push({ node: node.name, route: 'POST /responses', status: turn.status, text: turn.text })
      }
      await record(node, 'DELETE /chats/:id', on(node, `/api/v1/chats/${id}`, { method: 'DELETE' }))
      await record(node, 'GET /chats/:id (deleted)', on(node, `/api/v1/chats/${id}`))
    }
    await Promise.all(replicas.flatMap((node) => [0, 1, 2].map(async (worker) => {
      for (let i = 0; i < 4; i++) await round(node, worker * 10 + i)
    })))

    const bad = answers.filter((a) => a.status >= 500 && !(a.status === 503 && JSON.parse(a.text).error?.code === 'unavailable'))
    expect(bad, JSON.stringify(bad.slice(0, 5))).toEqual([])
    // The writes went through: the caller's own reads on the replica saw them.
    expect(answers.filter((a) => a.route === 'POST /chats').every((a) => a.status === 201)).toBe(true)
    expect(answers.filter((a) => a.route === 'GET /chats/:id').every((a) => a.status === 200)).toBe(true)
    expect(answers.filter((a) => a.route === 'GET /chats/:id (deleted)').every((a) => a.status === 404)).toBe(true)
    // Nor did any replica's server log a 5xx other than 503.
    for (const node of replicas) {
      const logged = readFileSync(node.parleyLog, 'utf8').match(/"statusCode":5\d\d/g) ?? []
      expect(logged.filter((s) => s !== '"statusCode":503'), node.name).toEqual([])
    }
    const counts: Record<string, number> = {}
    for (const a of answers) counts[a.status] = (counts[a.status] ?? 0) + 1
    console.log(`no 500 from a replica: ${answers.length} answers through ${replicas.map((r) => r.name).join(' and ')}, by status ${JSON.stringify(counts)}`)
  }, 300_000)

  test('replication: every copy holds the same parts; lag from a write acknowledged on the primary to each replica having it', async (context) => {
    dumpOnFailure(context)
    const lags = new Map<string, number[]>(replicas.map((r) => [r.name, []]))
    /** After an acknowledged write at `txid`: when each replica's position reaches it, and whether its row is then there. */
    const measure = async (ackedAt: number, txid: bigint, visible: (db: Database.Database) => boolean) => {
      await Promise.all(
        replicas.map(async (replica) => {
          for (;;) {
            if ((cluster.position(replica) ?? 0n) >= txid) {
              lags.get(replica.name)!.push(performance.now() - ackedAt)
              expect(cluster.readCopy(replica, visible), `${replica.name} at ${txid.toString(16)} without the write`).toBe(true)
              return
            }
            if (performance.now() - ackedAt > 30_000) throw new Error(`${replica.name} did not reach ${txid.toString(16)} within 30 s`)
            await sleep(1)
          }
        }),
      )
    }

    const chats: string[] = []
    for (let i = 0; i < 40; i++) {
      const res = await on(primary, '/api/v1/chats', { method: 'POST', body: { title: `replicated ${i}` } })
      const ackedAt = performance.now()
      expect(res.status, res.text).toBe(201)
      const id = res.json().id as string
      chats.push(id)
      await measure(ackedAt, BigInt(`0x${res.headers.get('x-parley-txid')}`), (db) => db.prepare('SELECT 1 FROM chats WHERE id = ?').get(id) !== undefined)
    }
    for (const [i, chat] of chats.slice(0, 10).entries()) {
      const turn = await postTurn(primary.url, key, chat, { model: MODEL, input: [{ type: 'prompt', text: `/long ${i + 2}` }] }, 60_000)
      if (!turn.ok) throw new Error(`HTTP ${turn.status}: ${turn.text}`)
      expect(await turn.closed).toBe('end')
      expect(turn.frames.at(-1)!.event).toBe('done')
      const ackedAt = performance.now()
      const txid = cluster.position(primary)!
      await measure(ackedAt, txid, (db) => (db.prepare("SELECT count(*) AS n FROM parts WHERE chat_id = ? AND kind = 'message'").get(chat) as { n: number }).n === 1)
    }

    // Settled: all three copies at one position, holding the same ledger.
    await waitFor('every copy at one position', () => {
      const txids = cluster.nodes.map((n) => cluster.position(n))
      return txids.every((t) => t !== null && t === txids[0])
    }, 30_000)
    const ledger = (node: ClusterNode) => cluster.readCopy(node, (db) => db.prepare('SELECT ordinal, id, chat_id, run_id, kind, body, created_at FROM parts ORDER BY ordinal').all())
    const copies = cluster.nodes.map(ledger)
    expect(copies[0]!.length).toBeGreaterThanOrEqual(20)
    for (const [i, copy] of copies.entries()) expect(copy, cluster.nodes[i]!.name).toEqual(copies[0])

    const all = [...lags.values()].flat()
    const figures = [...lags.entries()].map(([name, ms]) => `${name} p50 ${percentile(ms, 50).toFixed(1)} ms, p99 ${percentile(ms, 99).toFixed(1)} ms`)
    console.log(`replication lag over ${all.length} (write, replica) pairs: p50 ${percentile(all, 50).toFixed(1)} ms, p99 ${percentile(all, 99).toFixed(1)} ms, max ${Math.max(...all).toFixed(1)} ms (${figures.join('; ')}); ${copies[0]!.length} parts identical on ${copies.length} copies`)
  }, 300_000)
})
