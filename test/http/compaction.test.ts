import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { estimateTokens } from '../../src/domain/tokens/estimate-tokens.ts'
import { bootstrapDevOrganisation } from '../../src/store/bootstrap-dev-organisation.ts'
import { prose } from '../e2e/prose.ts'
import { moneyUnits } from '../e2e/turn-client.ts'
import { injectApi } from '../helpers/inject-api.ts'
import { createTestApp, type TestContext } from '../helpers/test-app.ts'
import { deltaText, parseSse, sandboxCatalogue, type SseFrame } from '../helpers/turns.ts'

/**
 * Summarised history (issue 10, decisions §5.3) through the HTTP API of one app in process (moved
 * from test/e2e/: nothing here needs a server process), on sandbox/echo-8k under the platform
 * defaults: a chat grown far past its window answers every turn; the first turn that needs
 * summaries says `compacting` and generates them; later turns reuse them; compaction runs are
 * inspectable, billed as `compaction` entries and paid from the balance; `/context` shows the
 * summaries in place of the old parts; a block that cannot be summarised (`/fail-summary`) is
 * dropped with a warning while the turn goes on. The app is configured as the server process was
 * (SANDBOX=on and no vendor key: the sandbox catalogue; the dev organisation bootstrapped).
 */


type Turn = { frames: SseFrame[]; runId: string; done: any; events: string[] }

