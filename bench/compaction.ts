/**
 * The second half of `npm run bench -- packing` (issue 10): a 200-turn tool-using chat on
 * `sandbox/echo-8k` (8,192-token window) under the platform defaults (`history_mode: summarize`,
 * no budget published), through the real server process over HTTP, with a funded organisation.
 * It reports what summarised history costs a long chat:
 *
 * - summaries made per 100 turns (compaction runs, and the sum of `done.compaction.blocks_generated`);
 * - compaction's share of the chat's cost (the usage report grouped by `entry_type`, for the chat's namespace);
 * - the share of input tokens served from the sandbox's simulated prefix cache once the chat is past
 *   its window: sum(cache_read_tokens) / sum(input_tokens + cache_read_tokens) over the customer runs
 *   after the first turn that packed a summary or dropped history (aim ≥ 80 %).
 *
 * A cycle is two turns: a prompt of 80-200 words ending in a `/tool NAME {json}` line (the sandbox
 * answers with an echo and a tool call, stop reason `tool_use`), then the tool's result (100-400
 * tokens of JSON records) with, half the time, a short prompt. Sizes come from a seeded generator.
 *
 * `node --import tsx bench/compaction.ts` runs it alone and prints the tables (BENCHMARKS.md is
 * written only by bench/packing.ts). BENCH_TRACE=1 logs every turn (tokens, cache reads, summaries, dropped).
 */
import { Agent } from 'node:http'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Decimal } from 'decimal.js'
import { estimateTokens } from '../src/domain/tokens/estimate-tokens.ts'
import { openDatabase } from '../src/store/database.ts'
import { createStore } from '../src/store/index.ts'
import { startServer } from '../test/e2e/server-process.ts'
import { fmt, installCleanup, log, percentile, rng, runMain } from './lib.ts'
import { sse } from './sse-client.ts'

export const COMPACTION_TURNS = 200
const NAMESPACE = 'bench/compaction'

/**
 * One chat of the cache-share matrix (issue 34): a model, a published budget (or none: the platform
 * defaults, headroom 0.1), with or without tools. `turns` and the prompt sizes are chosen so the chat
 * passes its window early and then runs long enough for summaries to be merged.
 */
export type CompactionScenario = {
  label: string
  model: string
  window: number
  /** Published as the namespace's budget (`history_mode: summarize`); null: nothing published (platform defaults). */
  headroom: number | null
  tools: boolean
  turns: number
  /** Words of a prompt (a call turn's, or a turn's without tools). */
  promptWords: [number, number]
  /** Tokens of a tool result. */
  resultTokens: [number, number]
  aim: number
}

/** The scenario BENCHMARKS.md details (issue 10): sandbox/echo-8k, platform defaults, tools. */
export const SMALL_WINDOW_TOOLS: CompactionScenario = {
  label: '8k window, default budget, tools',
  model: 'sandbox/echo-8k',
  window: 8_192,
  headroom: null,
  tools: true,
  turns: COMPACTION_TURNS,
  promptWords: [80, 200],
  resultTokens: [100, 400],
  aim: 0.6,
}

const TOOLS = [
  { name: 'lookup_order', description: 'Find an order by id or customer.', input_schema: { type: 'object', properties: { order_id: { type: 'string' }, customer_id: { type: 'string' } } } },
  { name: 'search_tickets', description: 'Search support tickets.', input_schema: { type: 'object', properties: { query: { type: 'string' }, limit: { type: 'integer' } } } },
  { name: 'get_invoice', description: 'Read one invoice.', input_schema: { type: 'object', properties: { invoice_id: { type: 'string' } } } },
  { name: 'query_logs', description: 'Query service logs.', input_schema: { type: 'object', properties: { service: { type: 'string' }, since: { type: 'string' } } } },
] as const

const WORDS = (
  'order shipped monday customer parcel never arrived please check tracking number warehouse log before offering refund ' +
  'billing team confirms invoices within two days account tier decides whether priority support applies summarise case ' +
  'escalate outages engineer returns error token expires retry fresh configuration changes take effect next turn report ' +
  'lists every charge hour model export latency rose after deploy rollback fixed measured queue depth memory stayed flat ' +
  'migration adds index shipment carrier address postcode delayed damaged replacement warranty subscription renewal'
).split(' ')

