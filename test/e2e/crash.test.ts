import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { startServer, waitFor, type ServerProcess } from './server-process.ts'
import {
  completedBlocks,
  moneyUnits,
  postTurn,
  readDatabase,
  request,
  type StreamedBlock,
  type TurnStream,
} from './turn-client.ts'
import { machineCeiling, machineTimeout } from '../helpers/machine-timeouts.ts'

/**
 * THE CRASH TEST (decisions §4). Twenty turns stream at once; the server is killed with SIGKILL in
 * the middle of them and started again on the same DATA_DIR with the same NODE_ID. Afterwards no
 * run is left `running` (each is `succeeded`, or `failed` with error `interrupted`), nothing that
 * was committed before the kill is lost, and every run is billed exactly once, also after a second
 * restart. Slow prompts only hold the runs open; nothing asserts on durations.
 */

const NODE_ID = 'e2e-crash-node'
const TURNS = 20
const START_TIMEOUT_MS = 25_000

/**
 * A mix, so the kill finds runs in different places: a quick echo that may well finish before it,
 * reasoning blocks that close early followed by a long text still streaming, plain long texts, and
 * a run of tool calls that close one by one.
 */
const promptFor = (i: number): string => {
  switch (i % 5) {
    case 0:
      return `/slow 10\nquick answer ${i}`
    case 1:
      return `/slow 100\n/think plan the answer ${i}\n/long 40`
    case 2:
      return `/slow 100\n/long 40`
    case 3:
      return `/slow 100\n/think first\n/think second ${i}\n/long 40`
    default:
      return ['/slow 150', ...[1, 2, 3, 4, 5, 6].map((n) => `/tool step_${n} {"turn":${i},"step":${n}}`)].join('\n')
  }
}

/** Mid-stream: a text delta arrived (any reasoning before it closed), or a tool call closed. */
const midStream = (s: TurnStream) =>
  s.isClosed() ||
  s.frames.some((f) => f.event === 'delta' && f.data.kind === 'text') ||
  completedBlocks(s.frames).some((b) => b.kind === 'tool_call')

/** The history body a streamed block is stored as (as each block closes: decisions §4, issue 5). */
const partOf = (block: StreamedBlock) => {
  switch (block.kind) {
    case 'text':
      return { type: 'message', text: block.text }
    case 'reasoning':
      return { type: 'reasoning', text: block.text }
    case 'refusal':
      return { type: 'message', text: '', refusal: block.text }
    case 'tool_call':
      return { type: 'tool_call', arguments: block.text, tool_name: block.tool_name, tool_use_id: block.tool_use_id }
    default:
      throw new Error(`unknown block kind ${block.kind}`)
  }
}

/** SIGKILL, and wait (bounded) until the process is gone. */
async function killHard(server: ServerProcess): Promise<void> {
  const { child } = server
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  child.kill('SIGKILL')
  await Promise.race([
    exited,
    new Promise((_, reject) => setTimeout(() => reject(new Error('the server did not die within 10 s of SIGKILL')), 10_000)),
  ])
  expect(child.signalCode).toBe('SIGKILL')
}

type Sent = { chatId: string; prompt: string; stream: TurnStream }
type Observed = { chatId: string; prompt: string; runId: string; blocks: StreamedBlock[]; terminal: string | null; done: any; closedAs: string }

