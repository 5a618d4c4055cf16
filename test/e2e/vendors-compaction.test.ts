import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Decimal } from 'decimal.js'
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest'
import { summaryText } from '../../src/domain/context/render-summary.ts'
import { customerCost } from '../../src/domain/pricing/customer-cost.ts'
import type { Usage } from '../../src/domain/pricing/usage.ts'
import { estimateTokens } from '../../src/domain/tokens/estimate-tokens.ts'
import { SUMMARISATION_INSTRUCTION } from '../../src/providers/compaction-prompt.ts'
import { REPO_ROOT, startServer, type ServerProcess } from './server-process.ts'
import { deltaText, moneyUnits, postTurn, request, type SseFrame } from './turn-client.ts'
import { COUNTED_OUTPUT_TOKENS } from './vendor-fixtures/counted-usage.ts'
import { FIXTURES, type Vendor } from './vendor-fixtures/index.ts'
import { startReplayServer, type RecordedRequest, type ReplayServer } from './vendor-replay-server.ts'

/**
 * Compaction (issue 10, decisions §5.3) through real vendor wire formats: the real server process,
 * Anthropic's and OpenAI's keys and base URLs on the loopback replay server. A namespace publishes
 * `headroom: 0.9` (input budget = floor(context_window × 0.1)), a chat grows past it with long
 * prompts, and the turn that no longer fits says `compacting`, sends one summarisation request per
 * block to the vendor through the same @ai-sdk provider, and sends the customer request with the
 * summaries in place of the old parts. The next turn reuses them; the usage report bills them.
 *
 * Every vendor call is answered with the vendor's plain fixture text, but with usage that follows the
 * request, as a vendor's does: the replay server's counted-usage mode reports the input tokens it
 * counted for each request (factor 1: what our estimator counts), split into fresh input and cache
 * reads (and, for Anthropic, cache writes) by the shares below. A fixed recorded usage for every call
 * would teach Parley a token correction from the summarisation requests that no vendor would give.
 */

const KEYS = { anthropic: 'sk-ant-api03-replay-anthropic-key', openai: 'sk-proj-replay-openai-key' } as const
const DECIMAL = /^\d+(\.\d+)?$/
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const DELTA_KIND: Record<string, string> = { text: 'text', reasoning: 'reasoning', refusal: 'refusal', tool_call: 'tool_input' }
/** The replay server's counted-usage mode: which share of each request's counted input its usage says was read from and written to the cache. */
const COUNTED = { cacheReadShare: 0.25, cacheWriteShare: 0.5, fixtureText: true } as const
const cacheRead = (counted: number) => Math.floor(counted * COUNTED.cacheReadShare)
const cacheWrite = (counted: number) => Math.floor(counted * COUNTED.cacheWriteShare)

/** One text item of a vendor request, with where it sits. */
type TextItem = { role: string; text: string }

type VendorCase = {
  vendor: 'anthropic' | 'openai'
  /** The catalogue model the chat runs on (its context_window sets the input budget). */
  model: string
  vendorModelId: string
  path: string
  /** The system prompt of a request ('' when none). */
  system: (body: any) => string
  /** Every text item of the conversation (not the system prompt), in order. */
  texts: (body: any) => TextItem[]
  maxTokens: (body: any) => unknown
  /** The usage Parley reads from a counted-usage answer to a request the replay server counted at `counted` input tokens. */
  usage: (counted: number) => Usage
}

