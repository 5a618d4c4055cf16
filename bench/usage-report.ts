/**
 * `npm run bench -- usage-report` (issue 4): the usage report over 1,000,000 balance entries
 * (24h, bin=hour, group_by=model), in-process through the store and over HTTP through the real
 * server, beside a bare `SELECT count(*) FROM balance_entries` over the same table in the same run.
 *
 * Environment: BENCH_ENTRIES (default 1,000,000), BENCH_ITERATIONS (timed in-process calls per case,
 * default 60; HTTP requests per case, default the same).
 */
import { randomUUID } from 'node:crypto'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { CatalogueEntry } from '../src/domain/catalogue/catalogue-entry.ts'
import { customerCost } from '../src/domain/pricing/customer-cost.ts'
import type { Usage } from '../src/domain/pricing/usage.ts'
import { usageWindow } from '../src/domain/usage-window.ts'
import { loadCatalogue } from '../src/providers/catalogue/load-catalogue.ts'
import { openDatabase } from '../src/store/database.ts'
import { createStore } from '../src/store/index.ts'
import type { UsageQuery } from '../src/store/usage-report.ts'
import { REPO_ROOT, startServer } from '../test/e2e/server-process.ts'
import { writeSection } from './benchmarks-file.ts'
import { envNumber, fmt, installCleanup, loadLine, log, rng, runMain, Samples, sectionHead, stats, type Stats } from './lib.ts'

const ENTRIES = Math.trunc(envNumber('BENCH_ENTRIES', 1_000_000))
const ITERATIONS = Math.trunc(envNumber('BENCH_ITERATIONS', 60))
const BATCH = 50_000
const MODEL_NAMES = [
  'anthropic/claude-sonnet-4.5',
  'anthropic/claude-haiku-4.5',
  'openai/gpt-5',
  'openai/gpt-5-mini',
  'google/gemini-2.5-flash',
  'sandbox/echo',
]
const NAMESPACES = [
  null,
  'acme',
  'acme/support',
  'acme/support/tier1',
  'acme/support/tier2',
  'acme/sales',
  'globex/billing',
  'globex/billing/eu',
]
const API_KEYS = 4
const HOUR_MS = 3_600_000

const { removeLater, cleanup } = installCleanup()


/** 64 usage shapes per model with their exact customer cost, computed once (pricing is not what is measured). */
function usageVariants(model: CatalogueEntry, random: () => number): { usage: Usage; cost: string }[] {
  return Array.from({ length: 64 }, () => {
    const input = Math.floor(200 + random() * 20_000)
    const output = Math.floor(50 + random() * 2_000)
    const usage: Usage = {
      input_tokens: input,
      output_tokens: output,
      reasoning_tokens: model.supports_reasoning ? Math.floor(output * random() * 0.5) : 0,
      cache_read_tokens: random() < 0.4 ? Math.floor(random() * 8_000) : 0,
      cache_write_tokens: 0,
    }
    return { usage, cost: customerCost(usage, model, '5') }
  })
}

type Row = { name: string; what: string; stats: Stats }

/** Times `run` ITERATIONS times after a few warm-up calls; returns ms samples. */
function timeSync(run: () => unknown, iterations: number, into: Samples): void {
  for (let i = 0; i < iterations; i++) {
    const start = performance.now()
    run()
    into.push(performance.now() - start)
  }
}