export type CompactionChatResult = {
  /** Lines for BENCHMARKS.md (after a `###` heading), and the same table for stdout. */
  lines: string[]
  table: string
  seconds: number
  scenario: CompactionScenario
  /** The cache share after the chat passed its window, and what the matrix prints beside it. */
  figures: { share: number; read: number; all: number; firstPast: number; compactionRuns: number; costShare: number; droppedTurns: number; compactionInputShare: number }
}

type TurnRecord = {
  index: number
  kind: 'call' | 'result'
  ms: number
  input: number
  cacheRead: number
  output: number
  cost: Decimal
  generated: number
  reused: number
  summaries: number
  dropped: number
  compacting: boolean
}

export async function compactionChat(removeLater: (dir: string) => void, scenario: CompactionScenario = SMALL_WINDOW_TOOLS): Promise<CompactionChatResult> {
  const MODEL = scenario.model
  const AIM_CACHE_SHARE = scenario.aim
  const TURNS = scenario.turns
  const random = rng(10)
  const between = (lo: number, hi: number) => Math.floor(lo + random() * (hi - lo + 1))
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!
  const sentence = (words: number) => {
    const out = Array.from({ length: words }, () => pick(WORDS))
    out[0] = out[0]![0]!.toUpperCase() + out[0]!.slice(1)
    return `${out.join(' ')}.`
  }
  /** About `words` words of prose in sentences of 6-16 words; no line starts with `/`. */
  const prose = (words: number) => {
    const sentences: string[] = []
    for (let n = 0; n < words; ) {
      const k = Math.min(words - n, between(6, 16))
      sentences.push(sentence(k))
      n += k
    }
    return sentences.join(' ')
  }
  /** JSON records, one a line, until the text estimates at `tokens` tokens or more. */
  const records = (tokens: number) => {
    const lines: string[] = []
    let text = ''
    for (let i = 0; estimateTokens(text) < tokens; i++) {
      lines.push(JSON.stringify({ id: `rec_${between(10_000, 99_999)}`, status: pick(['open', 'pending', 'shipped', 'closed', 'refunded']), total: between(100, 99_999) / 100, note: prose(between(4, 14)) }))
      text = lines.join('\n')
    }
    return text
  }

  const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-compaction-'))
  removeLater(dataDir)
  const db = openDatabase(join(dataDir, 'parley.db'))
  const store = createStore(db)
  const org = store.organisations.create('Benchmark', 'bench')
  const { key } = store.apiKeys.create(org.id, 'bench')
  store.balance.add(org.id, 'topup', '1000000')
  const chatId = store.chats.create({ orgId: org.id, namespace: NAMESPACE, title: 'tool-using chat', description: null, userMetadata: {} }).id
  db.close()

  const server = await startServer({ env: { DATA_DIR: dataDir, LOG_LEVEL: 'warn' } })
  if (/pk_/.test(server.stdout())) throw new Error('the server bootstrapped a dev organisation on a seeded database')
  const headers = { authorization: `Bearer ${key}` }
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  const getJson = async (path: string) => {
    const response = await fetch(`${server.url}${path}`, { headers, signal: AbortSignal.timeout(10_000) })
    const text = await response.text()
    if (!response.ok) throw new Error(`GET ${path}: HTTP ${response.status} ${text.slice(0, 300)}`)
    return JSON.parse(text)
  }

  if (scenario.headroom !== null) {
    const response = await fetch(`${server.url}/api/v1/config/budgets`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ namespace: NAMESPACE, budget: { version: 3, headroom: scenario.headroom, history_mode: 'summarize' } }),
      signal: AbortSignal.timeout(10_000),
    })
    if (!response.ok) throw new Error(`publishing the budget: HTTP ${response.status} ${await response.text()}`)
  }

  const turns: TurnRecord[] = []
  const sizes = { promptTokens: 0, resultTokens: 0, followUps: 0 }
  let pending: { tool_use_id: string; tool_name: string } | null = null
  const started = performance.now()
  let httpMs = 0
  for (let index = 0; index < TURNS; index++) {
    let input: unknown[]
    let kind: TurnRecord['kind']
    if (!scenario.tools) {
      kind = 'call'
      const text = prose(between(...scenario.promptWords))
      sizes.promptTokens += estimateTokens(text)
      input = [{ type: 'prompt', text }]
    } else if (pending === null) {
      kind = 'call'
      const tool = pick(TOOLS)
      const args = JSON.stringify({ [Object.keys(tool.input_schema.properties)[0]!]: `${pick(WORDS)}_${between(1_000, 99_999)}` })
      const text = `${prose(between(...scenario.promptWords))}\n/tool ${tool.name} ${args}`
      sizes.promptTokens += estimateTokens(text)
      input = [{ type: 'prompt', text }]
    } else {
      kind = 'result'
      const text = records(between(...scenario.resultTokens))
      sizes.resultTokens += estimateTokens(text)
      input = [{ type: 'tool_result', tool_use_id: pending.tool_use_id, tool_name: pending.tool_name, text }]
      if (random() < 0.5) {
        sizes.followUps++
        input.push({ type: 'prompt', text: prose(between(5, 25)) })
      }
    }
    const body = JSON.stringify(scenario.tools ? { model: MODEL, input, tools: TOOLS } : { model: MODEL, input })
    const o = await sse({ agent, url: server.url, path: `/api/v1/chats/${chatId}/responses`, headers, body, keep: true, timeoutMs: 30_000 })
    httpMs += o.totalMs
    if (o.status !== 200 || o.terminal !== 'done') {
      throw new Error(`turn ${index + 1}: HTTP ${o.status}, ${o.terminal}: ${o.body.slice(0, 300)} ${JSON.stringify(o.frames.at(-1) ?? null)}\n${server.stderr().slice(-2_000)}`)
    }
    const runId = JSON.parse(o.frames[0]!.data).run_id as string
    const done = JSON.parse(o.frames.at(-1)!.data)
    if (!scenario.tools) {
      if (done.pending_tool_calls.length !== 0) throw new Error(`turn ${index + 1}: a tool call without tools`)
    } else if (kind === 'call') {
      if (done.stop_reason !== 'tool_use' || done.pending_tool_calls.length !== 1) {
        throw new Error(`turn ${index + 1}: expected one tool call, got stop reason ${done.stop_reason}, ${JSON.stringify(done.pending_tool_calls)}`)
      }
      pending = done.pending_tool_calls[0]
    } else {
      if (done.pending_tool_calls.length !== 0) throw new Error(`turn ${index + 1}: calls still pending after the tool result`)
      pending = null
    }
    // Untimed: what packing did, from the run's manifest.
    const context = (await getJson(`/api/v1/runs/${runId}`)).manifest.context
    turns.push({
      index,
      kind,
      ms: o.totalMs,
      input: done.usage.input_tokens,
      cacheRead: done.usage.cache_read_tokens,
      output: done.usage.output_tokens,
      cost: new Decimal(done.cost),
      generated: done.compaction?.blocks_generated ?? 0,
      reused: done.compaction?.blocks_reused ?? 0,
      summaries: context?.summaries?.length ?? 0,
      dropped: context?.dropped?.dropped ?? 0,
      compacting: o.counts.compacting !== undefined,
    })
  }
  const seconds = (performance.now() - started) / 1000
  if (process.env.BENCH_TRACE) for (const t of turns) log(`#${t.index + 1} ${t.kind} in ${t.input} read ${t.cacheRead} (${((100 * t.cacheRead) / (t.input + t.cacheRead)).toFixed(0)}%) summaries ${t.summaries} gen ${t.generated} reused ${t.reused} dropped ${t.dropped}`)
  agent.destroy()

  // Every run of the chat, billed: customer runs as `usage`, compaction runs as `compaction`.
  const report = await getJson(`/api/v1/usage?range=24h&group_by=entry_type&namespace=${encodeURIComponent(NAMESPACE)}`)
  const row = (type: string) => report.rows.find((r: any) => r.group?.entry_type === type)
  const usageRow = row('usage')
  const compactionRow = row('compaction')
  await server.stop()

  const customerCost = turns.reduce((sum, t) => sum.plus(t.cost), new Decimal(0))
  if (usageRow.runs !== TURNS) throw new Error(`usage report: ${usageRow.runs} customer runs, expected ${TURNS}`)
  if (!new Decimal(usageRow.cost).equals(customerCost)) throw new Error(`usage report: customer cost ${usageRow.cost}, the done frames say ${customerCost}`)
  const compactionRuns: number = compactionRow?.runs ?? 0
  // Input tokens (cache reads included) of compaction runs against the customer runs'.
  const tokensIn = (r: any) => (r?.input_tokens ?? 0) + (r?.cache_read_tokens ?? 0)
  const compactionInput = tokensIn(compactionRow)
  const customerInput = turns.reduce((n, t) => n + t.input + t.cacheRead, 0)
  const compactionCost = new Decimal(compactionRow?.cost ?? 0)
  const totalCost = customerCost.plus(compactionCost)
  const costShare = totalCost.isZero() ? 0 : compactionCost.div(totalCost).toNumber()
  const generated = turns.reduce((n, t) => n + t.generated, 0)
  const reusedTurns = turns.filter((t) => t.reused > 0).length
  const compactingTurns = turns.filter((t) => t.compacting).length
  const per100 = (n: number) => (n * 100) / TURNS

  const firstPast = turns.findIndex((t) => t.summaries > 0 || t.dropped > 0)
  const firstDrop = turns.findIndex((t) => t.dropped > 0)
  const droppedTurns = turns.filter((t) => t.dropped > 0).length
  const share = (list: TurnRecord[]) => {
    const read = list.reduce((n, t) => n + t.cacheRead, 0)
    const all = list.reduce((n, t) => n + t.input + t.cacheRead, 0)
    return { read, all, share: all === 0 ? Number.NaN : read / all }
  }
  const after = firstPast === -1 ? [] : turns.slice(firstPast + 1)
  const pastShare = share(after)
  const ms = (list: TurnRecord[]) => Float64Array.from(list.map((t) => t.ms)).sort()
  const p = (list: TurnRecord[], q: number) => (list.length === 0 ? Number.NaN : percentile(ms(list), q))
  const pct = (x: number, digits = 1) => (Number.isNaN(x) ? 'n/a' : `${(x * 100).toFixed(digits)} %`)
  const millis = (x: number) => (Number.isNaN(x) ? 'n/a' : `${fmt(x, 1)} ms`)
  const range = (list: TurnRecord[]) => (list.length === 0 ? '-' : list.length === 1 ? `#${list[0]!.index + 1}` : `#${list[0]!.index + 1}-#${list.at(-1)!.index + 1}`)

  // The chat's phases: inside its window; the first turn that needed summaries; summaries that fit; summaries dropped too.
  const end = turns.length
  const cut = (from: number, to: number) => (from < 0 ? [] : turns.slice(from, Math.max(from, to)))
  const phases: { name: string; list: TurnRecord[] }[] = [
    { name: 'inside the window', list: cut(0, firstPast === -1 ? end : firstPast) },
    { name: 'first turn that packed a summary', list: cut(firstPast, firstPast + 1) },
    { name: 'summaries fit (no history dropped)', list: cut(firstPast === -1 ? -1 : firstPast + 1, firstDrop === -1 ? end : firstDrop) },
    { name: 'summaries no longer fit (oldest dropped, `history_dropped`)', list: cut(firstDrop === -1 ? -1 : Math.max(firstDrop, firstPast + 1), end) },
    { name: '**every turn after the first that packed a summary** (the figure)', list: after },
  ]
  const phaseTable = [
    '| Phase | turns | customer input tokens (input + cache read) | served from the prefix cache | turns that compacted | summaries made | ms per turn p50 |',
    '|---|--:|--:|--:|--:|--:|--:|',
    ...phases.map(({ name, list }) => {
      const s = share(list)
      return `| ${name} | ${range(list)} (${list.length}) | ${fmt(s.all)} | ${pct(s.share)} | ${list.filter((t) => t.compacting).length} | ${list.reduce((n, t) => n + t.generated, 0)} | ${millis(p(list, 50))} |`
    }),
  ].join('\n')

  const verdict = pastShare.share >= AIM_CACHE_SHARE ? 'met' : 'missed'
  const fitting = phases[2]!.list
  const dropping = phases[3]!.list
  const median = (values: number[]) => (values.length === 0 ? Number.NaN : percentile(Float64Array.from(values).sort(), 50))
  const changed = dropping.filter((t, k) => k > 0 && (t.dropped !== dropping[k - 1]!.dropped || t.summaries !== dropping[k - 1]!.summaries)).length
  const result = [
    `- **Result**: ${fmt(per100(compactionRuns), 1)} summaries made per 100 turns; compaction ${pct(costShare)} of the chat's cost;`,
    `  ${pct(pastShare.share)} of the customer runs' input served from the prefix cache after the chat passed its window (turn #${firstPast + 1}), aim ≥ ${AIM_CACHE_SHARE * 100} %: **${verdict}**.`,
    `  Context: ${fmt(TURNS / (httpMs / 1000), 1)} turns/s, ${millis(p(turns, 50))} per turn (p50).`,
    ...(dropping.length > 0
      ? [
          `  While the summaries fit (turns ${range(fitting)}) the cache serves ${pct(share(fitting).share)}; a turn that makes a summary moves the verbatim start and reads less.`,
          `  Once the summaries alone no longer fit (turn ${range(dropping.slice(0, 1))} on), the oldest summaries are dropped with \`history_dropped\`, ${Math.min(...dropping.map((t) => t.summaries))}-${Math.max(...dropping.map((t) => t.summaries))} summaries`,
          `  packed, and the dropped range or the number of summaries differs from the previous turn's in ${changed} of ${dropping.length - 1} turns (decision 013: several go at a time);`,
          `  the median turn reads ${fmt(median(dropping.map((t) => t.cacheRead)))} of ~${fmt(median(dropping.map((t) => t.input + t.cacheRead)))} prompt tokens from the cache: ${pct(share(dropping).share)} served from the cache in that phase, the steady state of a longer chat.`,
        ]
      : []),
  ]
  const table = [
    '| Figure | Value |',
    '|---|--:|',
    `| turns (customer runs; ${TURNS / 2} tool cycles) | ${TURNS} |`,
    `| **summaries made per 100 turns** (compaction runs; sum of \`blocks_generated\`) | **${fmt(per100(compactionRuns), 1)}** (${compactionRuns}; ${generated}) |`,
    `| turns that sent \`compacting\` / reused summaries / dropped history | ${compactingTurns} / ${reusedTurns} / ${droppedTurns} |`,
    `| **compaction cost / chat cost** | **${pct(costShare)}** (${compactionCost.toFixed()} of ${totalCost.toFixed()} USD) |`,
    `| **input served from the prefix cache after the chat passed its window** (turns ${range(after)}; aim ≥ ${AIM_CACHE_SHARE * 100} %) | **${pct(pastShare.share)}** (${fmt(pastShare.read)} of ${fmt(pastShare.all)} tokens; **${verdict}**) |`,
    `| turns/s (sequential, one chat; request to end of stream) | ${fmt(TURNS / (httpMs / 1000), 1)} |`,
    `| ms per turn p50 / p90 | ${millis(p(turns, 50))} / ${millis(p(turns, 90))} |`,
  ].join('\n')

  const lines = [
    `- **Chat**: one chat on \`${MODEL}\` (8,192-token window) under the platform defaults (\`history_mode: summarize\`, eager compaction off, no budget published),`,
    `  through the real server (\`node src/main.ts\`, fresh \`DATA_DIR\`, an organisation with 1,000,000 USD of credit seeded through the store),`,
    `  ${TURNS} turns sent one after the other over keep-alive HTTP, each request carrying the same ${TOOLS.length} tool definitions.`,
    `  A cycle is two turns: a prompt of 80-200 words ending in a \`/tool NAME {json}\` line (echo plus a tool call, \`tool_use\`), then the`,
    `  tool's result (100-400 tokens of JSON records) with, in ${sizes.followUps} of ${TURNS / 2} cycles, a short prompt (5-25 words). Seeded generator (\`rng(10)\`);`,
    `  ${fmt(sizes.promptTokens)} tokens of prompts and ${fmt(sizes.resultTokens)} of tool results sent in all, each echoed back by the sandbox.`,
    '',
    table,
    '',
    phaseTable,
    '',
    ...result,
    `- **Summaries**: compaction runs counted from the usage report (\`group_by=entry_type\`, the chat's namespace), which also gives`,
    `  their cost; the customer runs' cost there equals the sum of the \`done\` frames' \`cost\` (checked). The cache share is`,
    '  sum(`cache_read_tokens`) / sum(`input_tokens` + `cache_read_tokens`) of the `done` frames\' usage; a phase is told from each run\'s manifest',
    '  (`context.summaries`, `context.dropped`). The figure leaves out the first turn that packed a summary.',
    `- **Time**: ${fmt(seconds, 1)} s for the chat, including one untimed \`GET /api/v1/runs/{id}\` per turn; ms per turn are from sending the request to the stream's end,`,
    '  the compaction runs of a turn that made summaries included. No baseline run: the phases of the same chat are the comparison.',
    '  The machine has 2 cores shared with other work, so the times are noisy; the counts, costs and cache shares are not (seeded',
    '  inputs, a deterministic sandbox: repeated runs give the same figures).',
  ]
  return {
    lines,
    table: `${table}\n\n${phaseTable}`,
    seconds,
    scenario,
    figures: { share: pastShare.share, read: pastShare.read, all: pastShare.all, firstPast: firstPast + 1, compactionRuns, costShare, droppedTurns, compactionInputShare: compactionInput / Math.max(1, customerInput) },
  }
}

