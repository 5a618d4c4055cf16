/**
 * `npm run bench -- turns` (issue 5): sandbox turns with a 20-delta answer (`/long 20` on
 * sandbox/echo) through real HTTP against the real server process, beside a bare Fastify SSE route
 * (bench/bare-server.ts) streaming the same frames, in the same run:
 *
 * - turns/s at concurrency 32 (32 chats, each connection looping turns on its own chat), closed loop;
 * - latency from sending the request to the first `delta` frame (p50/p99), at concurrency 32 and 1;
 * - heap per idle hydrated actor (bench/actor-memory.ts, in its own process with --expose-gc);
 * - the server's RSS with 2,000 streams open at once (`/slow 5000` + `/long 3`: about 15 s each).
 *
 * Environment: BENCH_TURNS_DURATION (seconds per throughput run, default 10), BENCH_ACTORS (default
 * 5,000), BENCH_STREAMS (default 2,000).
 */
import { mkdtempSync } from 'node:fs'
import { Agent } from 'node:http'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { estimatePartTokens } from '../src/domain/context/estimate-part-tokens.ts'
import type { PartBody } from '../src/domain/parts.ts'
import { openDatabase } from '../src/store/database.ts'
import { createStore } from '../src/store/index.ts'
import { REPO_ROOT, startServer, type ServerProcess } from '../test/e2e/server-process.ts'
import { writeSection } from './benchmarks-file.ts'
import {
  actorMemory,
  envNumber,
  fmt,
  installCleanup,
  loadLine,
  log,
  mean,
  procCpuSeconds,
  procStatusKb,
  runMain,
  Samples,
  sectionHead,
  sleep,
  stats,
  type Stats,
} from './lib.ts'
import { sse, type SseOutcome } from './sse-client.ts'

const DURATION_S = envNumber('BENCH_TURNS_DURATION', 10)
const ACTORS = Math.trunc(envNumber('BENCH_ACTORS', 5_000))
const STREAMS = Math.trunc(envNumber('BENCH_STREAMS', 2_000))
const CONCURRENCY = 32
const DELTAS = 20
const WARMUP_S = 3
/** Throughput runs of Parley; the bare route runs before, between and after them. */
const PARLEY_RUNS = 2
const LATENCY_ROUNDS = 5
const LATENCY_TURNS_PER_ROUND = 40
const LATENCY_CHATS = 10
/** Prior turns of the chat whose latency shows what a long history costs a turn (packing keeps its conversion between turns). */
const LONG_HISTORY_TURNS = 1_000
/** Streams being opened at once while the 2,000 are opened; an open stream no longer counts. */
const OPENING = 64
const STREAM_PROMPT = '/slow 5000\n/long 3'
const TURN_BODY = JSON.stringify({ model: 'sandbox/echo', input: [{ type: 'prompt', text: `/long ${DELTAS}` }] })

const { removeLater, cleanup } = installCleanup()

/**
 * The caps of decision 033, raised past what the bench opens: with the defaults (64 running runs per
 * organisation, shedding from 32 turns in flight on a late loop) the one benchmark organisation got
 * 32 of its 2,000 streams open, and a c=32 run on a busy machine could be shed. The bench measures
 * what turns and open streams cost, not admission (bench/overload.ts measures that).
 */
const CAPS_OUT_OF_THE_WAY = String(STREAMS + 2 * OPENING + CONCURRENCY)
const SERVER_ENV = (dataDir: string) => ({
  DATA_DIR: dataDir,
  LOG_LEVEL: 'warn',
  MAX_RUNNING_RUNS_PER_ORG: CAPS_OUT_OF_THE_WAY,
  MAX_CONCURRENT_TURNS: CAPS_OUT_OF_THE_WAY,
  SHED_FROM_TURNS: CAPS_OUT_OF_THE_WAY,
})

type Target = { name: string; url: string; pid: number; path: (worker: number) => string; headers: Record<string, string> }

type LoopResult = {
  turns: number
  seconds: number
  perSecond: number
  firstDelta: Stats
  total: Stats
  /** turns/s over the first and the second half of the run (a trend shows per-turn cost growing with history). */
  halves: [number, number]
  conflicts: number
  /** CPU time of the server process per completed turn (µs), and its CPU use over the run (1 = one core busy). */
  serverCpuPerTurnUs: number
  serverCpu: number
  /** The same for this client process. */
  clientCpu: number
}

