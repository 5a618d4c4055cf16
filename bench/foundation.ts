/**
 * `npm run bench -- foundation`: the foundation benchmark. Starts a bare Fastify route and the real Parley server
 * (each its own process), seeds a 100,000-part chat through the store first, then measures each case
 * with autocannon, one after the other in the same run (the bare route before the first case and after
 * every case), and writes the table to BENCHMARKS.md.
 *
 * Environment: BENCH_DURATION (seconds per case, default 5), BENCH_WARMUP (seconds, default 1),
 * BENCH_CONNECTIONS (default 10).
 */
import autocannon, { type Options, type Result } from 'autocannon'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { REPO_ROOT, startServer, type ServerProcess } from '../test/e2e/server-process.ts'
import { writeSection } from './benchmarks-file.ts'
import { envNumber, fmt, installCleanup, loadLine, log, mean, percentile, runMain, sectionHead } from './lib.ts'
import { seedLargeChat } from './seed.ts'

const PARTS = 100_000

const duration = envNumber('BENCH_DURATION', 5)
const warmup = envNumber('BENCH_WARMUP', 1)
const connections = Math.trunc(envNumber('BENCH_CONNECTIONS', 10))

type Case = {
  name: string
  request: string
  /** Sent once before the run; the run is void unless it answers `status`. */
  status: number
  check?: (body: unknown) => string | null
  options: Omit<Options, 'connections' | 'duration'>
}

/** Latency percentiles in ms, from every response's own timing. */
type Latency = { p50: number; p99: number }
type Measured = { result: Result; latency: Latency }
type Row = Measured & { name: string; request: string }

const { removeLater, cleanup } = installCleanup()

async function probe(c: Case): Promise<void> {
  const { url, method = 'GET', headers, body } = c.options
  const response = await fetch(url, { method, headers, body, signal: AbortSignal.timeout(10_000) })
  const text = await response.text()
  if (response.status !== c.status) throw new Error(`${c.name}: expected ${c.status}, got ${response.status}: ${text}`)
  const problem = c.check?.(JSON.parse(text))
  if (problem) throw new Error(`${c.name}: ${problem}`)
}

async function measure(c: Case): Promise<Measured> {
  await probe(c)
  await autocannon({ ...c.options, connections, duration: warmup })
  // autocannon's latency histogram keeps whole milliseconds; sub-ms routes need the raw timings.
  let times = new Float64Array(1 << 16)
  let count = 0
  const result = await autocannon({ ...c.options, connections, duration, title: c.name }).on(
    'response',
    (_client, _status, _bytes, ms) => {
      if (count === times.length) {
        const grown = new Float64Array(times.length * 2)
        grown.set(times)
        times = grown
      }
      times[count++] = ms
    },
  )
  const wrong = Object.entries(result.statusCodeStats).filter(([code]) => Number(code) !== c.status)
  if (result.errors > 0 || result.timeouts > 0 || wrong.length > 0) {
    throw new Error(
      `${c.name}: ${result.errors} errors, ${result.timeouts} timeouts, other statuses ${JSON.stringify(Object.fromEntries(wrong))}`,
    )
  }
  const sorted = times.subarray(0, count).sort()
  return { result, latency: { p50: percentile(sorted, 50), p99: percentile(sorted, 99) } }
}

const rps = (m: Measured) => m.result.requests.average

/**
 * The first row is the bare route: its req/s and latencies are means over all its runs. Every other
 * row's ratio is to the mean of the two baseline runs just before and just after it, so a change in
 * the machine's load during the run moves both sides of the ratio alike.
 */
function table(baseline: Case, baselines: Measured[], rows: Row[]): string {
  const lines = [
    '| Case | Request | req/s (mean) | p50 latency | p99 latency | req/s vs bare route |',
    '|---|---|--:|--:|--:|--:|',
    `| ${baseline.name} | \`${baseline.request}\` | ${fmt(mean(baselines.map(rps)))} | ` +
      `${fmt(mean(baselines.map((b) => b.latency.p50)), 2)} ms | ${fmt(mean(baselines.map((b) => b.latency.p99)), 2)} ms | 1.00 |`,
  ]
  rows.forEach(({ name, request, result, latency }, i) => {
    const bracket = mean([rps(baselines[i]!), rps(baselines[i + 1]!)])
    lines.push(
      `| ${name} | \`${request}\` | ${fmt(result.requests.average)} | ${fmt(latency.p50, 2)} ms | ` +
        `${fmt(latency.p99, 2)} ms | ${(result.requests.average / bracket).toFixed(2)} |`,
    )
  })
  return lines.join('\n')
}