describe('kill -9 during 20 streaming turns, then restart', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-e2e-crash-'))
  const dbFile = join(dataDir, 'parley.db')
  const env = { DATA_DIR: dataDir, NODE_ID }
  const servers: ServerProcess[] = []
  let server: ServerProcess | undefined
  let devKey = ''
  let orgId = ''
  const observed: Observed[] = []

  const api = (path: string, init: { method?: string; body?: unknown } = {}) => request(server!.url, path, { key: devKey, ...init })
  const start = async () => {
    server = await startServer({ env, timeoutMs: START_TIMEOUT_MS })
    servers.push(server)
  }

  const runOf = async (runId: string) => {
    const res = await api(`/api/v1/runs/${runId}`)
    expect(res.status, res.text).toBe(200)
    return res.json()
  }
  const historyOf = async (chatId: string) => {
    const res = await api(`/api/v1/chats/${chatId}/history?limit=100`)
    expect(res.status, res.text).toBe(200)
    const page = res.json()
    expect(page.has_more).toBe(false)
    return page.data as { part: any }[]
  }

  /** Everything billing-related, straight from the database file. */
  const ledger = () =>
    readDatabase(dbFile, (db) => ({
      entries: db
        .prepare('SELECT id, entry_type, run_id, amount_units FROM balance_entries WHERE org_id = ? ORDER BY id')
        .safeIntegers(true)
        .all(orgId) as { id: string; entry_type: string; run_id: string | null; amount_units: bigint }[],
      balance: (
        db.prepare('SELECT amount_units FROM org_balances WHERE org_id = ?').safeIntegers(true).get(orgId) as { amount_units: bigint }
      ).amount_units,
    }))

  /** What a restart must not change: every run as inspected, every history, the ledger. */
  const snapshot = async () => ({
    runs: await Promise.all(observed.map((o) => runOf(o.runId))),
    histories: await Promise.all(observed.map((o) => historyOf(o.chatId))),
    ledger: ledger(),
  })

  beforeAll(async () => {
    await start()
    devKey = readFileSync(join(dataDir, 'dev-api-key.txt'), 'utf8').trim()
  })

  afterAll(async () => {
    for (const s of servers) await s.stop(2_000)
    rmSync(dataDir, { recursive: true, force: true })
  })

  test('20 turns stream concurrently; the server is killed with SIGKILL after deltas arrived on every stream', async () => {
    const chatIds: string[] = []
    for (let i = 0; i < TURNS; i++) {
      const res = await api('/api/v1/chats', { method: 'POST', body: { title: `crash ${i}` } })
      expect(res.status, res.text).toBe(201)
      chatIds.push(res.json().id)
    }

    const sent: Sent[] = await Promise.all(
      chatIds.map(async (chatId, i) => {
        const prompt = promptFor(i)
        const answer = await postTurn(server!.url, devKey, chatId, { model: 'sandbox/echo', input: [{ type: 'prompt', text: prompt }] }, 60_000)
        if (!answer.ok) throw new Error(`turn ${i}: HTTP ${answer.status} ${answer.text}`)
        return { chatId, prompt, stream: answer }
      }),
    )

    await waitFor('every stream mid-way or ended', () => sent.every((s) => midStream(s.stream)), 30_000, 20)
    await killHard(server!)

    // Whatever arrives now was written before the kill; then every connection is closed or broken.
    const closings = await Promise.all(sent.map((s) => s.stream.closed))
    for (const [i, s] of sent.entries()) {
      const frames = s.stream.frames
      expect(frames[0]?.event).toBe('run')
      const last = frames.at(-1)!
      const terminal = last.event === 'done' || last.event === 'error' ? last.event : null
      observed.push({
        chatId: s.chatId,
        prompt: s.prompt,
        runId: frames[0]!.data.run_id,
        blocks: completedBlocks(frames),
        terminal,
        done: terminal === 'done' ? last.data : null,
        closedAs: closings[i]!,
      })
    }
    orgId = readDatabase(dbFile, (db) => (db.prepare('SELECT org_id FROM runs WHERE id = ?').get(observed[0]!.runId) as { org_id: string }).org_id)
    // A stream either ended with `done` or was cut off by the kill; nothing ended it otherwise.
    for (const o of observed) {
      if (o.terminal === null) expect(o.closedAs).toBe('broken')
      else expect(o.terminal).toBe('done')
    }
    // The test proves something only if the kill cut streams off, some of them after a block had
    // closed (the reasoning blocks close before the long text begins).
    const cut = observed.filter((o) => o.terminal === null)
    expect(cut.length).toBeGreaterThan(0)
    expect(cut.some((o) => o.blocks.length > 0)).toBe(true)
    // The dead server left runs `running` (only cut-off ones): what settles them is the restart.
    const running = readDatabase(dbFile, (db) => db.prepare(`SELECT id FROM runs WHERE status = 'running'`).pluck().all() as string[])
    expect(running.length).toBeGreaterThan(0)
    expect(cut.map((o) => o.runId)).toEqual(expect.arrayContaining(running))
  }, machineCeiling(60_000))

  test('after a restart with the same NODE_ID, every run is succeeded or failed/interrupted, none running', async () => {
    await start()
    const outcome = { succeeded: 0, interrupted: 0 }
    for (const o of observed) {
      const run = await runOf(o.runId)
      expect(['succeeded', 'failed']).toContain(run.status)
      expect(run.is_live).toBe(false)
      expect(run.completed_at).not.toBeNull()
      expect(run.settled_at).not.toBeNull()
      // An interrupted run's usage never arrived: null (spec §2.8); it is still settled for the estimate.
      if (run.status === 'failed') expect(run.usage).toBeNull()
      else expect(run.usage).not.toBeNull()
      if (run.status === 'failed') {
        expect(run.error).toBe('interrupted')
        expect(o.terminal).toBeNull()
        outcome.interrupted++
      } else {
        expect(run.error).toBeNull()
        outcome.succeeded++
      }
      // A run whose `done` was received succeeded, at the cost it announced.
      if (o.terminal === 'done') expect(run).toMatchObject({ status: 'succeeded', cost: o.done.cost })
    }
    expect(outcome.succeeded + outcome.interrupted).toBe(TURNS)
    console.info(`crash test: ${outcome.succeeded} runs succeeded, ${outcome.interrupted} failed/interrupted`)
  }, machineCeiling(60_000))

  test('no committed part is lost: every prompt, and every block whose block_stop arrived before the kill', async () => {
    for (const o of observed) {
      const parts = (await historyOf(o.chatId)).map((p) => p.part)
      expect(parts[0]).toEqual({ type: 'prompt', text: o.prompt })
      const output = parts.slice(1)
      const streamed = o.blocks.map(partOf)
      // The blocks seen closing come first, in order; a block the kill cut off may or may not follow
      // (it is written when it closes), but nothing else.
      expect(output.slice(0, streamed.length)).toEqual(streamed)
      expect(output.length - streamed.length).toBeLessThanOrEqual(1)
      if (o.terminal === 'done') expect(output).toEqual(streamed)
    }
  }, machineCeiling(60_000))

  test('each run is billed exactly once: one usage entry, equal to its cost; the balance is 10.00 minus the charges', async () => {
    const { entries, balance } = ledger()
    let charged = 0n
    for (const o of observed) {
      const run = await runOf(o.runId)
      const mine = entries.filter((e) => e.run_id === o.runId)
      expect(mine, `entries of run ${o.runId}`).toHaveLength(1)
      expect(mine[0]!.entry_type).toBe('usage')
      expect(-mine[0]!.amount_units).toBe(moneyUnits(run.cost))
      // Interrupted runs are settled for the packed input they were given (decisions §4), their usage
      // reported as null (spec §2.8): the cost is the estimate's.
      if (run.status === 'succeeded') expect(run.usage.input_tokens).toBeGreaterThan(0)
      expect(moneyUnits(run.cost)).toBeGreaterThan(0n)
      charged += moneyUnits(run.cost)
    }
    // Nothing else was charged, and the promotional credit is the only credit.
    const charges = entries.filter((e) => e.run_id !== null)
    expect(charges).toHaveLength(TURNS)
    const credits = entries.filter((e) => e.run_id === null)
    expect(credits.map((e) => e.amount_units)).toEqual([moneyUnits('10.00')])
    expect(balance).toBe(moneyUnits('10.00') - charged)
    expect(entries.reduce((sum, e) => sum + e.amount_units, 0n)).toBe(balance)
  }, machineCeiling(60_000))

  test('a second restart (another SIGKILL, same NODE_ID) changes nothing: no run, part or charge moves', async () => {
    const before = await snapshot()
    await killHard(server!)
    await start()
    const after = await snapshot()
    expect(after).toEqual(before)
  }, machineCeiling(60_000))

  test('tool calls an interrupted run committed are closed by the next submission with a cancelled tombstone', async () => {
    const withCalls = observed.filter((o) => o.terminal === null && o.blocks.some((b) => b.kind === 'tool_call'))
    expect(withCalls.length).toBeGreaterThan(0)
    const o = withCalls[0]!
    const committed = (await historyOf(o.chatId)).map((p) => p.part).filter((p) => p.type === 'tool_call')
    expect(committed.length).toBeGreaterThanOrEqual(o.blocks.length)
    const answer = await postTurn(server!.url, devKey, o.chatId, { model: 'sandbox/echo', input: [{ type: 'prompt', text: 'still there?' }] })
    if (!answer.ok) throw new Error(`turn refused: HTTP ${answer.status} ${answer.text}`)
    expect(await answer.closed).toBe('end')
    expect(answer.frames.at(-1)!.event).toBe('done')
    const ids = committed.map((c) => c.tool_use_id)
    expect(answer.frames[0]!.data.closed_tool_calls).toEqual(ids)
    const parts = (await historyOf(o.chatId)).map((p) => p.part)
    const tombstones = parts.filter((p) => p.type === 'tool_result')
    expect(tombstones.map((t) => [t.tool_use_id, t.tombstone_reason])).toEqual(ids.map((id) => [id, 'cancelled']))
  }, machineCeiling(60_000))

  test('the crashed chats take turns again: an interrupted run can be retried, and is billed once', async () => {
    const interrupted = observed.find((o) => o.terminal === null && !o.blocks.some((b) => b.kind === 'tool_call'))!
    const chatRun = await runOf(interrupted.runId)
    expect(chatRun.error).toBe('interrupted')
    const answer = await postTurn(server!.url, devKey, interrupted.chatId, {
      model: 'sandbox/echo',
      input: [],
      retry_of: interrupted.runId,
    })
    if (!answer.ok) throw new Error(`retry refused: HTTP ${answer.status} ${answer.text}`)
    expect(await answer.closed).toBe('end')
    const done = answer.frames.at(-1)!
    expect(done.event).toBe('done')
    const retryId = answer.frames[0]!.data.run_id
    const retried = await runOf(retryId)
    expect(retried).toMatchObject({ status: 'succeeded', cost: done.data.cost })
    expect(ledger().entries.filter((e) => e.run_id === retryId)).toHaveLength(1)
    // The interrupted run itself still has its one charge.
    expect(ledger().entries.filter((e) => e.run_id === interrupted.runId)).toHaveLength(1)
  }, machineCeiling(60_000))

  test('no server life wrote anything to stderr: no warnings, no unhandled errors', () => {
    for (const s of servers) expect(s.stderr()).toBe('')
  })
})