async function main(): Promise<void> {
  const loadBefore = loadLine()
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-usage-'))
  removeLater(dataDir)
  const db = openDatabase(join(dataDir, 'parley.db'))
  const store = createStore(db)
  const catalogue = loadCatalogue().entries
  const models = MODEL_NAMES.map((name) => {
    const entry = catalogue.find((e) => e.name === name)
    if (!entry) throw new Error(`${name} is not in the catalogue`)
    return entry
  })
  const random = rng(42)
  const variants = models.map((m) => usageVariants(m, random))

  const org = store.organisations.create('Acme', 'acme')
  const keys = Array.from({ length: API_KEYS }, (_, i) => store.apiKeys.create(org.id, `key ${i}`))
  store.balance.add(org.id, 'topup', '1000000')

  // Entries spread evenly over the 24 hourly buckets of the window the report will read.
  const now = new Date()
  const window = usageWindow('24h', now)
  const fromMs = Date.parse(window.from)
  const spanMs = now.getTime() - fromMs
  log(`seeding ${fmt(ENTRIES)} usage entries over ${window.from} .. ${now.toISOString()} in batches of ${fmt(BATCH)}`)
  const seedStart = performance.now()
  const seedBatch = db.transaction((start: number, end: number) => {
    for (let i = start; i < end; i++) {
      const m = Math.floor(random() * models.length)
      const model = models[m]!
      const variant = variants[m]![i & 63]!
      store.balance.charge({
        orgId: org.id,
        type: i % 50 === 0 ? 'compaction' : 'usage',
        runId: randomUUID(),
        apiKeyId: keys[i % API_KEYS]!.id,
        modelId: model.id,
        modelName: model.name,
        namespace: NAMESPACES[Math.floor(random() * NAMESPACES.length)]!,
        usage: variant.usage,
        cost: variant.cost,
        occurredAt: new Date(fromMs + Math.floor((i / ENTRIES) * spanMs)).toISOString(),
      })
    }
  })
  for (let start = 0; start < ENTRIES; start += BATCH) {
    seedBatch.immediate(start, Math.min(ENTRIES, start + BATCH))
    if ((start / BATCH) % 5 === 4) log(`  ${fmt(start + BATCH)} entries, ${((performance.now() - seedStart) / 1000).toFixed(1)} s`)
  }
  db.pragma('wal_checkpoint(TRUNCATE)')
  db.pragma('optimize')
  const seedSeconds = (performance.now() - seedStart) / 1000
  const count = (db.prepare('SELECT count(*) AS n FROM balance_entries').get() as { n: number }).n
  const rollupRows = (db.prepare('SELECT count(*) AS n FROM usage_hourly').get() as { n: number }).n
  log(`seeded in ${seedSeconds.toFixed(1)} s: ${fmt(count)} entries, ${fmt(rollupRows)} roll-up rows`)

  const query: UsageQuery = { orgId: org.id, ...window, bin: 'hour', groupBy: 'model', namespace: null }
  const first = store.usage.report(query)
  const runs = first.rows.reduce((sum, r) => sum + r.runs, 0)
  if (!first.cached || runs !== ENTRIES) throw new Error(`report: cached ${first.cached}, ${runs} runs of ${ENTRIES}`)

  // For contrast: the same answer computed from the entries themselves, as it would be without the roll-up.
  const fromEntries = db
    .prepare(
      `SELECT substr(occurred_at, 1, 13) || ':00:00.000Z' AS bucket, model_id, model_name, count(DISTINCT run_id) AS runs,
         sum(input_tokens), sum(output_tokens), sum(reasoning_tokens), sum(cache_read_tokens), sum(cache_write_tokens),
         sum(CASE WHEN entry_type IN ('usage', 'compaction') THEN -amount_units ELSE 0 END) AS cost_units
       FROM balance_entries WHERE org_id = ? AND occurred_at >= ? AND occurred_at < ?
       GROUP BY bucket, model_id, model_name ORDER BY bucket, model_id, model_name`,
    )
    .safeIntegers(true)
  const countAll = db.prepare<[], { n: number }>('SELECT count(*) AS n FROM balance_entries')
  const rawRows = fromEntries.all(org.id, window.from, window.to).length
  if (rawRows !== first.rows.length) throw new Error(`raw aggregate has ${rawRows} rows, the report ${first.rows.length}`)

  const cases: { name: string; what: string; run: () => unknown; reps: number }[] = [
    { name: 'bare `SELECT count(*)` (baseline)', what: "db.prepare('SELECT count(*) FROM balance_entries').get()", run: () => countAll.get(), reps: ITERATIONS },
    {
      name: 'usage report, in-process',
      what: "store.usage.report({ orgId, from, to, bin: 'hour', groupBy: 'model', namespace: null })",
      run: () => store.usage.report(query),
      reps: ITERATIONS,
    },
    {
      name: 'same report from the entries (no roll-up), for contrast',
      what: 'GROUP BY hour, model over balance_entries',
      run: () => fromEntries.all(org.id, window.from, window.to),
      reps: Math.max(5, Math.ceil(ITERATIONS / 10)),
    },
  ]
  log('timing in-process cases')
  for (const c of cases) timeSync(c.run, 3, new Samples())
  const samples = cases.map(() => new Samples())
  const ROUNDS = 5
  for (let round = 0; round < ROUNDS; round++) {
    cases.forEach((c, k) => timeSync(c.run, Math.ceil(c.reps / ROUNDS), samples[k]!))
  }
  const rows: Row[] = cases.map((c, k) => ({ name: c.name, what: c.what, stats: stats(samples[k]!.values()) }))
  db.close()

  // Over HTTP: the real server on the same DATA_DIR, and a bare Fastify route as the transport's floor.
  log('starting the real server and the bare route')
  const [parley, bare] = await Promise.all([
    startServer({ env: { DATA_DIR: dataDir, LOG_LEVEL: 'warn' } }),
    startServer({ args: ['--import', 'tsx', 'bench/bare-server.ts'] }),
  ])
  const usagePath = '/api/v1/usage?range=24h&bin=hour&group_by=model'
  const auth = { authorization: `Bearer ${keys[0]!.key}` }
  const get = async (url: string, headers: Record<string, string> = {}) => {
    const response = await fetch(url, { headers, signal: AbortSignal.timeout(30_000) })
    const body = await response.text()
    if (response.status !== 200) throw new Error(`${url}: ${response.status} ${body}`)
    return body
  }
  const checked = JSON.parse(await get(`${parley.url}${usagePath}`, auth)) as { rows: { runs: number }[]; cached: boolean }
  const httpRuns = checked.rows.reduce((sum, r) => sum + r.runs, 0)
  // The server's window moves on if an hour turned since seeding; the first hour's entries then fall out.
  if (!checked.cached || checked.rows.length === 0 || httpRuns > ENTRIES) {
    throw new Error(`HTTP report: cached ${checked.cached}, ${checked.rows.length} rows, ${httpRuns} runs`)
  }
  const timeHttp = async (url: string, headers: Record<string, string>, reps: number, into: Samples) => {
    for (let i = 0; i < reps; i++) {
      const start = performance.now()
      await get(url, headers)
      into.push(performance.now() - start)
    }
  }
  const httpCases = [
    { name: 'bare Fastify route over HTTP (transport floor)', what: 'GET / (bench/bare-server.ts)', url: `${bare.url}/`, headers: {} },
    { name: 'usage report over HTTP, real server', what: `GET ${usagePath}`, url: `${parley.url}${usagePath}`, headers: auth },
  ]
  for (const c of httpCases) await timeHttp(c.url, c.headers, 5, new Samples())
  const httpSamples = httpCases.map(() => new Samples())
  for (let round = 0; round < ROUNDS; round++) {
    for (const [k, c] of httpCases.entries()) await timeHttp(c.url, c.headers, Math.ceil(ITERATIONS / ROUNDS), httpSamples[k]!)
  }
  await Promise.all([parley.stop(), bare.stop()])
  const httpRows: Row[] = httpCases.map((c, k) => ({ name: c.name, what: c.what, stats: stats(httpSamples[k]!.values()) }))

  const base = rows[0]!.stats
  const ms = (n: number) => `${fmt(n, n < 1 ? 3 : 2)} ms`
  const line = (r: Row, ratio: string) =>
    `| ${r.name} | \`${r.what}\` | ${fmt(r.stats.n)} | ${ms(r.stats.mean)} | ${ms(r.stats.p50)} | ${ms(r.stats.p99)} | ${ratio} |`
  const table = [
    '| Case | What | calls | mean | p50 | p99 | mean vs `count(*)` |',
    '|---|---|--:|--:|--:|--:|--:|',
    ...rows.map((r) => line(r, `${(r.stats.mean / base.mean).toFixed(2)}×`)),
    ...httpRows.map((r) => line(r, `${(r.stats.mean / base.mean).toFixed(2)}×`)),
  ].join('\n')
  process.stdout.write(`${table}\n`)
  const report = rows[1]!.stats
  const http = httpRows[1]!.stats
  const floor = httpRows[0]!.stats
  const section = [
    ...sectionHead('Usage report over 1,000,000 balance entries (issue 4)', 'bench/usage-report.ts', loadBefore),
    `- **Load**: one caller, sequential; in-process cases interleaved in ${ROUNDS} rounds after 3 warm-up calls each;`,
    `  HTTP cases (keep-alive \`fetch\`, loopback) interleaved likewise after 5 warm-up requests each.`,
    '',
    table,
    '',
    `- **Result**: the report (24h, \`bin=hour\`, \`group_by=model\`) takes ${ms(report.mean)} in-process, ` +
      `${(report.mean / base.mean).toFixed(2)}× a bare \`SELECT count(*)\` over the same ${fmt(count)}-row table;`,
    `  over HTTP through the real server ${ms(http.mean)} mean (${ms(http.p99)} p99), of which the bare route's round trip is ${ms(floor.mean)}.`,
    `- **Data**: ${fmt(count)} \`balance_entries\` rows written through \`store.balance.charge\` (which also keeps the hourly`,
    `  roll-up and the running balance), in transactions of ${fmt(BATCH)}, in ${seedSeconds.toFixed(0)} s: ${fmt(ENTRIES)} charges (2 % \`compaction\`, the rest`,
    `  \`usage\`) spread evenly over the 24 hours of the report's window, over ${models.length} models, ${NAMESPACES.length} namespaces (one of them none) and`,
    `  ${API_KEYS} API keys, plus one top-up: ${fmt(rollupRows)} rows in \`usage_hourly\`. The report answers ${first.rows.length} rows (hour × model, and the top-up's own row), \`cached: true\`.`,
    '- The report reads the hourly roll-up, so its time does not grow with the number of entries, only with hours × dimensions;',
    '  `count(*)` has to walk an index of every entry. The contrast row computes the same rows from `balance_entries` directly.',
    '- The HTTP figure is the whole request: API key check, query validation, the report, the JSON answer, over loopback.',
  ].join('\n')
  writeSection(join(REPO_ROOT, 'BENCHMARKS.md'), 'usage-report', section)
  log('wrote BENCHMARKS.md (section "usage-report")')
}

runMain(main, cleanup)
