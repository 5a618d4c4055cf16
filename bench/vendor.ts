/**
 * `npm run bench -- vendor` (issue 34): what Parley costs on a vendor turn beside a bare relay of
 * the same vendor stream, in two wire formats, OpenAI Responses (`openai/gpt-5`) and Anthropic
 * Messages (`anthropic/claude-haiku-4.5`). Three processes besides this client, each its own:
 *
 * - the upstream (bench/vendor-upstream.ts), a bench double of both vendors streaming the recorded
 *   answers of test/e2e/vendor-fixtures widened to 20 text deltas, all at once;
 * - the relay floor (bench/vendor-relay.ts), a bench double of a stateless gateway at its thinnest:
 *   node:http, fetch to the upstream, the body piped back unchanged;
 * - Parley (`src/main.ts`) with both vendors' base URLs on the upstream, a seeded organisation and key.
 *
 * Measured, for each format, in interleaved rounds (relay, Parley, relay, Parley, ...):
 * - server CPU per turn at concurrency 16 (closed loop, each connection on its own chat, a fresh one
 *   every BENCH_TURNS_PER_CHAT turns, default 20, so Parley's requests stay the relay's size), from the
 *   process's utime + stime in /proc/PID/stat over the run, divided by the turns it completed;
 * - time to the first text delta at concurrency 1 (p50 per round) calling the upstream directly,
 *   through the relay and through Parley.
 * Figures are medians over the rounds; the relay's are the floor Parley is held to.
 *
 * Environment: BENCH_DURATION (seconds per c=16 run, default 8), BENCH_WARMUP (seconds, default 2),
 * BENCH_ROUNDS (default 3), BENCH_ITERATIONS (c=1 turns per case and round, default 100),
 * BENCH_VENDOR_PROFILE=1 (also profile Parley on one c=16 run per format with --cpu-prof),
 * BENCH_VENDOR_PACKAGE=1 (also a second Parley, on its own seeded database, with its thin vendor
 * path off, VENDOR_THIN_STREAMS=0, measured in each round, after the first Parley in odd rounds and
 * before it in even ones: the AI SDK package path beside the thin one, decision 050).
 */
import { mkdtempSync, readdirSync } from 'node:fs'
import { Agent } from 'node:http'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase } from '../src/store/database.ts'
import { createStore } from '../src/store/index.ts'
import { REPO_ROOT, startServer, type ServerProcess } from '../test/e2e/server-process.ts'
import { writeSection } from './benchmarks-file.ts'
import { monotonicUs, summariseProfile, type ProfileSummary } from './cpu-profile.ts'
import { envNumber, fmt, installCleanup, loadLine, log, procCpuSeconds, runMain, Samples, sectionHead, stats, type Stats } from './lib.ts'
import { sse, type SseOutcome } from './sse-client.ts'

const DURATION_S = envNumber('BENCH_DURATION', 8)
const WARMUP_S = envNumber('BENCH_WARMUP', 2)
const ROUNDS = Math.trunc(envNumber('BENCH_ROUNDS', 3))
const LATENCY_TURNS = Math.trunc(envNumber('BENCH_ITERATIONS', 100))
const PROFILE = process.env.BENCH_VENDOR_PROFILE === '1'
/** Also run Parley with its thin vendor path off (VENDOR_THIN_STREAMS=0, decision 050) in each round: the package path beside it. */
const PACKAGE_PATH = process.env.BENCH_VENDOR_PACKAGE === '1'
const CONCURRENCY = 16
const DELTAS = 20
/** Parley's c=1 turns go round these chats, so no one chat's history grows long. */
const LATENCY_CHATS = 10
/**
 * Parley's c=16 turns move to a fresh chat every this many turns, so its vendor requests stay the
 * size of the relay's (a chat's history is sent whole each turn): the relay sends the request of a
 * chat's turn TURNS_PER_CHAT / 2, the middle of Parley's. Without it a chat grew through a run to
 * 100 turns and more, and Parley's requests to 2 or 3 times the relay's.
 */
const TURNS_PER_CHAT = Math.trunc(envNumber('BENCH_TURNS_PER_CHAT', 20))
/** Chats seeded per c=16 run: enough for CONCURRENCY connections at 600 turns/s for BENCH_DURATION. */
const RUN_CHATS = CONCURRENCY * Math.ceil((600 * DURATION_S) / CONCURRENCY / TURNS_PER_CHAT + 1)
const PROFILE_TOP = 25
const PROMPT = 'Name the capital of Norway.'

/** One vendor wire format: the model Parley is asked for, and how its stream reads when called directly. */
type Format = { key: string; title: string; model: string; path: string; deltaEvent: string; doneEvent: string; auth: Record<string, string> }