/** A turn counts when it answered 200 and streamed exactly the 20 deltas and `done`. */
const complete = (o: SseOutcome) => o.status === 200 && o.terminal === 'done' && o.counts.delta === DELTAS

function describeFailure(o: SseOutcome): string {
  return `status ${o.status}, terminal ${o.terminal}, frames ${JSON.stringify(o.counts)}, body ${o.body.slice(0, 300)}`
}

/**
 * Closed loop: `concurrency` connections, each sending its next turn when the previous stream has
 * ended, until `seconds` have passed (turns already sent then are finished and counted).
 */
async function closedLoop(target: Target, concurrency: number, seconds: number): Promise<LoopResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency })
  const firstDelta = new Samples()
  const total = new Samples()
  const finishedAt = new Samples()
  let conflicts = 0
  let failures = 0
  let lastFailure = ''
  const serverCpuBefore = await procCpuSeconds(target.pid)
  const clientCpuBefore = process.cpuUsage()
  const start = performance.now()
  const deadline = start + seconds * 1000
  await Promise.all(
    Array.from({ length: concurrency }, async (_, worker) => {
      while (performance.now() < deadline) {
        const o = await sse({ agent, url: target.url, path: target.path(worker), headers: target.headers, body: TURN_BODY, timeoutMs: 30_000 })
        if (complete(o)) {
          firstDelta.push(o.firstDeltaMs!)
          total.push(o.totalMs)
          finishedAt.push(performance.now() - start)
        } else if (o.status === 409) {
          // One running run per chat: the previous turn's actor had not gone idle yet.
          conflicts++
        } else {
          failures++
          lastFailure = describeFailure(o)
          if (failures > 20) throw new Error(`${target.name}: ${failures} failed turns; last: ${lastFailure}`)
        }
      }
    }),
  )
  const secondsTaken = (performance.now() - start) / 1000
  const serverCpu = (await procCpuSeconds(target.pid)) - serverCpuBefore
  const clientUsage = process.cpuUsage(clientCpuBefore)
  agent.destroy()
  if (failures > 0) throw new Error(`${target.name}: ${failures} failed turns; last: ${lastFailure}`)
  const done = finishedAt.values()
  const half = (seconds * 1000) / 2
  let firstHalf = 0
  for (const t of done) if (t < half) firstHalf++
  return {
    turns: done.length,
    seconds: secondsTaken,
    perSecond: done.length / secondsTaken,
    firstDelta: stats(firstDelta.values()),
    total: stats(total.values()),
    halves: [firstHalf / (half / 1000), (done.length - firstHalf) / (secondsTaken - half / 1000)],
    conflicts,
    serverCpuPerTurnUs: (serverCpu * 1e6) / done.length,
    serverCpu: serverCpu / secondsTaken,
    clientCpu: (clientUsage.user + clientUsage.system) / 1e6 / secondsTaken,
  }
}

/** Sequential turns (concurrency 1): latency with nothing else in flight. */
async function sequential(target: Target, turns: number, into: { firstDelta: Samples; total: Samples }): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  for (let i = 0; i < turns; i++) {
    const o = await sse({ agent, url: target.url, path: target.path(i), headers: target.headers, body: TURN_BODY, timeoutMs: 30_000 })
    if (!complete(o)) throw new Error(`${target.name}: ${describeFailure(o)}`)
    into.firstDelta.push(o.firstDeltaMs!)
    into.total.push(o.totalMs)
  }
  agent.destroy()
}

type StreamsResult = {
  rssBeforeKb: number
  rssOpenKb: number
  hwmKb: number
  rssAfterKb: number
  openSeconds: number
  openAtSample: number
  completed: number
  firstDelta: Stats
}