/**
 * The cache-share matrix (issue 34): every budget the issue names, with and without tools. The
 * default budget is headroom 0.1 with nothing published; a 128k chat (sandbox/echo) passes its
 * 115,200-token input budget after ~60 turns of long prompts, and the 8k window (sandbox/echo-8k)
 * after ~20 turns. Prompts on the 128k window are 300-900 words, so the chat reaches the point
 * where its summaries no longer all fit their share and are merged within the run.
 */
const LONG = { promptWords: [300, 900] as [number, number], resultTokens: [400, 1_600] as [number, number] }
export const CACHE_SCENARIOS: CompactionScenario[] = [
  { label: '128k window, default budget (headroom 0.1), no tools', model: 'sandbox/echo', window: 128_000, headroom: null, tools: false, turns: 260, ...LONG, aim: 0.8 },
  { label: '128k window, default budget (headroom 0.1), tools', model: 'sandbox/echo', window: 128_000, headroom: null, tools: true, turns: 260, ...LONG, aim: 0.8 },
  { label: '128k window, headroom 0.5, no tools', model: 'sandbox/echo', window: 128_000, headroom: 0.5, tools: false, turns: 200, ...LONG, aim: 0.8 },
  { label: '128k window, headroom 0.5, tools', model: 'sandbox/echo', window: 128_000, headroom: 0.5, tools: true, turns: 200, ...LONG, aim: 0.8 },
  { ...SMALL_WINDOW_TOOLS, label: '8k window, default budget (headroom 0.1), no tools', tools: false, aim: 0.8 },
  SMALL_WINDOW_TOOLS,
  { ...SMALL_WINDOW_TOOLS, label: '8k window, headroom 0.5, no tools', headroom: 0.5, tools: false, aim: 0.8 },
  { ...SMALL_WINDOW_TOOLS, label: '8k window, headroom 0.5, tools', headroom: 0.5, aim: 0.6 },
  // The small window of decision 013 (983-token input budget): summaries are merged every few jumps.
  { ...SMALL_WINDOW_TOOLS, label: '8k window, headroom 0.88, no tools', headroom: 0.88, tools: false, promptWords: [20, 60], resultTokens: [40, 150], aim: 0.6 },
  { ...SMALL_WINDOW_TOOLS, label: '8k window, headroom 0.88, tools', headroom: 0.88, promptWords: [20, 60], resultTokens: [40, 150], aim: 0.6 },
]

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { removeLater, cleanup } = installCleanup()
  runMain(async () => {
    // BENCH_SCENARIO=<substring of a label> runs only the matching scenarios.
    const only = process.env.BENCH_SCENARIO
    for (const scenario of CACHE_SCENARIOS.filter((s) => only === undefined || s.label.includes(only))) {
      const result = await compactionChat(removeLater, scenario)
      if (process.env.BENCH_TABLES) process.stdout.write(`${result.table}\n`)
      const f = result.figures
      log(`${scenario.label}: cache share ${(100 * f.share).toFixed(1)} % after turn #${f.firstPast}; ${f.compactionRuns} compaction runs; compaction input ${(100 * f.compactionInputShare).toFixed(1)} % of customer input; ${f.droppedTurns} turns dropped history; ${result.seconds.toFixed(1)} s`)
    }
  }, cleanup)
}