const FORMATS: Format[] = [
  {
    key: 'openai',
    title: 'OpenAI Responses',
    model: 'openai/gpt-5',
    path: '/v1/responses',
    deltaEvent: 'response.output_text.delta',
    doneEvent: 'response.completed',
    auth: { authorization: 'Bearer sk-bench-openai' },
  },
  {
    key: 'anthropic',
    title: 'Anthropic Messages',
    model: 'anthropic/claude-haiku-4.5',
    path: '/v1/messages',
    deltaEvent: 'content_block_delta',
    doneEvent: 'message_stop',
    auth: { 'x-api-key': 'sk-ant-bench', 'anthropic-version': '2023-06-01' },
  },
]

const { removeLater, cleanup } = installCleanup()

/** The chats one format's turns go to through Parley. */
type FormatChats = { probe: string; warm: string[]; body: string; runs: string[][]; latency: string[]; profile: string[] }

/** Where a turn goes and how its stream reads. */
type Target = {
  name: string
  url: string
  pid: number
  /** Where the `turn`-th turn of connection `worker` goes. */
  path: (worker: number, turn: number) => string
  headers: Record<string, string>
  body: string
  deltaEvent: string
  doneEvent: string
}

type LoopResult = { turns: number; perSecond: number; firstDelta: Stats; cpuPerTurnUs: number; upstreamCpuPerTurnUs: number; clientCpu: number }

const complete = (t: Target, o: SseOutcome) => o.status === 200 && o.terminal === 'done' && o.counts[t.deltaEvent] === DELTAS

const describeFailure = (o: SseOutcome) => `status ${o.status}, terminal ${o.terminal}, frames ${JSON.stringify(o.counts)}, body ${o.body.slice(0, 300)}`

const turnOf = (t: Target, agent: Agent, worker: number, turn = 0) =>
  sse({ agent, url: t.url, path: t.path(worker, turn), headers: t.headers, body: t.body, deltaEvent: t.deltaEvent, doneEvent: t.doneEvent, timeoutMs: 30_000 })

/**
 * Closed loop: `concurrency` keep-alive connections, each sending its next turn when the last one's
 * stream has ended. CPU is read from /proc for the target's process and the upstream's around the run.
 */
async function closedLoop(target: Target, upstreamPid: number, concurrency: number, seconds: number): Promise<LoopResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency })
  const firstDelta = new Samples()
  let failures = 0
  let lastFailure = ''
  const [cpuBefore, upstreamBefore] = await Promise.all([procCpuSeconds(target.pid), procCpuSeconds(upstreamPid)])
  const clientBefore = process.cpuUsage()
  const start = performance.now()
  const deadline = start + seconds * 1000
  await Promise.all(
    Array.from({ length: concurrency }, async (_, worker) => {
      for (let turn = 0; performance.now() < deadline && failures <= 20; turn++) {
        const o = await turnOf(target, agent, worker, turn)
        if (complete(target, o)) firstDelta.push(o.firstDeltaMs!)
        else {
          failures++
          lastFailure = describeFailure(o)
        }
      }
    }),
  )
  const elapsed = (performance.now() - start) / 1000
  const [cpuAfter, upstreamAfter] = await Promise.all([procCpuSeconds(target.pid), procCpuSeconds(upstreamPid)])
  const client = process.cpuUsage(clientBefore)
  agent.destroy()
  // A refused or broken turn is not a cheaper turn: any failure voids the run.
  if (failures > 0) throw new Error(`${target.name}: ${failures} failed turns; last: ${lastFailure}`)
  const turns = firstDelta.length
  return {
    turns,
    perSecond: turns / elapsed,
    firstDelta: stats(firstDelta.values()),
    cpuPerTurnUs: ((cpuAfter - cpuBefore) * 1e6) / turns,
    upstreamCpuPerTurnUs: ((upstreamAfter - upstreamBefore) * 1e6) / turns,
    clientCpu: (client.user + client.system) / 1e6 / elapsed,
  }
}

/** Sequential turns (concurrency 1): ms to the first delta with nothing else in flight. */
async function sequential(target: Target, turns: number): Promise<Stats> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  const firstDelta = new Samples()
  for (let i = 0; i < turns; i++) {
    const o = await turnOf(target, agent, i)
    if (!complete(target, o)) throw new Error(`${target.name}: ${describeFailure(o)}`)
    firstDelta.push(o.firstDeltaMs!)
  }
  agent.destroy()
  return stats(firstDelta.values())
}