/** Opens `chats.length` long streams at once on a warmed-up server and reads its RSS while they are all open. */
async function openStreams(server: ServerProcess, auth: Record<string, string>, warmChats: string[], chats: string[]): Promise<StreamsResult> {
  const pid = server.child.pid!
  // Warm up the server as in service: a few seconds of ordinary turns, then let it settle.
  await closedLoop(
    { name: 'warm-up', url: server.url, pid: server.child.pid!, path: (w) => `/api/v1/chats/${warmChats[w]}/responses`, headers: auth },
    CONCURRENCY,
    WARMUP_S,
  )
  await sleep(2_000)
  const rssBeforeKb = await procStatusKb(pid, 'VmRSS')

  const agent = new Agent({ keepAlive: true, maxSockets: chats.length + 16 })
  const body = JSON.stringify({ model: 'sandbox/echo', input: [{ type: 'prompt', text: STREAM_PROMPT }] })
  let open = 0
  let ended = 0
  let opening = 0
  const waiters: (() => void)[] = []
  const slotFree = () => waiters.shift()?.()
  const started = performance.now()
  let allOpenAt = 0
  const outcomes: Promise<SseOutcome>[] = []
  for (const chatId of chats) {
    while (opening >= OPENING) await new Promise<void>((resolve) => waiters.push(resolve))
    opening++
    let counted = false
    const release = () => {
      if (counted) return
      counted = true
      opening--
      slotFree()
    }
    outcomes.push(
      sse({
        agent,
        url: server.url,
        path: `/api/v1/chats/${chatId}/responses`,
        headers: auth,
        body,
        timeoutMs: 60_000,
        onFrame: (event) => {
          if (event === 'run') {
            open++
            release()
            if (open === chats.length) allOpenAt = performance.now()
          }
          if (event === 'done' || event === 'error') ended++
        },
      }).finally(release),
    )
  }
  // Bounded: every stream must be open well before the first of them ends (about 15 s after it opened).
  const openDeadline = performance.now() + 60_000
  while (open < chats.length && performance.now() < openDeadline && ended === 0) await sleep(50)
  if (open < chats.length) throw new Error(`only ${open} of ${chats.length} streams opened (${ended} already ended)`)
  const openSeconds = (allOpenAt - started) / 1000
  // Sample while every stream is open and none has ended.
  let rssOpenKb = 0
  let openAtSample = 0
  for (let i = 0; i < 10 && ended === 0; i++) {
    await sleep(200)
    if (ended > 0) break
    rssOpenKb = Math.max(rssOpenKb, await procStatusKb(pid, 'VmRSS'))
    openAtSample = open - ended
  }
  if (rssOpenKb === 0) throw new Error('no RSS sample was taken while every stream was open')
  const hwmKb = await procStatusKb(pid, 'VmHWM')
  log(`${chats.length} streams open in ${openSeconds.toFixed(1)} s; server RSS ${fmt(rssOpenKb / 1024, 1)} MiB; waiting for them to end`)

  const results = await Promise.all(outcomes)
  agent.destroy()
  const failed = results.filter((o) => !(o.status === 200 && o.terminal === 'done' && o.counts.delta === 3))
  if (failed.length > 0) throw new Error(`${failed.length} of ${chats.length} streams failed; first: ${describeFailure(failed[0]!)}`)
  await sleep(2_000)
  const rssAfterKb = await procStatusKb(pid, 'VmRSS')
  const firstDelta = new Samples()
  for (const o of results) firstDelta.push(o.firstDeltaMs!)
  return {
    rssBeforeKb,
    rssOpenKb,
    hwmKb,
    rssAfterKb,
    openSeconds,
    openAtSample,
    completed: results.length,
    firstDelta: stats(firstDelta.values()),
  }
}