const CASES: VendorCase[] = [
  {
    vendor: 'anthropic',
    // 200k window: an input budget of 20 000 tokens (Sonnet 4.5's 1M window would take 100 000).
    model: 'anthropic/claude-haiku-4.5',
    vendorModelId: 'claude-haiku-4-5-20251001',
    path: '/anthropic/v1/messages',
    system: (body) => (body.system ?? []).map((b: any) => b.text).join('\n'),
    texts: (body) => body.messages.flatMap((m: any) => m.content.filter((c: any) => c.type === 'text').map((c: any) => ({ role: m.role, text: c.text }))),
    maxTokens: (body) => body.max_tokens,
    // Anthropic reports fresh input, cache reads and cache writes apart; the count is their sum.
    usage: (counted) => ({
      input_tokens: counted - cacheRead(counted) - cacheWrite(counted),
      output_tokens: COUNTED_OUTPUT_TOKENS,
      reasoning_tokens: 0,
      cache_read_tokens: cacheRead(counted),
      cache_write_tokens: cacheWrite(counted),
    }),
  },
  {
    vendor: 'openai',
    // 400k window: an input budget of 40 000 tokens.
    model: 'openai/gpt-5',
    vendorModelId: 'gpt-5',
    path: '/openai/v1/responses',
    // A reasoning model takes the system prompt as a developer message (the SDK's systemMessageMode).
    system: (body) =>
      body.input
        .filter((i: any) => i.role === 'system' || i.role === 'developer')
        .map((i: any) => (typeof i.content === 'string' ? i.content : i.content.map((c: any) => c.text).join('\n')))
        .join('\n'),
    texts: (body) =>
      body.input.flatMap((i: any) =>
        i.role === 'user' || i.role === 'assistant'
          ? typeof i.content === 'string'
            ? [{ role: i.role, text: i.content }]
            : i.content.filter((c: any) => c.type === 'input_text' || c.type === 'output_text').map((c: any) => ({ role: i.role, text: c.text }))
          : [],
      ),
    maxTokens: (body) => body.max_output_tokens,
    // OpenAI reports every input token with the cached ones among them (and no cache writes); Parley bills the rest as input.
    usage: (counted) => ({
      input_tokens: counted - cacheRead(counted),
      output_tokens: COUNTED_OUTPUT_TOKENS,
      reasoning_tokens: 0,
      cache_read_tokens: cacheRead(counted),
      cache_write_tokens: 0,
    }),
  },
]

const CATALOGUE = JSON.parse(readFileSync(join(REPO_ROOT, 'catalogue/models.json'), 'utf8')) as { models: any[] }
const catalogueEntry = (name: string) => {
  const entry = CATALOGUE.models.find((m) => m.name === name)
  if (!entry) throw new Error(`no catalogue model ${name}`)
  return entry
}

const WORDS =
  'harbour lanterns kingfishers driftwood estuary moorings cobblestones willowherb marshland nightingales saltmarsh ferrymen boathouses granaries orchards millstreams'.split(' ')

/** About `tokens` tokens of prose, different for every seed, never a line starting with `/`. */
function prose(seed: number, tokens: number): string {
  const words = [`Part ${seed}:`]
  let count = estimateTokens(words[0]!)
  let i = seed
  while (count < tokens) {
    const word = WORDS[i % WORDS.length]!
    words.push(word)
    count += estimateTokens(` ${word}`)
    i = (i * 7 + 3) % 9973
  }
  return words.join(' ')
}

/** A summarisation request: our instruction as the system prompt. */
const isSummarisation = (c: VendorCase, r: RecordedRequest) => c.system(r.body) === SUMMARISATION_INSTRUCTION

/** The block a summarisation request covers, read from its transcript header. */
const transcriptRange = (c: VendorCase, r: RecordedRequest): string | null => {
  const header = c.texts(r.body).find((t) => t.text.startsWith('Transcript of ledger ordinals '))
  return header ? /^Transcript of ledger ordinals (\d+-\d+):/.exec(header.text)?.[1] ?? null : null
}

/** Every block of an Anthropic request that carries cache_control, named by where it is. */
const cacheControlled = (body: any) => [
  ...(Array.isArray(body.system) ? body.system : []).flatMap((b: any, i: number) => (b.cache_control ? [{ where: `system/${i}`, cache_control: b.cache_control }] : [])),
  ...(body.tools ?? []).flatMap((t: any, i: number) => (t.cache_control ? [{ where: `tools/${i}`, cache_control: t.cache_control }] : [])),
  ...body.messages.flatMap((m: any, i: number) =>
    m.content.flatMap((b: any, j: number) => (b.cache_control ? [{ where: `${m.role}/${i}/${b.type}/${j}`, cache_control: b.cache_control }] : [])),
  ),
]

/**
 * The turn grammar with compaction: `run`, `config_warnings`, `translation_warnings`, then at most
 * one `compacting` (with a repeated `config_warnings` allowed after it), then blocks, then `done`.
 * A `translation_warnings` frame with the vendor's own warnings may come again before content (decision 017).
 */
