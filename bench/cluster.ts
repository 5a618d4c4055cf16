/**
 * `npm run bench -- cluster` (issue 20): Parley on a real three-node LiteFS cluster on loopback
 * (test/cluster/litefs-cluster.ts: three `litefs mount` processes, each with its FUSE mount and the
 * real server under its `exec`, the primary elected through the Consul test double), measured in
 * one run:
 *
 * - the floor: a cheap write (`POST /api/v1/chats`) sent straight to the primary and through a
 *   replica, which relays it (decision 009), closed loop;
 * - turns/s with 16 clients, each looping short sandbox turns on its own chat, sent straight to the
 *   primary and through a replica; beside them, the same load on one Parley without LiteFS (a plain
 *   SQLite file), so the cost of LiteFS on the primary shows too;
 * - the capacity of the one writer: turns/s straight to the primary and to the node without
 *   LiteFS with 64 clients (enough to saturate it), with CPU, commits, WAL writes, LTX and storage
 *   bytes per turn;
 * - replication lag under that load: for acknowledged writes on the primary (its `x-parley-txid`
 *   header, or a turn's trailer), the time until each replica's LiteFS position (`parley.db-pos`)
 *   reaches that TXID; and at rest, for contrast.
 *
 * Without the litefs binary or a usable /dev/fuse it prints one line saying why and exits 0, so
 * `npm run bench` goes on with the others.
 *
 * Environment: BENCH_TURNS_DURATION (seconds per turns run, default 10), BENCH_DURATION (seconds per
 * chat-create run, default 5), BENCH_CONNECTIONS (clients, default 16).
 */
import { createParser } from 'eventsource-parser'
import { mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { Agent, request, type IncomingHttpHeaders } from 'node:http'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { Worker } from 'node:worker_threads'
import { checkPrerequisites, startLitefsCluster, type ClusterNode, type LitefsCluster } from '../test/cluster/litefs-cluster.ts'
import { REPO_ROOT, runAdmin, startServer, type ServerProcess } from '../test/e2e/server-process.ts'
import { writeSection } from './benchmarks-file.ts'
import { envNumber, fmt, installCleanup, loadLine, log, mean, procCpuSeconds, runMain, Samples, sectionHead, sleep, stats, type Stats } from './lib.ts'

const prerequisites = checkPrerequisites()
if (!prerequisites.ok) {
  log(`cluster: skipped: ${prerequisites.reason}`)
  process.exit(0)
}
const LITEFS_BINARY = prerequisites.litefs

const TURN_SECONDS = envNumber('BENCH_TURNS_DURATION', 10)
const CREATE_SECONDS = envNumber('BENCH_DURATION', 5)
const CONCURRENCY = Math.trunc(envNumber('BENCH_CONNECTIONS', 16))
const WARMUP_S = 3
/** Rounds of (one node without LiteFS, the primary, the relay) for turns, and of (primary, relay) for chat creation. */
const ROUNDS = 3
/** Clients for the capacity runs: enough to saturate the one writer (64 and 128 gave the same turns/s here). */
const CAPACITY_CLIENTS = 64
const CAPACITY_SECONDS = 5
const CAPACITY_ROUNDS = 2
const PROMPT = 'hello'
const TURN_BODY = JSON.stringify({ model: 'sandbox/echo', input: [{ type: 'prompt', text: PROMPT }] })
const CREATE_BODY = JSON.stringify({ title: 'bench' })
/** The replicas' positions are read this often (ms) by a worker thread while lag is measured. */
const POLL_MS = 1
/** A chat create on the primary this often (ms) during the lag run, beside the turns. */
const SAMPLER_EVERY_MS = 20
const REST_SAMPLES = 40
const CREDIT_USD = '1000000'

const { removeLater, cleanup } = installCleanup()
const now = () => performance.timeOrigin + performance.now()

// ---------------------------------------------------------------------------------------------
// One HTTP exchange: a JSON answer or a turn's event stream, with its trailers.
// ---------------------------------------------------------------------------------------------

type Answer = {
  status: number
  headers: IncomingHttpHeaders
  trailers: NodeJS.Dict<string>
  body: string
  /** ms from sending to the end of the answer, and to the first `delta` frame (streams). */
  ms: number
  firstDeltaMs: number | null
  /** Absolute time (performance.timeOrigin + now) the answer ended: the acknowledgement. */
  endedAt: number
  counts: Record<string, number>
  terminal: 'done' | 'error' | null
}

function exchange(agent: Agent, base: string, path: string, key: string, body: string): Promise<Answer> {
  const target = new URL(base)
  return new Promise((resolve, reject) => {
    const start = performance.now()
    const out: Answer = { status: 0, headers: {}, trailers: {}, body: '', ms: 0, firstDeltaMs: null, endedAt: 0, counts: {}, terminal: null }
    const req = request(
      {
        agent,
        host: target.hostname,
        port: target.port,
        method: 'POST',
        path,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), accept: 'application/json, text/event-stream' },
      },
      (res) => {
        out.status = res.statusCode ?? 0
        out.headers = res.headers
        res.setEncoding('utf8')
        const streaming = out.status === 200 && String(res.headers['content-type']).startsWith('text/event-stream')
        const parser = createParser({
          onEvent: (message) => {
            const event = message.event ?? 'message'
            out.counts[event] = (out.counts[event] ?? 0) + 1
            if (event === 'delta' && out.firstDeltaMs === null) out.firstDeltaMs = performance.now() - start
            if (event === 'done' || event === 'error') out.terminal = event
          },
        })
        res.on('data', (chunk: string) => {
          if (streaming) parser.feed(chunk)
          else out.body += chunk
        })
        res.once('end', () => {
          out.ms = performance.now() - start
          out.endedAt = now()
          out.trailers = res.trailers
          resolve(out)
        })
        res.once('error', reject)
      },
    )
    req.setTimeout(60_000, () => req.destroy(new Error('no answer within 60 s')))
    req.once('error', reject)
    req.end(body)
  })
}

