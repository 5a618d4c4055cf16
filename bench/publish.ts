/**
 * `npm run bench -- publish` (issue 36 item 3): does publishing a bundle of 2,000 tools stall the
 * other requests? Against the real server process (`node src/main.ts`), a pinger on its own thread
 * asks `GET /healthz` every PING_EVERY_MS (test/helpers/healthz-poller.ts) while
 * `POST /api/v1/config/tools` publishes 2,000 tools (test/helpers/large-tool-bundle.ts, about
 * 1,010 KB, just under the route's 1 MiB body limit).
 *
 * Each round starts a fresh server, so its first publish is the process's first (cold code, empty
 * memos), then publishes the same bundle again REPEATS times, then a new bundle (other names and
 * texts: new to every memo) REPEATS times. Before the publishes the pinger runs alone for FLOOR_MS:
 * the floor, what a /healthz answer costs with nothing else to do. Reported for each kind of publish:
 * the pinger's worst and p99 answer time while publishes ran, the floor's, how long the publish took,
 * and the CPU time the server's main thread spent on it (/proc, less the pinger's answers at the
 * floor's cost an answer): the stall measured from outside grows with the machine's load, what the
 * event loop itself had to do does not. Aim (issue 36): the worst answer during a publish at most 100 ms.
 *
 * Environment: BENCH_ROUNDS (fresh servers, default 3), BENCH_ITERATIONS (repeats a kind, default 5).
 * PROFILE_DIR=dir runs the servers under `--cpu-prof` and prints where the publishes' CPU went.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { REPO_ROOT, startServer } from '../test/e2e/server-process.ts'
import { nowAbsolute, startHealthzPoller, type PollSample } from '../test/helpers/healthz-poller.ts'
import { largeToolBundle } from '../test/helpers/large-tool-bundle.ts'
import { seedOrganisation } from '../test/helpers/seed-organisation.ts'
import { writeSection } from './benchmarks-file.ts'
import { groupOf, monotonicUs, summariseProfile } from './cpu-profile.ts'
import { envNumber, fmt, installCleanup, loadLine, log, percentile, runMain, sectionHead, sleep } from './lib.ts'

const ROUNDS = Math.trunc(envNumber('BENCH_ROUNDS', 3))
const REPEATS = Math.trunc(envNumber('BENCH_ITERATIONS', 5))
const TOOLS = 2_000
const PING_EVERY_MS = 5
const FLOOR_MS = 2_000
/** Between two publishes: the pinger's answers settle, and each publish's window is its own. */
const GAP_MS = 300
const AIM_MS = 100
const PROFILE_DIR = process.env.PROFILE_DIR

const { removeLater, cleanup } = installCleanup()

type Kind = 'floor' | 'first' | 'same again' | 'new bundle'
type Window = { kind: Kind; samples: PollSample[]; publishMs: number; fromUs: number; toUs: number; loopCpuMs: number }