describe('SIGTERM during a streaming turn', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-e2e-sigterm-'))
  const env = { DATA_DIR: dataDir, NODE_ID: 'e2e-sigterm-node' }
  const servers: ServerProcess[] = []

  afterAll(async () => {
    for (const s of servers) await s.stop(2_000)
    rmSync(dataDir, { recursive: true, force: true })
  })

  test('the server shuts down by itself, settling the run as interrupted first and ending the open stream with that error', async () => {
    const first = await startServer({ env, timeoutMs: START_TIMEOUT_MS })
    servers.push(first)
    const key = readFileSync(join(dataDir, 'dev-api-key.txt'), 'utf8').trim()
    const chat = await request(first.url, '/api/v1/chats', { method: 'POST', key, body: {} })
    expect(chat.status).toBe(201)
    const chatId = chat.json().id as string
    const stream = await postTurn(first.url, key, chatId, { model: 'sandbox/echo', input: [{ type: 'prompt', text: '/slow 200\n/long 40' }] }, 60_000)
    if (!stream.ok) throw new Error(`HTTP ${stream.status} ${stream.text}`)
    await stream.frame('the first delta', (f) => f.event === 'delta')
    const runId = stream.frames[0]!.data.run_id as string

    // SIGTERM; SIGKILL only if it has not exited 10 s later. Exit code 0: it stopped by itself,
    // once the run had its grace (SHUTDOWN_GRACE_MS, 1 s here) and was settled (decision 009).
    expect(await first.stop(machineTimeout(10_000))).toBe(0)
    // Spec §4.2 rule 1: a failure after the stream opened arrives as the `error` event.
    expect(await stream.closed).toBe('end')
    const last = stream.frames.at(-1)!
    expect(last.event).toBe('error')
    expect(last.data).toMatchObject({ code: 'interrupted', details: { run_id: runId } })

    const second = await startServer({ env, timeoutMs: START_TIMEOUT_MS })
    servers.push(second)
    const run = await request(second.url, `/api/v1/runs/${runId}`, { key })
    expect(run.json()).toMatchObject({ status: 'failed', error: 'interrupted', is_live: false })
    expect(run.json().cost).not.toBeNull()
    const entries = readDatabase(join(dataDir, 'parley.db'), (db) =>
      db.prepare('SELECT count(*) AS n FROM balance_entries WHERE run_id = ?').get(runId),
    )
    expect(entries).toEqual({ n: 1 })
  }, machineCeiling(60_000))
})