const txidOf = (value: string | string[] | undefined): bigint | null => (typeof value === 'string' && /^[0-9a-f]{16}$/i.test(value) ? BigInt(`0x${value}`) : null)

// ---------------------------------------------------------------------------------------------
// Processes whose CPU a run accounts for, and LiteFS's own counters.
// ---------------------------------------------------------------------------------------------

type Watched = { name: string; pid: number }

async function cpuOf(watched: Watched[]): Promise<number[]> {
  return Promise.all(watched.map((w) => procCpuSeconds(w.pid)))
}

/** Bytes a process caused to be written to storage, from /proc/<pid>/io; NaN off Linux. */
function writeBytes(pid: number): number {
  try {
    const match = /^write_bytes:\s+(\d+)$/m.exec(readFileSync(`/proc/${pid}/io`, 'utf8'))
    return match ? Number(match[1]) : Number.NaN
  } catch {
    return Number.NaN
  }
}

const ltxDir = (node: ClusterNode) => join(node.litefsDataDir, 'dbs', 'parley.db', 'ltx')

/** The LTX files in a node's LiteFS data directory: one per transaction, what the primary ships to every replica. */
function ltxFiles(node: ClusterNode): Map<string, number> {
  const files = new Map<string, number>()
  for (const name of readdirSync(ltxDir(node))) {
    try {
      files.set(name, statSync(join(ltxDir(node), name)).size)
    } catch {}
  }
  return files
}

/** LiteFS's counters for the database (GET /metrics on its HTTP API): commits, WAL writes, database writes. */
async function litefsCounters(node: ClusterNode): Promise<Record<string, number>> {
  const text = await (await fetch(`${node.litefsUrl}/metrics`, { signal: AbortSignal.timeout(5_000) })).text()
  const counters: Record<string, number> = {}
  for (const line of text.split('\n')) {
    const match = /^litefs_db_(\w+)\{db="parley\.db"\} (\S+)$/.exec(line)
    if (match) counters[match[1]!] = Number(match[2])
  }
  return counters
}

const COUNTERS = ['commit_count', 'wal_write_count', 'database_write_count'] as const
type Counters = Record<(typeof COUNTERS)[number], number>
const countersDelta = (before: Record<string, number>, after: Record<string, number>): Counters =>
  Object.fromEntries(COUNTERS.map((k) => [k, (after[k] ?? Number.NaN) - (before[k] ?? Number.NaN)])) as Counters

// ---------------------------------------------------------------------------------------------
// Closed loops
// ---------------------------------------------------------------------------------------------

type Target = {
  name: string
  url: string
  key: string
  path: (worker: number) => string
  body: string
  /** Whether an answer counts as done. */
  ok: (a: Answer) => boolean
  /** Processes whose CPU is read over the run. */
  watched: Watched[]
  /** The node whose LiteFS counters are read over the run (the primary), if any. */
  counters?: ClusterNode
}

type LoopResult = {
  name: string
  count: number
  seconds: number
  perSecond: number
  latency: Stats
  firstDelta: Stats | null
  conflicts: number
  /** CPU seconds per process over the run, in the order of `target.watched`. */
  cpu: number[]
  clientCpu: number
  /** LiteFS's counters on the primary over the run (cluster runs). */
  litefs: Counters | null
  /** Every watched process and this client together, in cores (1 = one core busy). */
  machineCpu: number
}

/**
 * `concurrency` clients, each sending its next request when the previous answer has ended, until
 * `seconds` have passed (requests sent by then are finished and counted). `onAnswer` sees each.
 */
async function closedLoop(target: Target, concurrency: number, seconds: number, onAnswer?: (a: Answer) => void): Promise<LoopResult> {
  const countersBefore = target.counters ? await litefsCounters(target.counters) : null
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency })
  const latency = new Samples()
  const firstDelta = new Samples()
  let conflicts = 0
  let failures = 0
  let lastFailure = ''
  const cpuBefore = await cpuOf(target.watched)
  const clientBefore = process.cpuUsage()
  const start = performance.now()
  const deadline = start + seconds * 1000
  await Promise.all(
    Array.from({ length: concurrency }, async (_, worker) => {
      while (performance.now() < deadline) {
        const a = await exchange(agent, target.url, target.path(worker), target.key, target.body)
        if (target.ok(a)) {
          latency.push(a.ms)
          if (a.firstDeltaMs !== null) firstDelta.push(a.firstDeltaMs)
          onAnswer?.(a)
        } else if (a.status === 409) {
          conflicts++
        } else {
          failures++
          lastFailure = `status ${a.status}, terminal ${a.terminal}, frames ${JSON.stringify(a.counts)}, body ${a.body.slice(0, 300)}`
          if (failures > 20) throw new Error(`${target.name}: ${failures} failed requests; last: ${lastFailure}`)
        }
      }
    }),
  )
  const secondsTaken = (performance.now() - start) / 1000
  const cpuAfter = await cpuOf(target.watched)
  const client = process.cpuUsage(clientBefore)
  const countersAfter = target.counters ? await litefsCounters(target.counters) : null
  agent.destroy()
  if (failures > 0) throw new Error(`${target.name}: ${failures} failed requests; last: ${lastFailure}`)
  return {
    name: target.name,
    count: latency.length,
    seconds: secondsTaken,
    perSecond: latency.length / secondsTaken,
    latency: stats(latency.values()),
    firstDelta: firstDelta.length > 0 ? stats(firstDelta.values()) : null,
    conflicts,
    cpu: cpuAfter.map((c, i) => c - cpuBefore[i]!),
    clientCpu: (client.user + client.system) / 1e6 / secondsTaken,
    litefs: countersBefore && countersAfter ? countersDelta(countersBefore, countersAfter) : null,
    machineCpu: (cpuAfter.reduce((sum, c, i) => sum + c - cpuBefore[i]!, 0) + (client.user + client.system) / 1e6) / secondsTaken,
  }
}