function expectWellFormed(frames: SseFrame[]): void {
  const events = frames.map((f) => f.event)
  const trace = events.join(',')
  expect(events.slice(0, 3), trace).toEqual(['run', 'config_warnings', 'translation_warnings'])
  expect(events.at(-1), `${trace} ${JSON.stringify(frames.at(-1)?.data)}`).toBe('done')
  expect(events.filter((e) => e === 'compacting').length, trace).toBeLessThanOrEqual(1)
  let open: string | null = null
  let content = false
  for (const f of frames.slice(3, -1)) {
    if (f.event === 'compacting' || f.event === 'config_warnings' || f.event === 'translation_warnings') {
      expect(content, `${f.event} after the content began: ${trace}`).toBe(false)
    } else if (f.event === 'block_start') {
      expect(open, trace).toBeNull()
      open = f.data.kind
      content = true
    } else if (f.event === 'delta') {
      expect(open, trace).not.toBeNull()
      expect(f.data.kind, trace).toBe(DELTA_KIND[open!])
    } else if (f.event === 'block_stop') {
      expect(open, trace).not.toBeNull()
      open = null
    } else throw new Error(`unexpected ${f.event} frame: ${trace}`)
  }
  expect(open, trace).toBeNull()
}

type Turn = { frames: SseFrame[]; events: string[]; runId: string; done: any; vendorRequests: RecordedRequest[] }