/** Seeds an organisation with a key and credit for every turn, and the chats each format's runs use. */
function seed(dataDir: string) {
  const db = openDatabase(join(dataDir, 'parley.db'))
  const store = createStore(db)
  const org = store.organisations.create('Benchmark', 'bench')
  const { key } = store.apiKeys.create(org.id, 'bench')
  store.balance.add(org.id, 'topup', '1000000')
  const chats = db.transaction((count: number, namespace: string) =>
    Array.from({ length: count }, (_, i) => store.chats.create({ orgId: org.id, namespace, title: `${namespace} ${i}`, description: null, userMetadata: {} }).id),
  )
  const perFormat = (f: Format): FormatChats => ({
    probe: chats(1, `bench/${f.key}/probe`)[0]!,
    warm: chats(RUN_CHATS, `bench/${f.key}/warm`),
    body: chats(1, `bench/${f.key}/body`)[0]!,
    runs: Array.from({ length: ROUNDS }, (_, r) => chats(RUN_CHATS, `bench/${f.key}/run-${r}`)),
    latency: chats(LATENCY_CHATS, `bench/${f.key}/latency`),
    profile: chats(2 * RUN_CHATS, `bench/${f.key}/profile`),
  })
  const byFormat = new Map(FORMATS.map((f) => [f.key, perFormat(f)]))
  db.close()
  return { key, byFormat }
}

/** Parley's environment: both vendors on the upstream double, no retries, caps out of the way. */
function parleyEnv(dataDir: string, upstream: ServerProcess): Record<string, string> {
  return {
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    OPENAI_API_KEY: 'sk-bench-openai',
    ANTHROPIC_API_KEY: 'sk-ant-bench',
    OPENAI_BASE_URL: `${upstream.url}/v1`,
    ANTHROPIC_BASE_URL: `${upstream.url}/v1`,
    VENDOR_MAX_RETRIES: '0',
    // The bench measures a turn's cost, not admission (decision 033): a run settling a little after
    // its stream's `done`, or a late loop on this shared machine, must not turn a measured turn
    // into a 429 or 503.
    MAX_RUNNING_RUNS_PER_ORG: '4096',
    MAX_CONCURRENT_TURNS: '4096',
    SHED_FROM_TURNS: '4096',
  }
}

const upstreamStats = async (upstream: ServerProcess) =>
  (await (await fetch(`${upstream.url}/stats`)).json()) as Record<string, { requests: number; bytes: number }>

/** The last vendor request the upstream received at the format's path, as sent. */
async function lastVendorRequest(f: Format, upstream: ServerProcess): Promise<string> {
  const last = await fetch(`${upstream.url}/last-request?path=${encodeURIComponent(f.path)}`)
  if (!last.ok) throw new Error(`${f.title}: the upstream saw no request at ${f.path}`)
  return last.text()
}

/** One turn through Parley must stream all its deltas to `done` before anything is measured. */
async function probe(f: Format, parley: Target, upstream: ServerProcess): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  const o = await turnOf(parley, agent, 0)
  agent.destroy()
  if (!complete(parley, o)) throw new Error(`${f.title} probe turn through Parley: ${describeFailure(o)}`)
  log(`${f.title}: probe turn through Parley streamed ${o.counts.delta} deltas; its vendor request was ${fmt(Buffer.byteLength(await lastVendorRequest(f, upstream)))} bytes`)
}

type Servers = { upstream: ServerProcess; relay: ServerProcess; parley: ServerProcess; packagePath: { server: ServerProcess; byFormat: Map<string, FormatChats>; auth: Record<string, string> } | null }
type Targets = { direct: Target; relay: Target; parley: (chats: string[]) => Target }

function targetsFor(f: Format, s: Servers, vendorBody: string, auth: Record<string, string>): Targets {
  const vendor = (name: string, server: ServerProcess): Target => ({
    name: `${name} (${f.title})`,
    url: server.url,
    pid: server.child.pid!,
    path: () => f.path,
    headers: f.auth,
    body: vendorBody,
    deltaEvent: f.deltaEvent,
    doneEvent: f.doneEvent,
  })
  return {
    direct: vendor('upstream directly', s.upstream),
    relay: vendor('relay', s.relay),
    parley: (chats) => ({
      name: `Parley (${f.title})`,
      url: s.parley.url,
      pid: s.parley.child.pid!,
      path: (worker, turn) => {
        const next = worker + CONCURRENCY * Math.floor(turn / TURNS_PER_CHAT)
        if (chats.length > CONCURRENCY && next >= chats.length) throw new Error(`more turns than the ${chats.length} seeded chats hold at ${TURNS_PER_CHAT} a chat`)
        return `/api/v1/chats/${chats[next % chats.length]}/responses`
      },
      headers: auth,
      body: JSON.stringify({ model: f.model, input: [{ type: 'prompt', text: PROMPT }] }),
      deltaEvent: 'delta',
      doneEvent: 'done',
    }),
  }
}