// ---------------------------------------------------------------------------------------------
// Replication lag: a worker thread reads the primary's and each replica's position file every
// POLL_MS and records when each moved. The lag of an acknowledged write (the TXID of its answer)
// is the first time a replica's position reached that TXID, less the first time the primary's did
// (its commit, which the primary reads back for the answer's `x-parley-txid`); and, as a client
// sees it, less the time the answer ended on the client.
// ---------------------------------------------------------------------------------------------

const POLLER = `
const { workerData, parentPort } = require('node:worker_threads')
const { readFileSync } = require('node:fs')
const stop = new Int32Array(workerData.stop)
const nap = new Int32Array(new SharedArrayBuffer(4))
const last = workerData.files.map(() => '')
const moves = workerData.files.map(() => [])
let reads = 0
while (Atomics.load(stop, 0) === 0) {
  workerData.files.forEach((file, i) => {
    let text = ''
    try { text = readFileSync(file, 'utf8').slice(0, 16) } catch {}
    reads++
    if (text !== last[i]) { last[i] = text; moves[i].push([performance.timeOrigin + performance.now(), text]) }
  })
  Atomics.wait(nap, 0, 0, workerData.pollMs)
}
parentPort.postMessage({ moves, reads })
`

type Move = { at: number; txid: bigint }
type Poller = { stop: () => Promise<{ moves: Move[][]; reads: number }> }

function startPoller(files: string[]): Promise<Poller> {
  const flag = new SharedArrayBuffer(4)
  const worker = new Worker(POLLER, { eval: true, workerData: { files, stop: flag, pollMs: POLL_MS } })
  const result = new Promise<{ moves: Move[][]; reads: number }>((resolve, reject) => {
    worker.once('message', (m: { moves: [number, string][][]; reads: number }) =>
      resolve({ moves: m.moves.map((list) => list.filter(([, t]) => /^[0-9a-f]{16}$/i.test(t)).map(([at, t]) => ({ at, txid: BigInt(`0x${t}`) }))), reads: m.reads }),
    )
    worker.once('error', reject)
  })
  return new Promise((resolve, reject) => {
    worker.once('online', () =>
      resolve({
        async stop() {
          Atomics.store(new Int32Array(flag), 0, 1)
          const r = await result
          await worker.terminate()
          return r
        },
      }),
    )
    worker.once('error', reject)
  })
}

type Ack = { at: number; txid: bigint; source: 'turn' | 'create' }
type LagSet = {
  /** Per replica: ms from the primary's position reaching the write's TXID to the replica's. */
  byReplica: number[][]
  /** Per replica: ms from the client seeing the answer end to the replica's position reaching it (0 if it was there already). */
  fromClient: number[][]
  /** (write, replica) pairs the replica had before the client saw the answer end. */
  beforeAck: number
  missing: number
}

/** `moves[0]` is the primary's position over time, the others the replicas'. */
function lagsOf(acks: Ack[], moves: Move[][]): LagSet {
  let beforeAck = 0
  let missing = 0
  const [primaryMoves, ...replicaMoves] = moves as [Move[], ...Move[][]]
  const byReplica: number[][] = replicaMoves.map(() => [])
  const fromClient: number[][] = replicaMoves.map(() => [])
  for (const ack of acks) {
    const committed = primaryMoves.find((m) => m.txid >= ack.txid)
    replicaMoves.forEach((list, i) => {
      const reached = list.find((m) => m.txid >= ack.txid)
      if (!reached || !committed) {
        missing++
        return
      }
      byReplica[i]!.push(Math.max(0, reached.at - committed.at))
      if (reached.at <= ack.at) beforeAck++
      fromClient[i]!.push(Math.max(0, reached.at - ack.at))
    })
  }
  return { byReplica, fromClient, beforeAck, missing }
}

// ---------------------------------------------------------------------------------------------

async function topUp(dataDir: string, env: Record<string, string> = {}): Promise<void> {
  const result = await runAdmin(dataDir, ['balance', 'add', '--org', 'dev', '--amount', CREDIT_USD], 60_000, env)
  if (result.code !== 0) throw new Error(`admin balance add failed (${result.code}): ${result.stderr}`)
}

async function createChats(url: string, key: string, count: number): Promise<string[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: 4 })
  const ids: string[] = []
  for (let i = 0; i < count; i++) {
    const a = await exchange(agent, url, '/api/v1/chats', key, CREATE_BODY)
    if (a.status !== 201) throw new Error(`creating a chat on ${url}: ${a.status} ${a.body}`)
    ids.push(JSON.parse(a.body).id as string)
  }
  agent.destroy()
  return ids
}

/**
 * The admission caps of decision 033, out of the way for the bench only (as bench/turns.ts sets
 * them): at 64 clients on a loaded machine the single node shed turns as overloaded, which voided
 * the capacity runs. The bench measures what a turn costs on LiteFS, not admission.
 */
const CAPS_OUT_OF_THE_WAY = { MAX_RUNNING_RUNS_PER_ORG: '1000', MAX_CONCURRENT_TURNS: '1000', SHED_FROM_TURNS: '1000' }