describe('compaction through the Anthropic and OpenAI wire formats (real server process, replayed vendors)', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-e2e-vendors-compaction-'))
  let replay: ReplayServer
  let server: ServerProcess | undefined
  let devKey = ''

  const api = (path: string, init: { method?: string; body?: unknown } = {}) => request(server!.url, path, { key: devKey, ...init })
  const ok = async (path: string, init: { method?: string; body?: unknown } = {}, status = 200) => {
    const res = await api(path, init)
    expect(res.status, `${init.method ?? 'GET'} ${path}: ${res.text}`).toBe(status)
    return res.json()
  }
  const getRun = (runId: string) => ok(`/api/v1/runs/${runId}`)

  const turn = async (c: VendorCase, chatId: string, text: string): Promise<Turn> => {
    const before = replay.requestsTo(c.vendor).length
    const answer = await postTurn(server!.url, devKey, chatId, { model: c.model, input: [{ type: 'prompt', text }] }, 60_000)
    if (!answer.ok) throw new Error(`expected a stream, got HTTP ${answer.status}: ${answer.text}\n${server!.stderr()}`)
    expect(await answer.closed).toBe('end')
    expectWellFormed(answer.frames)
    return {
      frames: answer.frames,
      events: answer.frames.map((f) => f.event),
      runId: answer.frames[0]!.data.run_id,
      done: answer.frames.at(-1)!.data,
      vendorRequests: replay.requestsTo(c.vendor).slice(before),
    }
  }

  beforeAll(async () => {
    replay = await startReplayServer({ reportCountedUsage: COUNTED })
    server = await startServer({
      env: {
        DATA_DIR: dataDir,
        NODE_ID: 'e2e-vendors-compaction',
        SANDBOX: 'on',
        ANTHROPIC_API_KEY: KEYS.anthropic,
        ANTHROPIC_BASE_URL: replay.baseUrl('anthropic'),
        OPENAI_API_KEY: KEYS.openai,
        OPENAI_BASE_URL: replay.baseUrl('openai'),
      },
      timeoutMs: 25_000,
    })
    devKey = readFileSync(join(dataDir, 'dev-api-key.txt'), 'utf8').trim()
  })

  afterEach(() => replay.clearQueues())

  afterAll(async () => {
    await server?.stop()
    await replay?.close()
    rmSync(dataDir, { recursive: true, force: true })
  })

  describe.each(CASES)('$vendor ($model)', (c) => {
    const fixture = FIXTURES[c.vendor as Vendor]
    const namespace = `compaction-${c.vendor}`
    const entry = catalogueEntry(c.model)
    const inputBudget = Math.floor(entry.context_window * 0.1)

    test('the turn that no longer fits compacts on the chat’s model; the next reuses; usage bills the compaction runs', { timeout: 180_000 }, async () => {
      const published = await ok('/api/v1/config/budgets', { method: 'POST', body: { namespace, budget: { version: 3, headroom: 0.9, history_mode: 'summarize' } } })
      expect(published).toMatchObject([{ namespace, is_active: true, budget: { headroom: 0.9, history_mode: 'summarize' } }])
      const chatId = (await ok('/api/v1/chats', { method: 'POST', body: { namespace } }, 201)).id as string

      // Grow the chat with prompts of a third of the input budget each until a turn compacts.
      const LONG = Math.floor(inputBudget / 3)
      let compacted: Turn | null = null
      let turns = 0
      for (let i = 0; i < 8 && compacted === null; i++) {
        turns++
        const t = await turn(c, chatId, prose(i, LONG))
        const manifest = (await getRun(t.runId)).manifest
        expect(manifest.context.input_budget).toBe(inputBudget)
        expect(manifest.context.tokens.total).toBeLessThanOrEqual(inputBudget)
        if (t.events.includes('compacting')) compacted = t
        else {
          expect(t.done.compaction, `turn ${i + 1}`).toBeNull()
          expect(t.vendorRequests.filter((r) => isSummarisation(c, r)), `turn ${i + 1}`).toEqual([])
          expect(t.vendorRequests).toHaveLength(1)
        }
      }
      if (compacted === null) throw new Error(`no turn compacted within 8 prompts of ${LONG} tokens (input budget ${inputBudget})`)
      const t = compacted

      // The stream: `compacting` with blocks to make, before the content; done reports them generated.
      const compacting = t.frames.find((f) => f.event === 'compacting')!
      expect(compacting.data.blocks).toBeGreaterThan(0)
      expect(compacting.data.in_progress_elsewhere).toBe(0)
      expect(t.events.indexOf('compacting')).toBeLessThan(t.events.indexOf('block_start'))
      expect(t.done.compaction.blocks_generated).toBeGreaterThan(0)
      expect(t.done.compaction).toEqual({ blocks_generated: compacting.data.blocks, blocks_reused: 0, in_progress_elsewhere: 0 })
      expect(t.done.stop_reason).toBe('end_turn')
      expect(deltaText(t.frames, 'text')).toBe(fixture.text.text)

      // The manifest lists the summaries made, each by its own compaction run.
      const customer = await getRun(t.runId)
      const summaries = customer.manifest.context.summaries as { first_ordinal: number; last_ordinal: number; run_id: string; tokens: number; reused: boolean }[]
      expect(summaries).toHaveLength(t.done.compaction.blocks_generated)
      for (const s of summaries) {
        expect(s.reused).toBe(false)
        expect(s.run_id).toMatch(UUID)
      }
      expect(customer.manifest.context.dropped).toBeNull()

      // The vendor: one summarisation request per block, then the customer request.
      const summarisations = t.vendorRequests.filter((r) => isSummarisation(c, r))
      expect(summarisations).toHaveLength(summaries.length)
      expect(t.vendorRequests).toHaveLength(summaries.length + 1)
      expect(isSummarisation(c, t.vendorRequests.at(-1)!)).toBe(false)
      expect(summarisations.map((r) => transcriptRange(c, r)).sort()).toEqual(summaries.map((s) => `${s.first_ordinal}-${s.last_ordinal}`).sort())
      for (const r of summarisations) {
        expect(r.method).toBe('POST')
        expect(r.path).toBe(c.path)
        expect(r.body.model).toBe(c.vendorModelId)
        expect(r.body.stream).toBe(true)
        expect(c.maxTokens(r.body)).toBe(400)
        // One user message: the transcript header, then the block's parts; no tools.
        const texts = c.texts(r.body)
        expect(new Set(texts.map((x) => x.role))).toEqual(new Set(['user']))
        expect(texts[0]!.text).toMatch(/^Transcript of ledger ordinals \d+-\d+:$/)
        expect(texts.slice(1).every((x) => /^\[#\d+ (prompt|message|reasoning|tool_call|tool_result)\]\n/.test(x.text)), JSON.stringify(texts.map((x) => x.text.slice(0, 40)))).toBe(true)
        expect(texts.some((x) => x.text.includes('Part '))).toBe(true)
        // The transcript is the block's parts in ledger order, from its first ordinal to its last.
        const ordinals = texts.slice(1).map((x) => Number(/^\[#(\d+) /.exec(x.text)![1]))
        expect(ordinals).toEqual([...ordinals].sort((a, b) => a - b))
        expect(`${ordinals[0]}-${ordinals.at(-1)}`).toBe(transcriptRange(c, r))
        expect(r.body.tools ?? []).toEqual([])
        // Parley keeps the history: OpenAI is asked to keep none of a summary call (decision 026).
        if (c.vendor === 'openai') expect(r.body.store).toBe(false)
      }

      // Each compaction run: origin compaction, succeeded, billed from the usage the vendor reported
      // for its own summarisation request (the input tokens the replay server counted for it).
      const compactionCosts: string[] = []
      const compactionUsages: Usage[] = []
      for (const s of summaries) {
        const r = await getRun(s.run_id)
        expect(r).toMatchObject({ id: s.run_id, chat_id: chatId, origin: 'compaction', status: 'succeeded', model: c.model, namespace, is_live: false, error: null })
        const summarisation = summarisations.filter((q) => transcriptRange(c, q) === `${s.first_ordinal}-${s.last_ordinal}`)
        expect(summarisation).toHaveLength(1)
        const counted = summarisation[0]!.countedInputTokens
        expect(counted, 'the replay server counts every streaming request').not.toBeNull()
        const usage = c.usage(counted!)
        expect(r.usage).toEqual(usage)
        expect(r.cost).not.toBeNull()
        expect(r.cost).toMatch(DECIMAL)
        expect(r.cost).toBe(customerCost(usage, entry, r.manifest.markup_percent))
        expect(moneyUnits(r.cost)).toBeGreaterThan(0n)
        expect(r.manifest).toMatchObject({ purpose: 'compaction', max_tokens: 400, block: { first_ordinal: s.first_ordinal, last_ordinal: s.last_ordinal } })
        compactionCosts.push(r.cost)
        compactionUsages.push(usage)
      }

      // The customer request carries each summary (the fixture's text) in place of its block.
      const customerRequest = t.vendorRequests.at(-1)!
      const sent = c.texts(customerRequest.body).map((x) => x.text)
      for (const s of summaries) expect(sent).toContain(summaryText(s.first_ordinal, s.last_ordinal, fixture.text.text))
      expect(sent.filter((x) => x.startsWith('<conversation_summary'))).toHaveLength(summaries.length)
      if (c.vendor === 'anthropic') {
        const marked = cacheControlled(customerRequest.body)
        expect(marked.length, `expected 1–4 cache_control breakpoints on the compacted Anthropic request, found none: ${JSON.stringify(marked)}`).toBeGreaterThanOrEqual(1)
        expect(marked.length, JSON.stringify(marked)).toBeLessThanOrEqual(4)
        for (const m of marked) expect(m.cache_control).toEqual({ type: 'ephemeral' })
      }

      console.info(
        `[${c.vendor}] turn ${turns} compacted ${summaries.length} block(s) (${summaries.map((s) => `${s.first_ordinal}-${s.last_ordinal}`).join(', ')})` +
          (c.vendor === 'anthropic' ? `; cache_control at ${cacheControlled(customerRequest.body).map((m) => m.where).join(', ')}` : ''),
      )

      // The next turn (a short prompt): the summaries are reused, none made again, no summarisation request.
      const next = await turn(c, chatId, 'Please go on, briefly.')
      expect(next.events).not.toContain('compacting')
      expect(next.done.compaction).toMatchObject({ blocks_generated: 0, in_progress_elsewhere: 0 })
      expect(next.done.compaction.blocks_reused).toBeGreaterThan(0)
      expect(next.vendorRequests.filter((r) => isSummarisation(c, r))).toEqual([])
      expect(next.vendorRequests).toHaveLength(1)
      const nextSummaries = (await getRun(next.runId)).manifest.context.summaries as typeof summaries
      expect(nextSummaries.length).toBe(next.done.compaction.blocks_reused)
      for (const s of nextSummaries) {
        expect(s.reused).toBe(true)
        expect(summaries.find((x) => x.first_ordinal === s.first_ordinal && x.last_ordinal === s.last_ordinal)?.run_id).toBe(s.run_id)
      }
      const nextSent = c.texts(next.vendorRequests[0]!.body).map((x) => x.text)
      for (const s of nextSummaries) expect(nextSent).toContain(summaryText(s.first_ordinal, s.last_ordinal, fixture.text.text))

      // Usage: one `compaction` row per namespace, costing exactly what the compaction runs cost.
      const report = await ok(`/api/v1/usage?range=24h&group_by=entry_type&namespace=${encodeURIComponent(namespace)}`)
      const row = report.rows.find((r: any) => r.group?.entry_type === 'compaction')
      expect(row, JSON.stringify(report.rows)).toBeDefined()
      expect(row.runs).toBe(summaries.length)
      const total = compactionCosts.reduce((sum, cost) => sum.plus(cost), new Decimal(0))
      expect(new Decimal(row.cost).equals(total), `usage compaction cost ${row.cost} vs runs ${total.toFixed()}`).toBe(true)
      const sum = (field: keyof Usage) => compactionUsages.reduce((n, u) => n + u[field], 0)
      expect(row.input_tokens).toBe(sum('input_tokens'))
      expect(row.output_tokens).toBe(sum('output_tokens'))
      expect(row.reasoning_tokens).toBe(sum('reasoning_tokens'))
      expect(row.cache_read_tokens).toBe(sum('cache_read_tokens'))
      expect(row.cache_write_tokens).toBe(sum('cache_write_tokens'))
    })
  })
})