async function main(): Promise<void> {
  const loadBefore = loadLine()
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-'))
  removeLater(dataDir)
  log(`seeding a chat of ${fmt(PARTS)} parts in ${dataDir}`)
  const seedStart = Date.now()
  const seeded = seedLargeChat(dataDir, PARTS)
  log(`seeded in ${((Date.now() - seedStart) / 1000).toFixed(1)} s (ordinals ${seeded.firstOrdinal}-${seeded.lastOrdinal})`)

  const bare: ServerProcess = await startServer({ args: ['--import', 'tsx', 'bench/bare-server.ts'] })
  const parley: ServerProcess = await startServer({ env: { DATA_DIR: dataDir, LOG_LEVEL: 'warn' } })
  if (/pk_/.test(parley.stdout())) throw new Error('the server bootstrapped a dev organisation on a seeded database')

  const auth = { authorization: `Bearer ${seeded.key}` }
  const chat = `/api/v1/chats/${seeded.chatId}`
  const midOrdinal = seeded.firstOrdinal + PARTS / 2
  const pageOf100 = (body: unknown) => {
    const page = body as { data: unknown[]; has_more: boolean }
    return page.data.length === 100 && page.has_more ? null : `expected a full page of 100 with more, got ${page.data.length}`
  }
  const cases: Case[] = [
    {
      name: 'bare Fastify route (baseline)',
      request: 'GET /',
      status: 200,
      options: { url: `${bare.url}/` },
    },
    {
      name: 'chat create',
      request: 'POST /api/v1/chats',
      status: 201,
      options: {
        url: `${parley.url}/api/v1/chats`,
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ title: 'bench', namespace: 'bench/create', user_metadata: { source: 'bench' } }),
      },
    },
    {
      name: 'chat get (100,000-part chat)',
      request: 'GET /api/v1/chats/{id}',
      status: 200,
      check: (body) => ((body as { length: number }).length === PARTS ? null : 'wrong chat length'),
      options: { url: `${parley.url}${chat}`, headers: auth },
    },
    {
      name: 'history, newest page',
      request: 'GET /api/v1/chats/{id}/history?limit=100',
      status: 200,
      check: pageOf100,
      options: { url: `${parley.url}${chat}/history?limit=100`, headers: auth },
    },
    {
      name: 'history, mid-chat page',
      request: `GET /api/v1/chats/{id}/history?limit=100&before_ordinal=${midOrdinal}`,
      status: 200,
      check: pageOf100,
      options: { url: `${parley.url}${chat}/history?limit=100&before_ordinal=${midOrdinal}`, headers: auth },
    },
  ]

  // The bare route is measured first, then again after every case.
  const [baseline, ...measured] = cases as [Case, ...Case[]]
  const baselines: Measured[] = []
  const rows: Row[] = []
  const runBaseline = async () => {
    const result = await measure(baseline)
    baselines.push(result)
    log(`${baseline.name}: ${fmt(rps(result))} req/s, p99 ${fmt(result.latency.p99, 2)} ms`)
  }
  log(`each case: ${warmup} s warm-up + ${duration} s, ${connections} connections`)
  await runBaseline()
  for (const c of measured) {
    const result = await measure(c)
    rows.push({ name: c.name, request: c.request, ...result })
    log(`${c.name}: ${fmt(rps(result))} req/s, p99 ${fmt(result.latency.p99, 2)} ms`)
    await runBaseline()
  }
  await Promise.all([bare.stop(), parley.stop()])

  const section = [
    ...sectionHead('Foundation: chat create, chat get and history paging', 'bench/foundation.ts', loadBefore),
    `- **Load**: autocannon, ${connections} connections, ${warmup} s warm-up then ${duration} s per case, one case at a time;`,
    `  the bare route is measured before the first case and after every case (${baselines.length} runs,`,
    `  ${fmt(Math.min(...baselines.map(rps)))}-${fmt(Math.max(...baselines.map(rps)))} req/s).`,
    '',
    table(baseline, baselines, rows),
    '',
    '- The baseline is `bench/bare-server.ts`: a bare Fastify app in its own process returning `{"hello":"world"}`.',
    '- Parley runs as `node src/main.ts` with `LOG_LEVEL=warn` on a fresh `DATA_DIR`. Before it starts,',
    `  \`bench/seed.ts\` writes one organisation, an API key and a chat of ${fmt(PARTS)} parts through the store`,
    '  (prompts and replies of 90-370 characters), so chat get and both history pages read that chat.',
    '- Chat create writes one row per request; the database grows during that case.',
    '- req/s is autocannon\'s mean of its per-second samples. p50/p99 are over every response of the measured run,',
    '  from autocannon\'s own per-request timing (its result histogram rounds to whole milliseconds, too coarse here).',
    '  Closed loop: each connection sends its next request when the previous answer arrives.',
    '- The ratio of a case is to the mean of the bare-route runs just before and after it. The client and the servers share',
    '  the machine (and other work on it shows in the load average above), so the ratios are the figures to compare across runs.',
  ].join('\n')

  const markdown = table(baseline, baselines, rows)
  process.stdout.write(`${markdown}\n`)
  writeSection(join(REPO_ROOT, 'BENCHMARKS.md'), 'foundation', section)
  log('wrote BENCHMARKS.md (section "foundation")')
}

runMain(main, cleanup)