async function main(): Promise<void> {
  const loadBefore = loadLine()
  let cluster: LitefsCluster | null = null
  let single: ServerProcess | null = null
  try {
    // One Parley without LiteFS: a dev start on a fresh DATA_DIR, as a laptop runs it.
    const singleDir = mkdtempSync(join(tmpdir(), 'parley-bench-cluster-single-'))
    removeLater(singleDir)
    single = await startServer({ env: { DATA_DIR: singleDir, LOG_LEVEL: 'warn', ...CAPS_OUT_OF_THE_WAY }, readyPath: '/readyz', timeoutMs: 60_000 })
    const singleKey = readFileSync(join(singleDir, 'dev-api-key.txt'), 'utf8').trim()
    await topUp(singleDir)

    log('starting a three-node LiteFS cluster (Consul lease through the test double, TTL 2 s, lock-delay 1 s)')
    cluster = await startLitefsCluster({ nodes: 3, lease: { type: 'consul', ttlMs: 2_000, lockDelayMs: 1_000 }, logLevel: 'warn', env: CAPS_OUT_OF_THE_WAY })
    try {
      await cluster.start()
    } catch (error) {
      log(cluster.report(40))
      throw error
    }
    const c = cluster
    const primary = await c.waitForPrimary()
    const replicas = c.nodes.filter((n) => n !== primary)
    // The relay: the replica that is no candidate if there is one (production's other region), else the first.
    const relay = replicas.find((n) => !n.candidate) ?? replicas[0]!
    const key = c.apiKey()
    await topUp(primary.dataDir, { LITEFS_DIR: primary.fuseDir })
    log(`cluster ready in ${c.bootMs()} ms: primary ${primary.name}, relay through ${relay.name}, other replica ${replicas.find((n) => n !== relay)!.name}`)

    const parleyPid = (n: ClusterNode) => {
      const starts = c.starts(n)
      if (starts.length !== 1) throw new Error(`${n.name}: ${starts.length} starts of Parley, expected 1`)
      return starts[0]!.pid
    }
    const litefsPid = (n: ClusterNode) => n.process!.pid!
    const watched: Watched[] = [
      { name: 'primary Parley', pid: parleyPid(primary) },
      { name: 'relay Parley', pid: parleyPid(relay) },
      { name: 'primary litefs', pid: litefsPid(primary) },
      ...replicas.map((r) => ({ name: `${r === relay ? 'relay' : 'other replica'} litefs`, pid: litefsPid(r) })),
      { name: 'single Parley', pid: single.child.pid! },
    ]
    const W = Object.fromEntries(watched.map((w, i) => [w.name, i])) as Record<string, number>

    // Probe: a turn straight to the primary and one through the relay stream the same frames.
    const probeChats = await createChats(primary.url, key, 2)
    const probeAgent = new Agent({ keepAlive: true, maxSockets: 1 })
    const direct = await exchange(probeAgent, primary.url, `/api/v1/chats/${probeChats[0]}/responses`, key, TURN_BODY)
    const relayed = await exchange(probeAgent, relay.url, `/api/v1/chats/${probeChats[1]}/responses`, key, TURN_BODY)
    probeAgent.destroy()
    if (direct.terminal !== 'done' || relayed.terminal !== 'done' || JSON.stringify(direct.counts) !== JSON.stringify(relayed.counts)) {
      throw new Error(`probe turns: direct ${direct.status} ${JSON.stringify(direct.counts)} ${direct.body}; relayed ${relayed.status} ${JSON.stringify(relayed.counts)} ${relayed.body}`)
    }
    if (txidOf(direct.trailers['x-parley-txid']) === null) throw new Error(`the primary's stream carries no x-parley-txid trailer: ${JSON.stringify(direct.trailers)}`)
    const frames = direct.counts
    const deltas = frames.delta ?? 0
    const turnOk = (a: Answer) => a.status === 200 && a.terminal === 'done' && (a.counts.delta ?? 0) === deltas
    log(`probe: a turn streams ${JSON.stringify(frames)}, straight to the primary and through ${relay.name} alike`)

    const turnTarget = (name: string, url: string, k: string, chats: string[]): Target => ({
      name,
      url,
      key: k,
      path: (w) => `/api/v1/chats/${chats[w % chats.length]}/responses`,
      body: TURN_BODY,
      ok: turnOk,
      watched,
      counters: primary,
    })
    const createTarget = (name: string, url: string): Target => ({ name, url, key, path: () => '/api/v1/chats', body: CREATE_BODY, ok: (a) => a.status === 201, watched, counters: primary })

    // Floor: chat creation, straight vs relayed.
    log(`floor: POST /api/v1/chats, ${CONCURRENCY} clients, ${CREATE_SECONDS} s per run, straight and relayed alternately`)
    const createDirect = createTarget('chat create, straight to the primary', primary.url)
    const createRelay = createTarget(`chat create, through ${relay.name}`, relay.url)
    await closedLoop(createDirect, CONCURRENCY, 2)
    await closedLoop(createRelay, CONCURRENCY, 2)
    const createRuns: { direct: LoopResult; relay: LoopResult }[] = []
    for (let round = 0; round < ROUNDS; round++) {
      const d = await closedLoop(createDirect, CONCURRENCY, CREATE_SECONDS)
      const r = await closedLoop(createRelay, CONCURRENCY, CREATE_SECONDS)
      createRuns.push({ direct: d, relay: r })
      log(`chat create: ${fmt(d.perSecond)}/s straight, ${fmt(r.perSecond)}/s relayed (p50 ${fmt(d.latency.p50, 2)} / ${fmt(r.latency.p50, 2)} ms)`)
    }

    // Turns: one node without LiteFS, the primary, the relay; fresh chats for every run.
    log(`turns: ${CONCURRENCY} clients, each on its own chat, "${PROMPT}" on sandbox/echo; ${WARMUP_S} s warm-up each, then ${TURN_SECONDS} s per run, ${ROUNDS} rounds`)
    await closedLoop(turnTarget('warm-up', single.url, singleKey, await createChats(single.url, singleKey, CONCURRENCY)), CONCURRENCY, WARMUP_S)
    await closedLoop(turnTarget('warm-up', primary.url, key, await createChats(primary.url, key, CONCURRENCY)), CONCURRENCY, WARMUP_S)
    await closedLoop(turnTarget('warm-up', relay.url, key, await createChats(primary.url, key, CONCURRENCY)), CONCURRENCY, WARMUP_S)
    type TurnRun = LoopResult & { txids: number; ltxFiles: number; ltxBytes: number; diskBytes: number }
    const turnRun = async (kind: 'single' | 'primary' | 'relay', concurrency = CONCURRENCY, seconds = TURN_SECONDS): Promise<TurnRun> => {
      const url = kind === 'single' ? single!.url : kind === 'primary' ? primary.url : relay.url
      const k = kind === 'single' ? singleKey : key
      const chats = await createChats(kind === 'single' ? single!.url : primary.url, k, concurrency)
      await sleep(500)
      const name = kind === 'single' ? 'one node, no LiteFS' : kind === 'primary' ? 'straight to the primary' : `through ${relay.name} (relayed)`
      const ltxBefore = ltxFiles(primary)
      const txBefore = c.position(primary)!
      const diskPid = kind === 'single' ? single!.child.pid! : litefsPid(primary)
      const diskBefore = writeBytes(diskPid)
      const r = await closedLoop(turnTarget(name, url, k, chats), concurrency, seconds)
      const diskBytes = writeBytes(diskPid) - diskBefore
      let ltxCount = 0
      let ltxBytes = 0
      if (kind !== 'single') {
        for (const [file, size] of ltxFiles(primary)) {
          if (!ltxBefore.has(file)) {
            ltxCount++
            ltxBytes += size
          }
        }
      }
      const txids = kind === 'single' ? 0 : Number(c.position(primary)! - txBefore)
      log(
        `${name} (${concurrency} clients): ${fmt(r.perSecond)} turns/s, whole turn p50 ${fmt(r.latency.p50, 2)} ms p99 ${fmt(r.latency.p99, 2)} ms, ` +
          `CPU per turn: ${watched.map((w, i) => `${w.name} ${fmt((r.cpu[i]! * 1e6) / r.count)} µs`).join(', ')}`,
      )
      return { ...r, txids, ltxFiles: ltxCount, ltxBytes, diskBytes }
    }
    const turnRuns: { single: TurnRun; primary: TurnRun; relay: TurnRun }[] = []
    for (let round = 0; round < ROUNDS; round++) {
      const s = await turnRun('single')
      const p = await turnRun('primary')
      const r = await turnRun('relay')
      turnRuns.push({ single: s, primary: p, relay: r })
    }

    // Capacity: the one writer saturated, with and without LiteFS.
    log(`capacity: ${CAPACITY_CLIENTS} clients, straight to the primary and to the node without LiteFS, ${CAPACITY_SECONDS} s per run, ${CAPACITY_ROUNDS} rounds`)
    await turnRun('single', CAPACITY_CLIENTS, WARMUP_S)
    await turnRun('primary', CAPACITY_CLIENTS, WARMUP_S)
    const capacityRuns: { single: TurnRun; primary: TurnRun }[] = []
    for (let round = 0; round < CAPACITY_ROUNDS; round++) {
      const s = await turnRun('single', CAPACITY_CLIENTS, CAPACITY_SECONDS)
      const p = await turnRun('primary', CAPACITY_CLIENTS, CAPACITY_SECONDS)
      capacityRuns.push({ single: s, primary: p })
    }

    // Lag under load: the same load straight to the primary, every turn's trailer TXID, and a chat create every SAMPLER_EVERY_MS.
    log(`replication lag under load: ${TURN_SECONDS} s of the same turns straight to the primary, positions polled every ${POLL_MS} ms`)
    const lagChats = await createChats(primary.url, key, CONCURRENCY)
    await sleep(500)
    const posFiles = [primary, ...replicas].map((n) => join(n.fuseDir, 'parley.db-pos'))
    const acks: Ack[] = []
    let poller = await startPoller(posFiles)
    let sampling = true
    const sampler = (async () => {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 })
      while (sampling) {
        const a = await exchange(agent, primary.url, '/api/v1/chats', key, CREATE_BODY)
        const txid = txidOf(a.headers['x-parley-txid'])
        if (a.status !== 201 || txid === null) throw new Error(`lag sampler: ${a.status} ${a.body}`)
        acks.push({ at: a.endedAt, txid, source: 'create' })
        await sleep(SAMPLER_EVERY_MS)
      }
      agent.destroy()
    })()
    const lagRun = await closedLoop(turnTarget('lag run', primary.url, key, lagChats), CONCURRENCY, TURN_SECONDS, (a) => {
      const txid = txidOf(a.trailers['x-parley-txid'])
      if (txid !== null) acks.push({ at: a.endedAt, txid, source: 'turn' })
    })
    sampling = false
    await sampler
    await sleep(1_000)
    const loaded = await poller.stop()
    const loadedTurns = lagsOf(acks.filter((a) => a.source === 'turn'), loaded.moves)
    const loadedCreates = lagsOf(acks.filter((a) => a.source === 'create'), loaded.moves)
    log(`lag run: ${fmt(lagRun.perSecond)} turns/s, ${acks.length} acknowledged writes sampled, ${fmt(loaded.reads)} position reads`)

    // Lag at rest: one chat create at a time, nothing else running.
    await sleep(1_000)
    poller = await startPoller(posFiles)
    const restAcks: Ack[] = []
    const restAgent = new Agent({ keepAlive: true, maxSockets: 1 })
    for (let i = 0; i < REST_SAMPLES; i++) {
      const a = await exchange(restAgent, primary.url, '/api/v1/chats', key, CREATE_BODY)
      restAcks.push({ at: a.endedAt, txid: txidOf(a.headers['x-parley-txid'])!, source: 'create' })
      await sleep(50)
    }
    restAgent.destroy()
    await sleep(500)
    const rest = lagsOf(restAcks, (await poller.stop()).moves)

    // -------------------------------------------------------------------------------------------
    // Figures
    // -------------------------------------------------------------------------------------------
    const us = (r: LoopResult, name: string) => (r.cpu[W[name]!]! * 1e6) / r.count
    const ms = (n: number) => `${fmt(n, 2)} ms`
    const kib = (bytes: number) => `${fmt(bytes / 1024, 1)} KiB`
    const createRatios = createRuns.map((x) => x.relay.perSecond / x.direct.perSecond)
    const turnRatios = turnRuns.map((x) => x.relay.perSecond / x.primary.perSecond)
    const litefsRatios = turnRuns.map((x) => x.primary.perSecond / x.single.perSecond)
    const createRatio = mean(createRatios)
    const turnRatio = mean(turnRatios)
    const litefsRatio = mean(litefsRatios)
    const tps = (k: 'single' | 'primary' | 'relay') => mean(turnRuns.map((x) => x[k].perSecond))
    const avg = (k: 'single' | 'primary' | 'relay', f: (r: TurnRun) => number) => mean(turnRuns.map((x) => f(x[k])))

    const createRow = (r: LoopResult, ratio: string) =>
      `| ${r.name} | ${fmt(r.perSecond)} | ${fmt(r.count)} | ${ms(r.latency.p50)} | ${ms(r.latency.p99)} | ${fmt(us(r, 'primary Parley'))} µs | ` +
      `${fmt(us(r, 'relay Parley'))} µs | ${fmt(us(r, 'primary litefs'))} µs | ${fmt(r.litefs!.commit_count / r.count, 2)} | ${fmt(r.machineCpu, 2)} | ${ratio} |`
    const createTable = [
      '| Run | req/s | requests | p50 | p99 | primary Parley CPU per request | relay Parley CPU per request | primary litefs CPU per request | LiteFS commits per request | CPU, all processes (cores) | relayed / straight |',
      '|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
      ...createRuns.flatMap((x, i) => [createRow(x.direct, ''), createRow(x.relay, createRatios[i]!.toFixed(2))]),
    ].join('\n')

    const replicaLitefs = (r: TurnRun) => replicas.map((n) => us(r, `${n === relay ? 'relay' : 'other replica'} litefs`))
    const turnRow = (r: TurnRun, kind: 'single' | 'primary' | 'relay', ratio: string) => {
      const parleyCpu = kind === 'single' ? us(r, 'single Parley') : us(r, 'primary Parley')
      const relayCpu = kind === 'relay' ? `${fmt(us(r, 'relay Parley'))} µs` : '–'
      const litefsCpu = kind === 'single' ? '–' : `${fmt(us(r, 'primary litefs'))} µs`
      const replicaCpu = kind === 'single' ? '–' : replicaLitefs(r).map((x) => `${fmt(x)}`).join(' + ') + ' µs'
      return (
        `| ${r.name} | ${fmt(r.perSecond)} | ${fmt(r.count)} | ${ms(r.firstDelta!.p50)} | ${ms(r.latency.p50)} | ${ms(r.latency.p99)} | ${fmt(parleyCpu)} µs | ` +
        `${relayCpu} | ${litefsCpu} | ${replicaCpu} | ${fmt(r.machineCpu, 2)} | ${ratio} |`
      )
    }
    const turnTable = [
      '| Run | turns/s | turns | first delta p50 | whole turn p50 | whole turn p99 | Parley CPU per turn (the writer) | relay Parley CPU per turn | primary litefs CPU per turn | replicas\' litefs CPU per turn | CPU, all processes (cores) | ratio |',
      '|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
      ...turnRuns.flatMap((x, i) => [
        turnRow(x.single, 'single', ''),
        turnRow(x.primary, 'primary', `${litefsRatios[i]!.toFixed(2)} of no LiteFS`),
        turnRow(x.relay, 'relay', `**${turnRatios[i]!.toFixed(2)}** of straight`),
      ]),
    ].join('\n')

    const capacityRatios = capacityRuns.map((x) => x.primary.perSecond / x.single.perSecond)
    const capacityRow = (r: TurnRun, kind: 'single' | 'primary', ratio: string) => {
      const perTurnOf = (n: number) => n / r.count
      const cluster = kind === 'primary'
      return (
        `| ${r.name} | ${fmt(r.perSecond)} | ${ms(r.latency.p50)} | ${fmt(us(r, cluster ? 'primary Parley' : 'single Parley'))} µs | ` +
        `${cluster ? `${fmt(us(r, 'primary litefs'))} µs` : '–'} | ${cluster ? replicaLitefs(r).map((x) => fmt(x)).join(' + ') + ' µs' : '–'} | ${fmt(r.machineCpu, 2)} | ` +
        `${cluster ? fmt(perTurnOf(r.litefs!.commit_count), 3) : '–'} | ${cluster ? fmt(perTurnOf(r.litefs!.wal_write_count), 1) : '–'} | ` +
        `${cluster ? kib(perTurnOf(r.ltxBytes)) : '–'} | ${kib(perTurnOf(r.diskBytes))} | ${ratio} |`
      )
    }
    const capacityTable = [
      '| Run | turns/s | whole turn p50 | Parley CPU per turn (the writer) | primary litefs CPU per turn | replicas\' litefs CPU per turn | CPU, all processes (cores) | LiteFS commits per turn | WAL writes per turn (FUSE) | LTX per turn (to each replica) | written to storage per turn | LiteFS / none |',
      '|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
      ...capacityRuns.flatMap((x, i) => [capacityRow(x.single, 'single', ''), capacityRow(x.primary, 'primary', `**${capacityRatios[i]!.toFixed(2)}**`)]),
    ].join('\n')
    const capacity = (k: 'single' | 'primary', f: (r: TurnRun) => number) => mean(capacityRuns.map((x) => f(x[k])))

    const lagStats = (set: LagSet) => stats(set.byReplica.flat())
    const lagRow = (what: string, set: LagSet, count: number) => {
      const all = lagStats(set)
      const client = stats(set.fromClient.flat())
      const per = set.byReplica.map((l, i) => `${replicas[i]!.name} ${ms(stats(l).p50)} / ${ms(stats(l).p99)}`).join('; ')
      return (
        `| ${what} | ${fmt(count)} | ${ms(all.p50)} | ${ms(all.p99)} | ${ms(all.max)} | ${per} | ${ms(client.p50)} / ${ms(client.p99)} | ` +
        `${fmt(set.beforeAck)} of ${fmt(client.n)} | ${set.missing} |`
      )
    }
    const lagTable = [
      "| Acknowledged writes | writes | lag p50 | lag p99 | lag max | per replica p50 / p99 | after the client saw the answer: p50 / p99 | (write, replica) pairs there before the client saw the answer | never reached |",
      '|---|--:|--:|--:|--:|---|--:|--:|--:|',
      lagRow(`turns' settlements under load (\`x-parley-txid\` trailer), ${CONCURRENCY} clients`, loadedTurns, acks.filter((a) => a.source === 'turn').length),
      lagRow(`chat creates under the same load (\`x-parley-txid\` header), one every ${SAMPLER_EVERY_MS} ms`, loadedCreates, acks.filter((a) => a.source === 'create').length),
      lagRow('chat creates at rest, one at a time', rest, restAcks.length),
    ].join('\n')
    process.stdout.write(`${createTable}\n\n${turnTable}\n\n${capacityTable}\n\n${lagTable}\n`)

    const perTurn = (k: 'primary' | 'relay', f: (r: TurnRun) => number) => avg(k, (r) => f(r) / r.count)
    const underLoad = stats([...loadedTurns.byReplica.flat(), ...loadedCreates.byReplica.flat()])
    const section = [
      ...sectionHead("Cluster: turns through a replica's relay, and replication lag, on three LiteFS nodes (issue 20)", 'bench/cluster.ts', loadBefore),
      `- **Cluster**: three \`litefs mount\` processes (LiteFS at \`${LITEFS_BINARY}\`) on loopback, each with its FUSE mount and the real server`,
      `  under its \`exec\` (\`LOG_LEVEL=warn\`), started by \`test/cluster/litefs-cluster.ts\`; the primary elected through Consul's session/KV API`,
      `  (test/helpers/consul-lease-service.ts, TTL 2 s, lock-delay 1 s); ready ${fmt((c.bootMs() ?? 0) / 1000, 1)} s after the mounts started. Primary ${primary.name};`,
      `  relayed requests go to ${relay.name}${relay.candidate ? '' : ' (no candidate, as the other region)'}, which relays them to the primary (decision 009). Every process, the client included, shares the ${cpus().length} cores.`,
      `- **Load**: closed loop over real HTTP (node:http keep-alive agent, loopback); ${CONCURRENCY} clients. Chat create: ${CREATE_SECONDS} s per run after 2 s of warm-up,`,
      `  straight and relayed alternately, ${ROUNDS} rounds. Turns: each client loops \`${TURN_BODY}\` on its own chat (fresh chats every run;`,
      `  a turn streams ${JSON.stringify(frames)}), ${WARMUP_S} s warm-up per target, then ${TURN_SECONDS} s per run in ${ROUNDS} rounds of: one Parley without LiteFS, straight to the primary, through the relay.`,
      '',
      '### Floor: a cheap write, straight and relayed',
      '',
      createTable,
      '',
      `- **Floor**: chat creation relayed runs at **${createRatio.toFixed(2)}×** the rate straight to the primary (${fmt(mean(createRuns.map((x) => x.relay.perSecond)))} against ${fmt(mean(createRuns.map((x) => x.direct.perSecond)))} req/s).`,
      '  A relayed write costs the relay a request in, a request out (undici) and a wait for its own copy to reach the `x-parley-txid`',
      '  (polled every 5 ms, `src/store/replication-position.ts`) before it answers. Each chat create is its own LiteFS transaction',
      `  (commits per request above): the primary's rate of commits bounds both runs.`,
      '',
      `### Turns at ${CONCURRENCY} clients`,
      '',
      turnTable,
      '',
      `- **Result**: ${fmt(tps('relay'))} turns/s through the relay against ${fmt(tps('primary'))} straight to the primary: **${turnRatio.toFixed(2)}×** ` +
        `(the floor's ratio: ${createRatio.toFixed(2)}×). One Parley without LiteFS: ${fmt(tps('single'))} turns/s; the primary on LiteFS makes ${litefsRatio.toFixed(2)}× that.`,
      '  Each ratio is to the run just before it in the same round.',
      `- **CPU per turn** (from \`/proc/<pid>/stat\`, steadier than turns/s on a shared machine): the writing Parley ${fmt(avg('single', (r) => us(r, 'single Parley')))} µs without LiteFS, ` +
        `${fmt(avg('primary', (r) => us(r, 'primary Parley')))} µs as the LiteFS primary (its writes go through FUSE); ` +
        `the primary's litefs ${fmt(avg('primary', (r) => us(r, 'primary litefs')))} µs, each replica's litefs ${replicas.map((n) => fmt(avg('primary', (r) => us(r, `${n === relay ? 'relay' : 'other replica'} litefs`)))).join(' and ')} µs; ` +
        `relaying costs the relay's Parley ${fmt(avg('relay', (r) => us(r, 'relay Parley')))} µs per turn.`,
      `- **Per turn on the primary** (straight runs): ${fmt(perTurn('primary', (r) => r.txids), 2)} transactions (LiteFS TXIDs), ${kib(perTurn('primary', (r) => r.ltxBytes))} of LTX ` +
        `(${fmt(perTurn('primary', (r) => r.ltxFiles), 2)} files, new in the primary's LiteFS data directory over the run), which LiteFS sends to each replica; ` +
        `${kib(perTurn('primary', (r) => r.diskBytes))} written to storage by the primary's litefs (\`/proc/<pid>/io\` \`write_bytes\`) against ` +
        `${kib(avg('single', (r) => r.diskBytes / r.count))} by Parley without LiteFS.`,
      `- **LiteFS on the primary per turn** (its \`/metrics\`, straight runs): ${fmt(perTurn('primary', (r) => r.litefs!.commit_count), 2)} commits, ` +
        `${fmt(perTurn('primary', (r) => r.litefs!.wal_write_count), 1)} WAL writes and ${fmt(perTurn('primary', (r) => r.litefs!.database_write_count), 2)} database-file writes (checkpoints) through FUSE; ` +
        `${fmt(avg('primary', (r) => r.litefs!.commit_count / r.seconds))} commits/s. Parley's group commit puts several turns' writes in one transaction.`,
      `- 409 \`run_in_progress\` answers: ${turnRuns.map((x) => `${x.single.conflicts}/${x.primary.conflicts}/${x.relay.conflicts}`).join(', ')} (no LiteFS/straight/relayed per round).`,
      '',
      `### Capacity of the one writer: ${CAPACITY_CLIENTS} clients`,
      '',
      capacityTable,
      '',
      `- **Result**: the LiteFS primary sustains **${fmt(capacity('primary', (r) => r.perSecond))} turns/s**, the same Parley on a plain SQLite file ${fmt(capacity('single', (r) => r.perSecond))}: ` +
        `**${mean(capacityRatios).toFixed(2)}×**. Straight runs of ${CAPACITY_SECONDS} s after ${WARMUP_S} s of warm-up each, alternately, ${CAPACITY_ROUNDS} rounds; fresh chats every run.`,
      `- Per turn: the writing Parley ${fmt(capacity('single', (r) => us(r, 'single Parley')))} µs of CPU without LiteFS, ${fmt(capacity('primary', (r) => us(r, 'primary Parley')))} µs on LiteFS, ` +
        `plus ${fmt(capacity('primary', (r) => us(r, 'primary litefs')))} µs in the primary's litefs; all processes together used ${fmt(capacity('primary', (r) => r.machineCpu), 2)} of the ${cpus().length} cores ` +
        `on LiteFS (${fmt(capacity('single', (r) => r.machineCpu), 2)} without). Group commit: ${fmt(capacity('primary', (r) => r.litefs!.commit_count / r.seconds))} commits/s, ` +
        `${fmt(capacity('primary', (r) => r.count / r.litefs!.commit_count), 1)} turns per commit.`,
      '',
      '### Replication lag',
      '',
      lagTable,
      '',
      `- **Result**: under load (${fmt(lagRun.perSecond)} turns/s straight to the primary, ${CONCURRENCY} clients) a write acknowledged on the primary reached a replica's copy after ` +
        `**p50 ${ms(underLoad.p50)}, p99 ${ms(underLoad.p99)}, max ${ms(underLoad.max)}** (${fmt(underLoad.n)} (write, replica) pairs); at rest p50 ${ms(lagStats(rest).p50)}, max ${ms(lagStats(rest).max)}.`,
      `- Lag is from the primary's \`parley.db-pos\` reaching a write's TXID (its commit: the primary reads that file back for the answer's \`x-parley-txid\` header,`,
      `  or a turn's trailer after \`done\`) to the replica's \`parley.db-pos\` reaching it. The three files are read every ${POLL_MS} ms by a worker thread of the client`,
      `  (${fmt(loaded.reads)} reads under load): the resolution is about a millisecond. "After the client saw the answer" measures from the end of the answer on the`,
      '  client instead (0 when the replica had the write already): the client, busy with 16 streams, sees an answer late, so replicas often have it first.',
      '  A relayed answer ends only once the relay\'s own copy has the write (decision 009), so the relayed runs\' whole-turn times above include the relay\'s lag.',
      '- Both the turns and the creates are the primary\'s own acknowledgements; LiteFS streams each transaction\'s LTX to the replicas as it commits.',
    ].join('\n')
    writeSection(join(REPO_ROOT, 'BENCHMARKS.md'), 'cluster', section)
    log('wrote BENCHMARKS.md (section "cluster")')
  } finally {
    await single?.stop()
    await cluster?.stop()
  }
}

runMain(main, cleanup)