async function round(index: number, bodies: { first: string; fresh: string[] }): Promise<Window[]> {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-publish-'))
  removeLater(dataDir)
  const { key } = seedOrganisation(dataDir, { name: 'Benchmark', credit: '1000' })
  const server = await startServer({
    env: { DATA_DIR: dataDir, LOG_LEVEL: 'warn' },
    readyPath: '/healthz',
    timeoutMs: 60_000,
    ...(PROFILE_DIR ? { args: ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`, 'src/main.ts'] } : {}),
  })
  const windows: Window[] = []
  const poller = startHealthzPoller(server.url, PING_EVERY_MS)
  try {
    await sleep(500)
    const floorCpuFrom = await mainThreadCpuMs(server.child.pid!)
    const quietFrom = nowAbsolute()
    await sleep(FLOOR_MS)
    const quietTo = nowAbsolute()
    const floorCpuMs = (await mainThreadCpuMs(server.child.pid!)) - floorCpuFrom
    const floorSamples = await poller.between(quietFrom, quietTo)
    windows.push({ kind: 'floor', samples: floorSamples, publishMs: quietTo - quietFrom, fromUs: 0, toUs: 0, loopCpuMs: floorCpuMs })
    // What one /healthz answer costs the event loop, from the floor: taken out of a publish's figure below.
    const cpuPerAnswer = floorCpuMs / Math.max(1, floorSamples.length)

    const publish = async (kind: Kind, body: string) => {
      const cpuFrom = await mainThreadCpuMs(server.child.pid!)
      const fromUs = monotonicUs()
      const from = nowAbsolute()
      const res = await fetch(`${server.url}/api/v1/config/tools`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body,
      })
      const answer = (await res.json()) as { estimated_tokens?: number }
      const to = nowAbsolute()
      const toUs = monotonicUs()
      const usedMs = (await mainThreadCpuMs(server.child.pid!)) - cpuFrom
      if (res.status !== 200) throw new Error(`${kind}: publish answered ${res.status}: ${JSON.stringify(answer).slice(0, 500)}`)
      const samples = await poller.between(from, to)
      const loopCpuMs = usedMs - samples.length * cpuPerAnswer
      windows.push({ kind, samples, publishMs: to - from, fromUs, toUs, loopCpuMs })
      log(`round ${index + 1}, ${kind}: ${fmt(to - from)} ms (event loop's CPU ${fmt(loopCpuMs)} ms), pinger worst ${fmt(worst(samples), 1)} ms over ${samples.length} answers (${answer.estimated_tokens} tokens)`)
      await sleep(GAP_MS)
    }
    await publish('first', bodies.first)
    for (let i = 0; i < REPEATS; i++) await publish('same again', bodies.first)
    for (let i = 0; i < REPEATS; i++) await publish('new bundle', bodies.fresh[i]!)
  } finally {
    await poller.stop()
    await server.stop()
  }
  if (PROFILE_DIR) profileRound(windows)
  return windows
}

const profiled = new Set<string>()

/** Where the server's CPU went during each kind of publish: self time, summed over its windows. */
function profileRound(windows: Window[]): void {
  // The main thread's (thread id 0): the event loop the pinger waits on. Worker threads write their own files.
  const file = readdirSync(PROFILE_DIR!).find((f) => /^CPU\.\d+\.\d+\.\d+\.0\.\d+\.cpuprofile$/.test(f) && !profiled.has(f))
  if (!file) return
  profiled.add(file)
  for (const kind of ['first', 'same again', 'new bundle'] as const) {
    const of = windows.filter((w) => w.kind === kind)
    const groups = new Map<string, number>()
    const functions = new Map<string, number>()
    let busy = 0
    for (const w of of) {
      const summary = summariseProfile(join(PROFILE_DIR!, file), 1_000, { fromUs: w.fromUs, toUs: w.toUs })
      busy += summary.busyMs
      for (const g of summary.groups) groups.set(g.group, (groups.get(g.group) ?? 0) + g.ms)
      for (const f of summary.functions) functions.set(`${f.name} ${f.where}`, (functions.get(`${f.name} ${f.where}`) ?? 0) + f.ms)
    }
    const top = (m: Map<string, number>, n: number) => [...m].sort((a, b) => b[1] - a[1]).slice(0, n)
    const longest = of.map((w) => longestBusyStretch(join(PROFILE_DIR!, file), w)).sort((a, b) => b.ms - a.ms)[0]
    if (longest) log(`profile, ${kind}: longest busy stretch ${fmt(longest.ms, 1)} ms: ${top(longest.functions, 12).map(([name, ms]) => `${name} ${fmt(ms, 1)}`).join('; ')}`)
    log(`profile, ${kind} (${of.length} publishes): busy ${fmt(busy / of.length, 1)} ms a publish`)
    for (const [name, ms] of top(groups, 15)) log(`  ${name}: ${fmt(ms / of.length, 1)} ms a publish`)
    for (const [name, ms] of top(functions, 25)) log(`    ${name}: ${fmt(ms / of.length, 1)} ms a publish`)
  }
}

type Profile = { nodes: Array<{ id: number; callFrame: { functionName: string; url: string } }>; startTime: number; samples: number[]; timeDeltas: number[] }
const profiles = new Map<string, Profile>()

/**
 * The longest run of the main thread's samples inside a publish's window with no `(idle)` among
 * them: the event loop held without a break, the stall a pinger waits out. With self ms by function.
 */
function longestBusyStretch(file: string, w: Window): { ms: number; functions: Map<string, number> } {
  let profile = profiles.get(file)
  if (!profile) profiles.set(file, (profile = JSON.parse(readFileSync(file, 'utf8')) as Profile))
  const byId = new Map(profile.nodes.map((n) => [n.id, n.callFrame]))
  let best = { ms: 0, functions: new Map<string, number>() }
  let current = { ms: 0, functions: new Map<string, number>() }
  let at = profile.startTime
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i]!
    if (at < w.fromUs || at > w.toUs) continue
    const frame = byId.get(profile.samples[i]!)!
    if (frame.functionName === '(idle)') {
      current = { ms: 0, functions: new Map() }
      continue
    }
    const ms = (profile.timeDeltas[i + 1] ?? 0) / 1000
    const name = `${frame.functionName || '(anonymous)'} ${groupOf(frame.url, frame.functionName)}`
    current.ms += ms
    current.functions.set(name, (current.functions.get(name) ?? 0) + ms)
    if (current.ms > best.ms) best = current
  }
  return best
}

let clockTicks = 0

/**
 * CPU time the server's main thread (the event loop; its thread id is the process id) has used, in
 * ms, from /proc (10 ms ticks): what a publish costs the loop, however busy the machine. NaN off Linux.
 */
async function mainThreadCpuMs(pid: number): Promise<number> {
  clockTicks ||= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100
  try {
    const stat = await readFile(`/proc/${pid}/task/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return ((Number(fields[11]) + Number(fields[12])) / clockTicks) * 1000
  } catch {
    return Number.NaN
  }
}

const worst = (samples: PollSample[]) => samples.reduce((max, s) => Math.max(max, s.ms), 0)

async function main(): Promise<void> {
  const loadBefore = loadLine()
  const bodyOf = (seed: number) => JSON.stringify({ mode: 'replace', namespace: 'bench', definitions: largeToolBundle(TOOLS, seed) })
  const first = bodyOf(0)
  const bytes = Buffer.byteLength(first)
  const all: Window[] = []
  for (let r = 0; r < ROUNDS; r++) {
    // Every round's new bundles are new to it (and to the rounds before: each round is a new process anyway).
    all.push(...(await round(r, { first, fresh: Array.from({ length: REPEATS }, (_, i) => bodyOf(1 + r * REPEATS + i)) })))
  }

  const kinds: Kind[] = ['floor', 'first', 'same again', 'new bundle']
  const rows: string[] = []
  const figures: Record<string, { worst: number; p99: number }> = {}
  for (const kind of kinds) {
    const windows = all.filter((w) => w.kind === kind)
    const latencies = windows.flatMap((w) => w.samples.map((s) => s.ms)).sort((a, b) => a - b)
    const worstOf = Math.max(...windows.map((w) => worst(w.samples)))
    const p99 = percentile(latencies, 99)
    const medianWorst = percentile(windows.map((w) => worst(w.samples)).sort((a, b) => a - b), 50)
    const publishMs = windows.map((w) => w.publishMs).sort((a, b) => a - b)
    const loopCpu = windows.map((w) => w.loopCpuMs).sort((a, b) => a - b)
    figures[kind] = { worst: worstOf, p99 }
    rows.push(
      `| ${kind} | ${windows.length} | ${kind === 'floor' ? '–' : `${fmt(percentile(publishMs, 50))} ms (max ${fmt(publishMs.at(-1)!)})`} | ${kind === 'floor' ? `${fmt((1000 * loopCpu.reduce((a, b) => a + b, 0)) / publishMs.reduce((a, b) => a + b, 0))} ms a second` : `${fmt(percentile(loopCpu, 50))} ms`} | ${latencies.length} | ${fmt(worstOf, 1)} ms | ${fmt(medianWorst, 1)} ms | ${fmt(p99, 1)} ms | ${kind === 'floor' ? '–' : worstOf <= AIM_MS ? 'yes' : 'no'} |`,
    )
  }

  // A profiled server is slower: its figures are not the benchmark's.
  if (PROFILE_DIR) return

  const section = [
    ...sectionHead('Publishing 2,000 tools: /healthz while the bundle is checked', 'bench/publish.ts', loadBefore),
    `- **Load**: ${ROUNDS} rounds, each on a fresh server process (\`node src/main.ts\`). A pinger on its own thread asks \`GET /healthz\` every ${PING_EVERY_MS} ms over one keep-alive connection, one request at a time.`,
    `  Each round: the pinger alone for ${FLOOR_MS / 1000} s (the floor), then \`POST /api/v1/config/tools\` with ${fmt(TOOLS)} tools (test/helpers/large-tool-bundle.ts, ${fmt(bytes / 1024)} KiB; the route's limit is 1,024 KiB):`,
    `  the process's first publish, the same bundle ${REPEATS} times again, and ${REPEATS} new bundles (other names and texts), one after the other, ${GAP_MS} ms apart.`,
    '  "Event loop\'s CPU" is the CPU time the server\'s main thread used during the publish (/proc, 10 ms ticks), less what the pinger\'s answers in it cost at the floor\'s rate (the floor row: their cost a second): what no longer runs there stalls no one, however busy the machine.',
    `  "Worst" is the slowest \`/healthz\` answer in any window of that kind (the median of the windows' worsts beside it), "p99" over every answer in those windows. Aim (issue 36): worst at most ${AIM_MS} ms.`,
    '',
    '| Publish | Windows | Publish took (median) | Event loop\'s CPU a publish (median) | /healthz answers | Worst | Median window\'s worst | p99 | Worst ≤ 100 ms |',
    '|---|--:|--:|--:|--:|--:|--:|--:|:-:|',
    ...rows,
  ].join('\n')
  writeSection(join(REPO_ROOT, 'BENCHMARKS.md'), 'publish', section)
  log(JSON.stringify(figures))
}

runMain(main, cleanup)