type FormatResults = {
  format: Format
  vendorBodyBytes: number
  latency: { direct: Stats[]; relay: Stats[]; parley: Stats[]; packagePath: Stats[] }
  loops: { relay: LoopResult[]; parley: LoopResult[]; packagePath: LoopResult[] }
  /** Mean bytes of Parley's vendor request in each c=16 run (the chats' history grows through a run). */
  parleyRequestBytes: number[]
  profile: ProfileSummary | null
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

/** One c=16 Parley run, with the mean size of the vendor requests it made. */
async function parleyLoop(target: Target, f: Format, s: Servers): Promise<{ result: LoopResult; requestBytes: number }> {
  const before = (await upstreamStats(s.upstream))[f.path]!
  const result = await closedLoop(target, s.upstream.child.pid!, CONCURRENCY, DURATION_S)
  const after = (await upstreamStats(s.upstream))[f.path]!
  return { result, requestBytes: (after.bytes - before.bytes) / (after.requests - before.requests) }
}

/**
 * Profiles Parley on one c=16 run of `f`: a fresh server process on the same database, started with
 * --cpu-prof, warmed up, run, stopped (the profile is written as it exits). Only the run's samples
 * are summed: start-up (module compilation) and warm-up would otherwise crowd the list.
 */
async function profileRun(f: Format, dataDir: string, s: Servers, chats: string[], vendorBody: string, auth: Record<string, string>): Promise<ProfileSummary> {
  const dir = mkdtempSync(join(tmpdir(), `parley-bench-vendor-prof-${f.key}-`))
  removeLater(dir)
  const profiled = await startServer({ args: ['--cpu-prof', `--cpu-prof-dir=${dir}`, 'src/main.ts'], env: parleyEnv(dataDir, s.upstream) })
  const targets = targetsFor(f, { ...s, parley: profiled }, vendorBody, auth)
  await closedLoop(targets.parley(chats.slice(0, RUN_CHATS)), s.upstream.child.pid!, CONCURRENCY, WARMUP_S)
  const fromUs = monotonicUs()
  const r = await closedLoop(targets.parley(chats.slice(RUN_CHATS)), s.upstream.child.pid!, CONCURRENCY, DURATION_S)
  const toUs = monotonicUs()
  log(`${f.title}: profiled run ${fmt(r.perSecond)} turns/s, ${fmt(r.cpuPerTurnUs)} µs CPU per turn (with the profiler's own cost)`)
  await profiled.stop()
  const file = readdirSync(dir).find((name) => name.endsWith('.cpuprofile'))
  if (!file) throw new Error(`no .cpuprofile in ${dir}: did the server exit cleanly?`)
  return summariseProfile(join(dir, file), PROFILE_TOP, { fromUs, toUs })
}

async function measureFormat(f: Format, s: Servers, chats: FormatChats, auth: Record<string, string>) {
  const upstreamPid = s.upstream.child.pid!
  const parley = targetsFor(f, s, '', auth).parley
  await probe(f, parley([chats.probe]), s.upstream)

  // Warm-up: every path's code optimised and connections pooled before anything is counted. Parley
  // goes first: the last vendor request of its warm-up, from a chat with some history, is the body
  // the relay and the direct calls then send, so they move a request like the ones Parley sends.
  await sequential(parley(chats.warm), 20)
  await closedLoop(parley(chats.warm), upstreamPid, CONCURRENCY, WARMUP_S)
  // The relay's body: the request of a chat's turn TURNS_PER_CHAT / 2, the middle of Parley's chats.
  await sequential(parley([chats.body]), Math.max(1, Math.round(TURNS_PER_CHAT / 2)))
  const vendorBody = await lastVendorRequest(f, s.upstream)
  const t = targetsFor(f, s, vendorBody, auth)
  log(`${f.title}: the relay and direct calls send Parley's vendor request of a chat's turn ${Math.max(1, Math.round(TURNS_PER_CHAT / 2))}, ${fmt(Buffer.byteLength(vendorBody))} bytes`)
  for (const target of [t.direct, t.relay]) {
    await sequential(target, 20)
    await closedLoop(target, upstreamPid, CONCURRENCY, WARMUP_S)
  }
  const pkg = s.packagePath
  const pkgChats = pkg ? pkg.byFormat.get(f.key)! : null
  const packageParley = pkg ? targetsFor(f, { ...s, parley: pkg.server }, '', pkg.auth).parley : null
  if (packageParley && pkgChats) {
    await sequential(packageParley(pkgChats.warm), 20)
    await closedLoop(packageParley(pkgChats.warm), upstreamPid, CONCURRENCY, WARMUP_S)
  }

  const results: FormatResults = {
    format: f,
    vendorBodyBytes: Buffer.byteLength(vendorBody),
    latency: { direct: [], relay: [], parley: [], packagePath: [] },
    loops: { relay: [], parley: [], packagePath: [] },
    parleyRequestBytes: [],
    profile: null,
  }
  for (let round = 0; round < ROUNDS; round++) {
    // The package path (BENCH_VENDOR_PACKAGE=1) runs after the thin path's runs in odd rounds and
    // before them in even ones, so neither always has the other's leftovers.
    const packageFirst = round % 2 === 1
    const packageRun = async () => {
      if (!packageParley || !pkgChats) return
      results.latency.packagePath.push(await sequential(packageParley(pkgChats.latency), LATENCY_TURNS))
      const loop = await closedLoop(packageParley(pkgChats.runs[round]!), upstreamPid, CONCURRENCY, DURATION_S)
      results.loops.packagePath.push(loop)
      log(
        `${f.title} round ${round + 1}, package path (VENDOR_THIN_STREAMS=0, ${packageFirst ? 'first' : 'last'}): c=1 first delta p50 ${fmt(results.latency.packagePath[round]!.p50, 2)} ms; ` +
          `c=16 CPU per turn ${fmt(loop.cpuPerTurnUs)} µs (${fmt(loop.perSecond)} turns/s)`,
      )
    }
    if (packageFirst) await packageRun()
    for (const [kind, target] of [['direct', t.direct], ['relay', t.relay], ['parley', t.parley(chats.latency)]] as const) {
      results.latency[kind].push(await sequential(target, LATENCY_TURNS))
    }
    const relay = await closedLoop(t.relay, upstreamPid, CONCURRENCY, DURATION_S)
    const { result: parley, requestBytes } = await parleyLoop(t.parley(chats.runs[round]!), f, s)
    results.loops.relay.push(relay)
    results.loops.parley.push(parley)
    results.parleyRequestBytes.push(requestBytes)
    const [d, r, p] = (['direct', 'relay', 'parley'] as const).map((k) => results.latency[k][round]!.p50)
    log(
      `${f.title} round ${round + 1}: c=1 first delta p50 direct ${fmt(d!, 2)} / relay ${fmt(r!, 2)} / Parley ${fmt(p!, 2)} ms; ` +
        `c=16 CPU per turn relay ${fmt(relay.cpuPerTurnUs)} µs (${fmt(relay.perSecond)} turns/s), Parley ${fmt(parley.cpuPerTurnUs)} µs (${fmt(parley.perSecond)} turns/s)`,
    )
    if (!packageFirst) await packageRun()
  }
  return { results, vendorBody }
}

const ms = (n: number) => `${fmt(n, 2)} ms`
const us = (n: number) => `${fmt(n)} µs`

function cpuTable(r: FormatResults): string {
  const rows = r.loops.parley.map((p, i) => {
    const relay = r.loops.relay[i]!
    return (
      `| ${i + 1} | ${us(relay.cpuPerTurnUs)} | ${us(p.cpuPerTurnUs)} | ${(p.cpuPerTurnUs / relay.cpuPerTurnUs).toFixed(2)} | ` +
      `${fmt(relay.perSecond)} / ${fmt(p.perSecond)} | ${ms(relay.firstDelta.p50)} / ${ms(p.firstDelta.p50)} | ${us(relay.upstreamCpuPerTurnUs)} / ${us(p.upstreamCpuPerTurnUs)} | ${fmt(r.parleyRequestBytes[i]!)} |`
    )
  })
  return [
    '| Round | relay CPU per turn | Parley CPU per turn | Parley ÷ relay | turns/s relay / Parley | first delta p50 relay / Parley | upstream CPU per turn (relay run / Parley run) | Parley vendor request, mean bytes |',
    '|--:|--:|--:|--:|--:|--:|--:|--:|',
    ...rows,
  ].join('\n')
}

/** The thin path beside the package path, round by round (BENCH_VENDOR_PACKAGE=1). */
function packageTable(r: FormatResults): string {
  const rows = r.loops.packagePath.map((pkg, i) => {
    const thin = r.loops.parley[i]!
    const relay = r.loops.relay[i]!
    return (
      `| ${i + 1} | ${us(thin.cpuPerTurnUs)} | ${us(pkg.cpuPerTurnUs)} | ${us(pkg.cpuPerTurnUs - thin.cpuPerTurnUs)} | ${(pkg.cpuPerTurnUs / relay.cpuPerTurnUs).toFixed(2)} | ` +
      `${ms(r.latency.parley[i]!.p50)} / ${ms(r.latency.packagePath[i]!.p50)} |`
    )
  })
  const saved = median(r.loops.packagePath.map((pkg, i) => pkg.cpuPerTurnUs - r.loops.parley[i]!.cpuPerTurnUs))
  const later = median(r.latency.packagePath.map((pkg, i) => pkg.p50 - r.latency.parley[i]!.p50))
  return [
    '| Round | Parley CPU per turn, thin path | package path (`VENDOR_THIN_STREAMS=0`) | package − thin | package path ÷ relay | first delta p50 c=1, thin / package |',
    '|--:|--:|--:|--:|--:|--:|',
    ...rows,
    `| median | | | **${us(saved)}** | | package − thin: ${ms(later)} |`,
  ].join('\n')
}

function latencyTable(r: FormatResults): string {
  const row = (name: string, runs: Stats[], floor: Stats[] | null) =>
    `| ${name} | ${runs.map((x) => ms(x.p50)).join(' / ')} | ${ms(median(runs.map((x) => x.p50)))} | ${ms(median(runs.map((x) => x.p99)))} | ` +
    `${floor ? ms(median(runs.map((x, i) => x.p50 - floor[i]!.p50))) : ''} |`
  return [
    '| Path | p50 per round | median p50 | median p99 | added over the relay (median of per-round p50 differences) |',
    '|---|--:|--:|--:|--:|',
    row('upstream directly', r.latency.direct, null),
    row('relay', r.latency.relay, null),
    row('Parley', r.latency.parley, r.latency.relay),
  ].join('\n')
}

function profileTables(p: ProfileSummary, top: number): string {
  const pct = (share: number) => `${(share * 100).toFixed(1)}%`
  return [
    `Sampled ${fmt(p.totalMs)} ms, ${fmt(p.busyMs)} ms of it not idle; shares are of the busy time.`,
    '',
    '| Package or file | self time | share |',
    '|---|--:|--:|',
    ...p.groups.slice(0, top).map((g) => `| ${g.name} | ${fmt(g.ms)} ms | ${pct(g.share)} |`),
    '',
    '| Function | package or file | self time | share |',
    '|---|---|--:|--:|',
    ...p.functions.slice(0, top).map((fn) => `| \`${fn.name}\` ${fn.where} | ${fn.group} | ${fmt(fn.ms)} ms | ${pct(fn.share)} |`),
  ].join('\n')
}

/** The figures the issue judges, per format: medians over the rounds of interleaved pairs. */
function verdict(r: FormatResults) {
  const cpuRatio = median(r.loops.parley.map((p, i) => p.cpuPerTurnUs / r.loops.relay[i]!.cpuPerTurnUs))
  const addedMs = median(r.latency.parley.map((p, i) => p.p50 - r.latency.relay[i]!.p50))
  return {
    cpuRatio,
    addedMs,
    relayCpu: median(r.loops.relay.map((x) => x.cpuPerTurnUs)),
    parleyCpu: median(r.loops.parley.map((x) => x.cpuPerTurnUs)),
    directP50: median(r.latency.direct.map((x) => x.p50)),
    relayP50: median(r.latency.relay.map((x) => x.p50)),
    parleyP50: median(r.latency.parley.map((x) => x.p50)),
  }
}

function printProfile(f: Format, p: ProfileSummary): void {
  process.stdout.write(`\n${f.title}: Parley's top ${PROFILE_TOP} self-time functions at c=${CONCURRENCY}\n`)
  for (const fn of p.functions) process.stdout.write(`${(fn.share * 100).toFixed(1).padStart(5)}%  ${fmt(fn.ms).padStart(6)} ms  ${fn.group.padEnd(36)} ${fn.name} ${fn.where}\n`)
  process.stdout.write(`by package or file:\n`)
  for (const g of p.groups) process.stdout.write(`${(g.share * 100).toFixed(1).padStart(5)}%  ${fmt(g.ms).padStart(6)} ms  ${g.name}\n`)
}

async function main(): Promise<void> {
  const loadBefore = loadLine()
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-vendor-'))
  removeLater(dataDir)
  const { key, byFormat } = seed(dataDir)
  const auth = { authorization: `Bearer ${key}` }
  const packageDir = PACKAGE_PATH ? mkdtempSync(join(tmpdir(), 'parley-bench-vendor-package-')) : null
  if (packageDir) removeLater(packageDir)
  const packageSeed = packageDir ? seed(packageDir) : null

  const upstream = await startServer({ args: ['--import', 'tsx', 'bench/vendor-upstream.ts'] })
  const [relay, parley] = await Promise.all([
    startServer({ args: ['--import', 'tsx', 'bench/vendor-relay.ts'], env: { UPSTREAM_URL: upstream.url } }),
    startServer({ env: parleyEnv(dataDir, upstream) }),
  ])
  if (/pk_/.test(parley.stdout())) throw new Error('the server bootstrapped a dev organisation on a seeded database')
  const packageServer = packageDir ? await startServer({ env: { ...parleyEnv(packageDir, upstream), VENDOR_THIN_STREAMS: '0' } }) : null
  const servers: Servers = {
    upstream,
    relay,
    parley,
    packagePath: packageServer && packageSeed ? { server: packageServer, byFormat: packageSeed.byFormat, auth: { authorization: `Bearer ${packageSeed.key}` } } : null,
  }

  const all: FormatResults[] = []
  const vendorBodies = new Map<string, string>()
  for (const f of FORMATS) {
    log(`${f.title}: ${ROUNDS} rounds of ${LATENCY_TURNS} turns at c=1 per path and ${DURATION_S} s at c=${CONCURRENCY} per server`)
    const { results, vendorBody } = await measureFormat(f, servers, byFormat.get(f.key)!, auth)
    all.push(results)
    vendorBodies.set(f.key, vendorBody)
  }
  await Promise.all([relay.stop(), parley.stop(), packageServer?.stop()])

  if (PROFILE) {
    for (const r of all) {
      log(`${r.format.title}: profiling Parley on one c=${CONCURRENCY} run`)
      r.profile = await profileRun(r.format, dataDir, servers, byFormat.get(r.format.key)!.profile, vendorBodies.get(r.format.key)!, auth)
      printProfile(r.format, r.profile)
    }
  }
  await upstream.stop()

  const verdicts = all.map((r) => ({ r, v: verdict(r) }))
  const summaryTable = [
    `| Format | relay CPU per turn (c=${CONCURRENCY}) | Parley CPU per turn | **Parley ÷ relay** (aim ≤ 2) | first delta c=1: direct / relay / Parley | **Parley − relay** (aim ≤ 1 ms) |`,
    '|---|--:|--:|--:|--:|--:|',
    ...verdicts.map(
      ({ r, v }) =>
        `| ${r.format.title} (\`${r.format.model}\`) | ${us(v.relayCpu)} | ${us(v.parleyCpu)} | **${v.cpuRatio.toFixed(2)}** (${v.cpuRatio <= 2 ? 'met' : 'missed'}) | ` +
        `${ms(v.directP50)} / ${ms(v.relayP50)} / ${ms(v.parleyP50)} | **${ms(v.addedMs)}** (${v.addedMs <= 1 ? 'met' : 'missed'}) |`,
    ),
  ].join('\n')
  process.stdout.write(`${summaryTable}\n`)
  for (const r of all) process.stdout.write(`\n${r.format.title}\n${cpuTable(r)}\n\n${latencyTable(r)}\n${r.loops.packagePath.length > 0 ? `\n${packageTable(r)}\n` : ''}`)

  const perFormat = all.flatMap((r) => [
    `### ${r.format.title}: \`${r.format.model}\`, \`POST ${r.format.path}\``,
    '',
    `CPU per turn at concurrency ${CONCURRENCY}, each round's relay run just before its Parley run:`,
    '',
    cpuTable(r),
    '',
    `Time to the first text delta at concurrency 1 (${LATENCY_TURNS} sequential turns per path and round; the direct call and the relay read \`${r.format.deltaEvent}\`, Parley's client its \`delta\` frame):`,
    '',
    latencyTable(r),
    '',
    ...(r.loops.packagePath.length > 0
      ? [
          `The thin vendor path beside the AI SDK package path (decision 050): a second Parley on its own seeded database with \`VENDOR_THIN_STREAMS=0\`, measured in each round, after the first Parley in rounds 1 and 3 and before it in round 2 (\`BENCH_VENDOR_PACKAGE=1\`):`,
          '',
          packageTable(r),
          '',
        ]
      : []),
    ...(r.profile
      ? [`Parley's CPU profile on one c=${CONCURRENCY} run (\`BENCH_VENDOR_PROFILE=1\`; top ${Math.min(15, PROFILE_TOP)} of each list, all ${PROFILE_TOP} on the run's output):`, '', profileTables(r.profile, 15), '']
      : []),
  ])
  const section = [
    ...sectionHead('Vendor turns: Parley beside a bare relay of the same vendor stream (issue 34)', 'bench/vendor.ts', loadBefore),
    `- **Load**: closed loop over real HTTP (node:http keep-alive agent, loopback), frames parsed with eventsource-parser; ${ROUNDS} interleaved rounds per format,`,
    `  each: ${LATENCY_TURNS} sequential turns (c=1) calling the upstream directly, through the relay and through Parley, then ${DURATION_S} s at c=${CONCURRENCY} through the relay and ${DURATION_S} s through Parley`,
    `  (${CONCURRENCY} connections, each on its own chat, a fresh chat every ${TURNS_PER_CHAT} turns so a chat's history, sent whole each turn, stays as long as the one the relay's request comes from: the request of a chat's turn ${Math.max(1, Math.round(TURNS_PER_CHAT / 2))}). Every path was warmed up first (20 sequential turns and ${WARMUP_S} s at c=${CONCURRENCY}). Any failed turn voids the run.`,
    '',
    '### Summary (medians over the rounds)',
    '',
    summaryTable,
    '',
    '- CPU per turn is the server process\'s utime + stime (`/proc/<pid>/stat`) over the run ÷ the turns it completed; the ratio is the median of each round\'s',
    '  Parley ÷ relay, and "Parley − relay" the median of each round\'s difference of p50s, so each figure compares runs minutes apart at most.',
    `  The machine has ${cpus().length} cores, shared by the client, the upstream, the server measured and anything else running: absolute figures move with its load, the ratios less so.`,
    '',
    ...perFormat,
    '### Setup',
    '',
    `- **Upstream** (\`bench/vendor-upstream.ts\`, a bench double in its own process): \`POST /v1/responses\` and \`POST /v1/messages\` answer with the recorded text answers of`,
    `  \`test/e2e/vendor-fixtures/openai.ts\` and \`anthropic.ts\` (same events, ids, headers and usage) widened to ${DELTAS} text deltas, written in one go: no gaps between events,`,
    '  so what a path adds is its own cost. It ignores what it is sent.',
    '- **Relay** (`bench/vendor-relay.ts`, a bench double in its own process): `node:http`, no framework; reads the POST, forwards it with `fetch` (undici) to the',
    '  upstream\'s same path, and pipes the answer\'s chunks back unchanged. A stateless gateway at its thinnest: no auth, parsing, storage or accounting.',
    `- **Direct and relay requests** send the very body of a vendor request of Parley's, made after its warm-up on a chat of its own at the chat's turn ${Math.max(1, Math.round(TURNS_PER_CHAT / 2))} (${all.map((r) => `${r.format.title} ${fmt(r.vendorBodyBytes)} bytes`).join(', ')}),`,
    `  so the relay moves a request like Parley's: Parley's chats are fresh every ${TURNS_PER_CHAT} turns, so its requests carry 0 to ${TURNS_PER_CHAT - 1} earlier turns (their mean size is in the CPU table's last column);`,
    '  a stateless gateway\'s client would send the whole history each time too.',
    `- **Parley**: \`node src/main.ts\`, \`LOG_LEVEL=warn\`, fresh \`DATA_DIR\` seeded through the store (one organisation, an API key, 1,000,000 USD of credit, every chat),`,
    '  `OPENAI_BASE_URL` / `ANTHROPIC_BASE_URL` on the upstream, `VENDOR_MAX_RETRIES=0`, and `MAX_RUNNING_RUNS_PER_ORG`, `MAX_CONCURRENT_TURNS` and `SHED_FROM_TURNS` at 4,096 so',
    `  no admission cap (decision 033) refuses a measured turn. Turn: \`POST /api/v1/chats/{id}/responses\` with \`{"model": …, "input": [{"type": "prompt", "text": "${PROMPT}"}]}\`.`,
    '  Parley\'s CPU per turn includes its whole turn: admission, packing, the vendor call through the AI SDK, relaying parts as SSE frames, the group commits and settlement.',
    PROFILE
      ? `- **Profile**: a separate Parley process on the same database started with \`--cpu-prof\`, ${WARMUP_S} s of warm-up, then one ${DURATION_S} s run at c=${CONCURRENCY} per format; only the run's samples are summed (the profile's clock is the client's monotonic clock), as self time per function, grouped by npm package or project file; \`(garbage collector)\` and \`(program)\` are V8's own, \`(native)\` is C++ reached from JavaScript (socket writes, microtask runs). A project file's line:column is that of the .ts source (Node strips its types in place); a better-sqlite3 statement's time shows as the store function that ran it (\`src/store/runs.ts\` and the like). The profiler's sampling slows the server a little; the shares are what matter.`
      : '- No profile this run (`BENCH_VENDOR_PROFILE=1` adds one).',
  ].join('\n')
  writeSection(join(REPO_ROOT, 'BENCHMARKS.md'), 'vendor', section)
  log('wrote BENCHMARKS.md (section "vendor")')
}

runMain(main, cleanup)