async function main(): Promise<void> {
  const loadBefore = loadLine()
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-turns-'))
  removeLater(dataDir)

  // Seed through the store before the server starts: an organisation with a key and enough credit
  // for every turn of the run, and every chat the runs below use.
  const db = openDatabase(join(dataDir, 'parley.db'))
  const store = createStore(db)
  const org = store.organisations.create('Benchmark', 'bench')
  const { key } = store.apiKeys.create(org.id, 'bench')
  store.balance.add(org.id, 'topup', '1000000')
  const chats = db.transaction((count: number, namespace: string) =>
    Array.from({ length: count }, (_, i) => store.chats.create({ orgId: org.id, namespace, title: `${namespace} ${i}`, description: null, userMetadata: {} }).id),
  )
  const probeChat = chats(1, 'bench/probe')[0]!
  const warmChats = chats(CONCURRENCY, 'bench/warm')
  const runChats = Array.from({ length: PARLEY_RUNS }, () => chats(CONCURRENCY, 'bench/turns'))
  const latencyChats = chats(LATENCY_CHATS, 'bench/latency')
  const streamWarmChats = chats(CONCURRENCY, 'bench/streams-warm')
  const streamChats = chats(STREAMS, 'bench/streams')
  const longChat = chats(1, 'bench/long')[0]!
  const lorem = 'lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore et dolore magna aliqua'.split(' ')
  const answer = Array.from({ length: DELTAS }, (_, i) => lorem[i % lorem.length]).join(' ')
  // Every prior turn's texts differ (no cache or memo gets them for free), each like a real turn's.
  const pair = (turn: number): PartBody[] => [
    { type: 'prompt', text: `/long ${DELTAS}\nturn ${turn}` },
    { type: 'message', text: `${turn}: ${answer}` },
  ]
  db.transaction(() => {
    for (let i = 0; i < LONG_HISTORY_TURNS; i += 100) {
      store.parts.append(
        longChat,
        Array.from({ length: 100 }, (_, j) => pair(i + j).map((body) => ({ body, tokens: estimatePartTokens(body) }))).flat(),
      )
    }
  })()
  db.close()

  // The durable floor's own database (bench/bare-server.ts writes a turn's rows there with raw statements).
  const floorDir = mkdtempSync(join(tmpdir(), 'parley-bench-floor-'))
  removeLater(floorDir)
  const floorDb = openDatabase(join(floorDir, 'parley.db'))
  const floorStore = createStore(floorDb)
  const floorOrg = floorStore.organisations.create('Floor', 'floor')
  const floorChats = floorDb.transaction(() =>
    Array.from({ length: CONCURRENCY * (PARLEY_RUNS + 2) }, (_, i) =>
      floorStore.chats.create({ orgId: floorOrg.id, namespace: 'floor', title: `floor ${i}`, description: null, userMetadata: {} }).id,
    ),
  )()
  floorDb.close()

  const auth = { authorization: `Bearer ${key}` }
  const [bare, parley] = await Promise.all([
    startServer({ args: ['--import', 'tsx', 'bench/bare-server.ts'], env: { DATA_DIR: floorDir } }),
    startServer({ env: SERVER_ENV(dataDir) }),
  ])
  if (/pk_/.test(parley.stdout())) throw new Error('the server bootstrapped a dev organisation on a seeded database')

  // Probe: one real turn must stream exactly 20 deltas; its frames become the bare route's.
  const probeAgent = new Agent({ keepAlive: true, maxSockets: 1 })
  const probe = await sse({ agent: probeAgent, url: parley.url, path: `/api/v1/chats/${probeChat}/responses`, headers: auth, body: TURN_BODY, keep: true })
  if (!complete(probe)) throw new Error(`probe turn: ${describeFailure(probe)}`)
  const events = probe.frames.map((f) => f.event)
  const put = await fetch(`${bare.url}/sse-frames`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(probe.frames.map((f) => ({ event: f.event, data: JSON.parse(f.data) }))),
  })
  if (!put.ok) throw new Error(`bare route: PUT /sse-frames answered ${put.status}`)
  const bareProbe = await sse({ agent: probeAgent, url: bare.url, path: '/sse', headers: auth, body: TURN_BODY, keep: true })
  probeAgent.destroy()
  if (!complete(bareProbe) || bareProbe.frames.map((f) => f.event).join() !== events.join()) {
    throw new Error(`bare route streams other frames: ${describeFailure(bareProbe)}`)
  }
  log(`probe: ${events.length} frames (${DELTAS} deltas), ${fmt(probe.bytes)} bytes from Parley, ${fmt(bareProbe.bytes)} from the bare route`)

  const bareBurst: Target = { name: 'bare SSE route', url: bare.url, pid: bare.child.pid!, path: () => '/sse', headers: auth }
  const barePaced: Target = { name: 'bare SSE route, paced', url: bare.url, pid: bare.child.pid!, path: () => '/sse?paced=1', headers: auth }
  const durableOn = (round: number): Target => ({
    name: 'durable floor',
    url: bare.url,
    pid: bare.child.pid!,
    path: (w) => `/durable?org=${floorOrg.id}&chat=${floorChats[round * CONCURRENCY + (w % CONCURRENCY)]}`,
    headers: auth,
  })
  const parleyOn = (ids: string[]): Target => ({
    name: 'Parley',
    url: parley.url,
    pid: parley.child.pid!,
    path: (w) => `/api/v1/chats/${ids[w % ids.length]}/responses`,
    headers: auth,
  })

  // Concurrency 1: latency with nothing else in flight, interleaved rounds.
  log(`latency at concurrency 1: ${LATENCY_ROUNDS} rounds of ${LATENCY_TURNS_PER_ROUND} turns per case`)
  const sequentialCases = [
    { name: 'bare SSE route', target: bareBurst },
    { name: 'bare SSE route, paced', target: barePaced },
    { name: `Parley, chats with 0-${LATENCY_ROUNDS * 4} prior turns`, target: parleyOn(latencyChats) },
    { name: `Parley, a chat with ${fmt(LONG_HISTORY_TURNS)}+ prior turns`, target: parleyOn([longChat]) },
  ].map((c) => ({ ...c, samples: { firstDelta: new Samples(), total: new Samples() } }))
  await sequential(bareBurst, 20, { firstDelta: new Samples(), total: new Samples() })
  await sequential(barePaced, 20, { firstDelta: new Samples(), total: new Samples() })
  await sequential(parleyOn(warmChats), 20, { firstDelta: new Samples(), total: new Samples() })
  for (let round = 0; round < LATENCY_ROUNDS; round++) {
    for (const c of sequentialCases) await sequential(c.target, LATENCY_TURNS_PER_ROUND, c.samples)
  }

  // Concurrency 32: the bare routes, then Parley and the bare routes again, PARLEY_RUNS times; each Parley run on 32 fresh chats.
  log(`throughput at concurrency ${CONCURRENCY}: ${WARMUP_S} s warm-up, then ${DURATION_S} s per run`)
  await closedLoop(bareBurst, CONCURRENCY, WARMUP_S)
  await closedLoop(barePaced, CONCURRENCY, WARMUP_S)
  await closedLoop(durableOn(0), CONCURRENCY, WARMUP_S)
  await closedLoop(parleyOn(warmChats), CONCURRENCY, WARMUP_S)
  const burstRuns: LoopResult[] = []
  const pacedRuns: LoopResult[] = []
  const durableRuns: LoopResult[] = []
  const parleyRuns: LoopResult[] = []
  const runBare = async () => {
    // Each durable run on chats of its own, fresh as Parley's are.
    const durable = durableOn(durableRuns.length + 1)
    for (const [target, runs] of [[bareBurst, burstRuns], [barePaced, pacedRuns], [durable, durableRuns]] as const) {
      const r = await closedLoop(target, CONCURRENCY, DURATION_S)
      runs.push(r)
      log(`${target.name}: ${fmt(r.perSecond)} turns/s, first delta p50 ${fmt(r.firstDelta.p50, 2)} ms p99 ${fmt(r.firstDelta.p99, 2)} ms`)
    }
  }
  await runBare()
  for (const ids of runChats) {
    const r = await closedLoop(parleyOn(ids), CONCURRENCY, DURATION_S)
    parleyRuns.push(r)
    log(
      `Parley: ${fmt(r.perSecond)} turns/s (halves ${fmt(r.halves[0])} / ${fmt(r.halves[1])}), first delta p50 ${fmt(r.firstDelta.p50, 2)} ms ` +
        `p99 ${fmt(r.firstDelta.p99, 2)} ms, ${r.conflicts} 409s`,
    )
    await runBare()
  }
  const parleyPid = parley.child.pid!
  const throughputRssKb = await procStatusKb(parleyPid, 'VmRSS')
  await Promise.all([bare.stop(), parley.stop()])

  log(`memory per idle hydrated actor: ${fmt(ACTORS)} actors, in a process of its own`)
  const memory = await actorMemory(ACTORS)

  log(`RSS with ${fmt(STREAMS)} open streams: a fresh server process on the same database`)
  const streamServer = await startServer({ env: SERVER_ENV(dataDir) })
  const streams = await openStreams(streamServer, auth, streamWarmChats, streamChats)
  await streamServer.stop()

  // Figures.
  const ratioTo = (bases: LoopResult[]) => parleyRuns.map((r, i) => r.perSecond / mean([bases[i]!.perSecond, bases[i + 1]!.perSecond]))
  const burstRatios = ratioTo(burstRuns)
  const pacedRatios = ratioTo(pacedRuns)
  const durableRatios = ratioTo(durableRuns)
  const durableRatio = mean(durableRatios)
  const ratio = mean(burstRatios)
  const pacedRatio = mean(pacedRatios)
  const cpuPerTurn = (runs: LoopResult[]) => mean(runs.map((r) => r.serverCpuPerTurnUs))
  const tps = (runs: LoopResult[]) => mean(runs.map((r) => r.perSecond))
  const pooled = (runs: LoopResult[], key: 'p50' | 'p99' | 'mean') => mean(runs.map((r) => r.firstDelta[key]))
  const ms = (n: number) => `${fmt(n, 2)} ms`
  const mib = (kb: number) => `${fmt(kb / 1024, 1)} MiB`
  const kib = (bytes: number) => `${fmt(bytes / 1024, 1)} KiB`
  const fd = (r: LoopResult) => r.firstDelta
  const runRow = (name: string, r: LoopResult, ratios: string) =>
    `| ${name} | ${fmt(r.perSecond)} | ${fmt(r.turns)} | ${ms(fd(r).p50)} | ${ms(fd(r).p99)} | ${ms(r.total.p50)} | ${ms(r.total.p99)} | ` +
    `${fmt(r.serverCpuPerTurnUs)} µs | ${fmt(r.serverCpu, 2)} / ${fmt(r.clientCpu, 2)} | ${ratios} |`

  const throughputTable = [
    '| Run | turns/s | turns | first delta p50 | first delta p99 | whole turn p50 | whole turn p99 | server CPU per turn | CPU server / client | turns/s vs durable floor (vs bare route) |',
    '|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
    ...durableRuns.map((r, i) => runRow(`durable floor, run ${i + 1}`, r, '1.00')),
    ...burstRuns.map((r, i) => runRow(`bare SSE route, run ${i + 1}`, r, '(1.00)')),
    ...pacedRuns.map((r, i) => runRow(`bare SSE route paced, run ${i + 1}`, r, '')),
    ...parleyRuns.map((r, i) => runRow(`Parley, run ${i + 1}`, r, `${durableRatios[i]!.toFixed(3)} (${burstRatios[i]!.toFixed(3)})`)),
  ].join('\n')
  const seq = sequentialCases.map((c) => ({ name: c.name, s: stats(c.samples.firstDelta.values()) }))
  const seqBare = seq[0]!.s
  const latencyTable = [
    '| Concurrency | Route | first delta p50 | first delta p99 | first delta mean | p50 added over the bare route |',
    '|--:|---|--:|--:|--:|--:|',
    ...seq.map(({ name, s: x }, i) => `| 1 | ${name} | ${ms(x.p50)} | ${ms(x.p99)} | ${ms(x.mean)} | ${i === 0 ? '' : ms(x.p50 - seqBare.p50)} |`),
    `| ${CONCURRENCY} | bare SSE route | ${ms(pooled(burstRuns, 'p50'))} | ${ms(pooled(burstRuns, 'p99'))} | ${ms(pooled(burstRuns, 'mean'))} | |`,
    `| ${CONCURRENCY} | bare SSE route, paced | ${ms(pooled(pacedRuns, 'p50'))} | ${ms(pooled(pacedRuns, 'p99'))} | ${ms(pooled(pacedRuns, 'mean'))} | ` +
      `${ms(pooled(pacedRuns, 'p50') - pooled(burstRuns, 'p50'))} |`,
    `| ${CONCURRENCY} | Parley | ${ms(pooled(parleyRuns, 'p50'))} | ${ms(pooled(parleyRuns, 'p99'))} | ${ms(pooled(parleyRuns, 'mean'))} | ` +
      `${ms(pooled(parleyRuns, 'p50') - pooled(burstRuns, 'p50'))} |`,
  ].join('\n')
  const streamsPerKb = (streams.rssOpenKb - streams.rssBeforeKb) / STREAMS
  const memoryTable = [
    '| Measure | Value |',
    '|---|--:|',
    `| heap per idle hydrated actor (\`host.preload\`, no turn; ${fmt(memory.actors!)} actors) | ${kib(memory.perActorPreloaded!)} |`,
    `| heap per idle actor after one sandbox turn each (same ${fmt(memory.actors!)} actors) | ${kib(memory.perActorAfterTurn!)} |`,
    `| heap per idle chat once the host's sweep parked it (persisted snapshot and packing history; aim ≤ 4 KB) | ${kib(memory.perChatParked!)} |`,
    `| server RSS, warmed up, before the streams | ${mib(streams.rssBeforeKb)} |`,
    `| server RSS with ${fmt(STREAMS)} streams open (max of samples) | ${mib(streams.rssOpenKb)} |`,
    `| RSS per open stream | ${kib(streamsPerKb * 1024)} |`,
    `| server peak RSS (VmHWM) by then | ${mib(streams.hwmKb)} |`,
    `| server RSS 2 s after every stream ended | ${mib(streams.rssAfterKb)} |`,
  ].join('\n')
  process.stdout.write(`${throughputTable}\n\n${latencyTable}\n\n${memoryTable}\n`)

  // Issue 34: at least 0.67× the durable floor's turns/s in the same run.
  const aimMet = durableRatio >= 0.67
  const longCase = seq[3]!.s
  const shortCase = seq[2]!.s
  const section = [
    ...sectionHead('Turns: streamed sandbox turns, actors and open streams (issue 5)', 'bench/turns.ts', loadBefore),
    `- **Load**: closed loop over real HTTP (node:http keep-alive agent, loopback), frames parsed with eventsource-parser;`,
    `  ${CONCURRENCY} connections, each looping turns on its own chat (one running run per chat), ${WARMUP_S} s warm-up per side,`,
    `  then ${DURATION_S} s per run: the floors (bare route, paced, durable), then Parley and the floors again, ${PARLEY_RUNS} times. Each Parley run uses ${CONCURRENCY} fresh chats.`,
    '',
    `### Throughput at concurrency ${CONCURRENCY}`,
    '',
    throughputTable,
    '',
    `- **Result**: Parley ${fmt(tps(parleyRuns))} turns/s against the durable floor's ${fmt(tps(durableRuns))}: **${durableRatio.toFixed(3)}×**. Aim ≥ 0.67× (issue 34): **${aimMet ? 'met' : 'missed'}**.`,
    `  Against the bare route (${fmt(tps(burstRuns))} turns/s, paced ${fmt(tps(pacedRuns))}): ${ratio.toFixed(3)}× (${pacedRatio.toFixed(3)}× the paced route).`,
    '  Each ratio is to the mean of the same floor\'s runs just before and after it.',
    `- Server CPU per turn (from \`/proc/<pid>/stat\`, less sensitive to the machine's other load than turns/s): Parley ` +
      `${fmt(cpuPerTurn(parleyRuns))} µs, the durable floor ${fmt(cpuPerTurn(durableRuns))} µs, the bare route ${fmt(cpuPerTurn(burstRuns))} µs (paced ${fmt(cpuPerTurn(pacedRuns))} µs): ` +
      `${(cpuPerTurn(durableRuns) / cpuPerTurn(parleyRuns)).toFixed(3)}× the floor in the ratio's terms. "CPU server / client" is each process's CPU use over the`,
    '  run (1.00 = one core busy); the machine has ' + `${cpus().length} cores shared by the client, the server and anything else running.`,
    `- Within each Parley run, turns/s over the first and second half: ${parleyRuns.map((r) => `${fmt(r.halves[0])} → ${fmt(r.halves[1])}`).join('; ')}` +
      ` (~${fmt(parleyRuns[0]!.turns / CONCURRENCY)} turns per chat by the end of a run; packing keeps each part's rendering, converted item and estimate between turns, so a turn pays a lookup per part sent).`,
    `- 409 \`run_in_progress\` answers (a chat's next turn arriving before its actor was idle again): ${parleyRuns.map((r) => r.conflicts).join(', ')}.`,
    '',
    '### Latency to the first delta',
    '',
    latencyTable,
    '',
    `- From the request being sent to the first \`delta\` frame received, as the client sees it. Concurrency 1: ${LATENCY_ROUNDS} interleaved rounds of`,
    `  ${LATENCY_TURNS_PER_ROUND} sequential turns per case (the short-history case spread over ${LATENCY_CHATS} chats). Concurrency ${CONCURRENCY}: from the`,
    "  throughput runs (means of the runs' percentiles).",
    '- "p50 added over the bare route" is the server-added latency: admission (validation, configuration, packing, the transaction',
    '  writing the input, the run and its idempotency record), the actor and the provider call, before the first byte of the answer.',
    '  Parley\'s whole turn ends two group commits after its first delta: `block_stop` waits for its part\'s commit, `done` for the settlement\'s.',
    `- History: the same turn on a chat with ${fmt(LONG_HISTORY_TURNS)} prior turns (${fmt(2 * LONG_HISTORY_TURNS)} parts, seeded through the store) takes ` +
      `${ms(longCase.p50)} to its first delta against ${ms(shortCase.p50)} on short chats (p50),`,
    `  ${fmt(((longCase.p50 - shortCase.p50) / LONG_HISTORY_TURNS) * 1000, 1)} µs more per prior turn: the whole history fits the 128k window, so every part is sent and packing walks it; each part\'s rendering, converted item and estimate are kept between turns, so a part already sent costs a lookup, not a tokenization (decision 012).`,
    '',
    '### Memory',
    '',
    memoryTable,
    '',
    `- Actors: \`bench/actor-memory.ts\` builds the host as \`src/main.ts\` does (\`composeApp\`) over a real SQLite file, in a process of its own with`,
    `  \`--expose-gc\`; after warming up on 200 other chats it hydrates ${fmt(memory.actors!)} chats' actors with \`host.preload(chatId)\`, and then runs one`,
    '  `hello` turn on each (`host.submit`, awaiting the run\'s settlement). Figures are `heapUsed` after full collections, less the same before, over',
    `  the number of actors. Hydration took ${fmt(memory.preloadUsPerActor!, 1)} µs per actor; the turns ran at ${fmt(memory.turnsPerSecondInProcess!)} turns/s in-process (50 at a time).`,
    `- Streams: a fresh server process on the same database, warmed up with ${WARMUP_S} s of ordinary turns, then ${fmt(STREAMS)} chats each given a`,
    `  \`${STREAM_PROMPT.replace('\n', '\\n')}\` turn (three deltas 5 s apart, ~15 s open), opened ${OPENING} at a time: all ${fmt(STREAMS)} were open after`,
    `  ${streams.openSeconds.toFixed(1)} s and ${fmt(streams.openAtSample)} were open when RSS was last sampled. VmRSS is read from \`/proc/<pid>/status\`. All ${fmt(streams.completed)}`,
    `  streams then ended with their 3 deltas and \`done\` (first delta p50 ${fmt(streams.firstDelta.p50 / 1000, 2)} s, p99 ${fmt(streams.firstDelta.p99 / 1000, 2)} s after the request).`,
    `- For scale: the throughput server's RSS after its runs was ${mib(throughputRssKb)}.`,
    '- Each open stream holds a socket, the run\'s channel (frames are kept until the run ends), an actor in `streaming`, a',
    '  sandbox timer and a 15 s heartbeat timer.',
    '',
    '### Setup',
    '',
    `- Parley: \`node src/main.ts\`, \`LOG_LEVEL=warn\`, \`MAX_RUNNING_RUNS_PER_ORG\`, \`MAX_CONCURRENT_TURNS\` and \`SHED_FROM_TURNS\` at ${CAPS_OUT_OF_THE_WAY} (so no admission cap of decision 033 refuses a measured turn or stream), fresh \`DATA_DIR\`, seeded through the store first (one organisation, an`,
    `  API key, 1,000,000 USD of credit, and every chat). Turn: \`POST /api/v1/chats/{id}/responses\` with \`${TURN_BODY}\`; the probe turn checked it`,
    `  streams exactly ${DELTAS} \`delta\` frames (${events.length} frames: ${[...new Set(events)].join(', ')}; ${fmt(probe.bytes)} bytes).`,
    '- Bare route: `POST /sse` of `bench/bare-server.ts` (Fastify, no plugins, own process) writes the probe turn\'s own frames, same',
    `  event names and sizes (${fmt(bareProbe.bytes)} bytes), with the same headers and one write call per frame (\`src/http/sse/write-run-stream.ts\` joins the frames of one tick into one write);`,
    '  it receives the same request body. It writes all frames in one go; the paced variant (`POST /sse?paced=1`) yields to the event loop',
    '  before each frame, so each goes out on its own, as frames relayed from a provider stream do.',
    '- Durable floor (the aim is judged against it): `POST /durable` of the same process, on its own database with Parley\'s schema',
    '  (migrations through `openDatabase`, WAL): per turn one transaction writes the input part, the run and the chat\'s counter before',
    '  the first byte; the answer\'s frames go out; after one tick a second transaction writes the answer part, the run\'s end and cost,',
    '  the balance entry, the organisation\'s total and the hourly roll-up; then `done`. Raw prepared statements, no group commit, no cache.',
  ].join('\n')
  writeSection(join(REPO_ROOT, 'BENCHMARKS.md'), 'turns', section)
  log('wrote BENCHMARKS.md (section "turns")')
}

runMain(main, cleanup)