describe('summarised history through the HTTP API (sandbox/echo-8k, platform defaults)', () => {
  let ctx: TestContext
  let auth = { authorization: '' }
  const { api, postTurn, ok } = injectApi(() => ctx, () => auth)
  /** Runs `read` on the app's database itself (the server process's file, before the move). */
  const readDatabase = <T>(read: (db: TestContext['store']['db']) => T): T => read(ctx.store.db)
  const newChat = async (namespace: string): Promise<string> => (await ok('/api/v1/chats', { method: 'POST', body: { namespace } }, 201)).id
  const run = (runId: string) => ok(`/api/v1/runs/${runId}`)

  const turn = async (chatId: string, text: string): Promise<Turn> => {
    const answer = await postTurn(chatId, { model: 'sandbox/echo-8k', input: [{ type: 'prompt', text }] })
    if (!answer.ok) throw new Error(`expected a stream, got HTTP ${answer.status}: ${answer.text}`)
    const events = answer.frames.map((f) => f.event)
    expect(events.slice(0, 3), events.join(',')).toEqual(['run', 'config_warnings', 'translation_warnings'])
    expect(events.at(-1), `${events.join(',')} ${JSON.stringify(answer.frames.at(-1)!.data)}`).toBe('done')
    return { frames: answer.frames, runId: answer.frames[0]!.data.run_id, done: answer.frames.at(-1)!.data, events }
  }

  beforeAll(async () => {
    ctx = await createTestApp({ catalogue: sandboxCatalogue() })
    auth = { authorization: `Bearer ${bootstrapDevOrganisation(ctx.store)!.key}` }
  })

  afterAll(async () => {
    await ctx?.close()
  })

  test('a chat grown to 4× the window answers every turn; summaries are made once, reused, billed and shown', { timeout: 180_000 }, async () => {
    const namespace = 'compaction/grown'
    const chatId = await newChat(namespace)
    const balanceBefore = readDatabase((db) => (db.prepare('SELECT sum(amount_units) AS total FROM org_balances').safeIntegers(true).get() as { total: bigint }).total)
    const known = new Map<string, string>() // blockKey -> run id of its summary
    let firstCompaction = -1
    let reusedAfter = 0
    let ledgerTokens = 0
    const TURNS = 28
    for (let i = 0; i < TURNS; i++) {
      const text = prose(i, 600)
      const t = await turn(chatId, text)
      expect(deltaText(t.frames, 'text')).toBe(`echo: ${text}`)
      ledgerTokens += 2 * estimateTokens(text)
      const manifest = (await run(t.runId)).manifest
      const c = manifest.context
      // One estimator: what packing budgeted is what the model was billed for (input plus cache reads).
      expect(t.done.usage.input_tokens + t.done.usage.cache_read_tokens).toBe(manifest.estimated_input_tokens)
      expect(c.tokens.total).toBeLessThanOrEqual(c.input_budget)
      expect(c.tokens.summaries).toBe(c.summaries.reduce((n: number, s: any) => n + s.tokens, 0))
      // Nothing is dropped under the defaults: the oldest history is summarised instead.
      expect(c.dropped).toBeNull()
      expect(t.frames.filter((f) => f.event === 'config_warnings').flatMap((f) => f.data.warnings)).toEqual([])

      if (c.summaries.length === 0) {
        expect(t.done.compaction).toBeNull()
        expect(t.events).not.toContain('compacting')
        continue
      }
      const generated = c.summaries.filter((s: any) => !s.reused)
      const reused = c.summaries.filter((s: any) => s.reused)
      expect(t.done.compaction).toEqual({ blocks_generated: generated.length, blocks_reused: reused.length, in_progress_elsewhere: 0 })
      // A summary made once is never made again: what a turn generates is new.
      for (const s of generated) expect(known.has(`${s.first_ordinal}-${s.last_ordinal}`)).toBe(false)
      for (const s of reused) expect(known.get(`${s.first_ordinal}-${s.last_ordinal}`)).toBe(s.run_id)
      if (generated.length > 0) {
        // The stream opened, said what it waits for, then the content.
        const compacting = t.frames.find((f) => f.event === 'compacting')!
        expect(compacting.data).toEqual({ blocks: generated.length, in_progress_elsewhere: 0 })
        expect(t.events.indexOf('compacting')).toBeLessThan(t.events.indexOf('block_start'))
      } else expect(t.events).not.toContain('compacting')
      if (firstCompaction === -1) {
        firstCompaction = i
        expect(generated.length).toBeGreaterThan(0)
      } else if (i === firstCompaction + 1) {
        expect(reused.length).toBeGreaterThan(0)
        reusedAfter = reused.length
      }
      for (const s of c.summaries) known.set(`${s.first_ordinal}-${s.last_ordinal}`, s.run_id)
      // The manifest covers every summarised ordinal with a `summarised` segment.
      expect(c.segments.filter((s: any) => s.treatment === 'summarised').reduce((n: number, s: any) => n + s.tokens, 0)).toBe(c.tokens.summaries)
    }
    console.info(`[compaction] ${TURNS} turns, ${ledgerTokens} tokens in the ledger; first compaction at turn ${firstCompaction + 1}; ${known.size} summaries`)
    expect(ledgerTokens).toBeGreaterThan(4 * 8192)
    expect(firstCompaction).toBeGreaterThan(0)
    expect(reusedAfter).toBeGreaterThan(0)
    expect(known.size).toBeGreaterThan(1)

    // Compaction runs are runs: origin compaction, the chat's model, settled, with usage, cost and manifest.
    let compactionUnits = 0n
    for (const [key, runId] of known) {
      const r = await run(runId)
      expect(r).toMatchObject({ id: runId, chat_id: chatId, origin: 'compaction', status: 'succeeded', model: 'sandbox/echo-8k', namespace })
      expect(r.usage.input_tokens).toBeGreaterThan(0)
      expect(r.usage.output_tokens).toBeGreaterThan(0)
      expect(r.manifest).toMatchObject({ purpose: 'compaction', block: { first_ordinal: Number(key.split('-')[0]), last_ordinal: Number(key.split('-')[1]) } })
      compactionUnits += moneyUnits(r.cost)
    }
    // The usage report bills them as `compaction` entries, at exactly the runs' costs.
    const report = await ok(`/api/v1/usage?range=24h&group_by=entry_type&namespace=${encodeURIComponent(namespace)}`)
    const row = (type: string) => report.rows.find((r: any) => r.group?.entry_type === type)
    expect(row('compaction')).toMatchObject({ runs: known.size })
    expect(moneyUnits(row('compaction').cost)).toBe(compactionUnits)
    const customerUnits = moneyUnits(row('usage').cost)
    // The balance paid for both.
    const balanceAfter = readDatabase((db) => (db.prepare('SELECT sum(amount_units) AS total FROM org_balances').safeIntegers(true).get() as { total: bigint }).total)
    expect(balanceBefore - balanceAfter).toBe(compactionUnits + customerUnits)

    // /context: what the model receives has the summaries in place of the old parts.
    const t = await turn(chatId, '/context')
    const seen = JSON.parse(deltaText(t.frames, 'text'))
    const texts: string[] = seen.messages.flatMap((m: any) => m.content.map((item: any) => item.text ?? ''))
    const summaries = texts.filter((x) => x.startsWith('<conversation_summary'))
    expect(summaries.length).toBeGreaterThan(0)
    expect(summaries[0]).toMatch(/Summary of ordinals \d+-\d+: /)
    // The first prompts after the anchors are not sent themselves.
    expect(texts).not.toContain(prose(2, 600))
    expect(texts.at(-1)).toBe('/context')
  })

  test('a block that cannot be summarised (/fail-summary) is dropped with history_dropped; the turn goes on', { timeout: 120_000 }, async () => {
    const chatId = await newChat('compaction/failing')
    let seenFailure = false
    for (let i = 0; i < 14 && !seenFailure; i++) {
      // The prompt of turn 2 carries the line; its block's compaction run fails.
      const text = i === 2 ? `${prose(i, 600)}\n/fail-summary` : prose(i, 600)
      const t = await turn(chatId, text)
      const warnings = t.frames.filter((f) => f.event === 'config_warnings').map((f) => f.data.warnings)
      const dropped = warnings.flat().filter((w: any) => w.code === 'history_dropped')
      if (dropped.length === 0) continue
      seenFailure = true
      // Announced after compaction: config_warnings repeats with the dropped range.
      expect(warnings).toHaveLength(2)
      expect(t.events.indexOf('compacting')).toBeLessThan(t.events.lastIndexOf('config_warnings'))
      expect(dropped[0]).toMatchObject({ code: 'history_dropped', history_mode: 'summarize' })
      const manifest = (await run(t.runId)).manifest
      expect(manifest.context.dropped).toMatchObject({ start_ordinal: dropped[0].start_ordinal, end_ordinal: dropped[0].end_ordinal })
      // The failed compaction run is recorded as such, and billed as compaction.
      const failed = readDatabase((db) =>
        db.prepare(`SELECT id, status, error FROM runs WHERE chat_id = ? AND origin = 'compaction' AND status = 'failed'`).all(chatId),
      ) as { id: string; status: string; error: string }[]
      expect(failed.length).toBeGreaterThan(0)
      expect(failed[0]!.error).toMatch(/fail-summary|cannot be summarised/)
      const inspected = await run(failed[0]!.id)
      expect(inspected).toMatchObject({ origin: 'compaction', status: 'failed' })
      expect(t.done.stop_reason).toBe('end_turn')
    }
    expect(seenFailure).toBe(true)
  })
})
