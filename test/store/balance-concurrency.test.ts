import { spawn } from 'node:child_process'
import { resolve } from 'node:path'
import { Decimal } from 'decimal.js'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { moneyToUnits } from '../../src/domain/money.ts'
import { CLI_BUSY_TIMEOUT_MS } from '../../src/store/database.ts'
import { openTempStore } from '../helpers/temp-store.ts'
import { MODEL_IDS, plannedEntry, SHARED_RUN, type PlannedEntry } from './fixtures/balance-amounts.ts'

/*
 * docs/decisions/006: the balance is the sum of entries, every write an immediate transaction, so
 * concurrent writers (server and admin CLI, separate processes) serialise and nothing is lost;
 * the hourly roll-up is maintained in the same transaction as each entry.
 */

const REPO = resolve(import.meta.dirname, '../..')
const WRITER_SCRIPT = resolve(import.meta.dirname, 'fixtures/balance-writer.ts')
const CHILDREN = 4
const PER_CHILD = 500
const PARENT_WRITER = 9
const PARENT_MINIMUM = 150

let t: ReturnType<typeof openTempStore>
let orgId: string

beforeEach(() => {
  t = openTempStore()
  // This process writes synchronously, outside the server's write queue (which waits for a busy lock
  // asynchronously, docs/decisions/028): it waits for the lock as a separate writer does.
  t.db.pragma(`busy_timeout = ${CLI_BUSY_TIMEOUT_MS}`)
  orgId = t.store.organisations.create('Acme', 'acme').id
})
afterEach(() => {
  t.close()
})

type ChildResult = { code: number | null; stdout: string; stderr: string }
type Writer = { ready: Promise<void>; go: () => void; done: Promise<ChildResult>; running: () => boolean }

/** A child process that writes PER_CHILD planned entries once told to go. */
function runWriter(file: string, writer: number): Writer {
  const child = spawn(process.execPath, ['--import', 'tsx', WRITER_SCRIPT, file, orgId, String(writer), String(PER_CHILD)], {
    cwd: REPO,
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  let exited = false
  let onReady = () => {}
  const ready = new Promise<void>((r) => (onReady = r))
  child.stdout.on('data', (chunk) => {
    stdout += chunk
    if (stdout.includes('ready\n')) onReady()
  })
  child.stderr.on('data', (chunk) => (stderr += chunk))
  const done = new Promise<ChildResult>((resolveDone, reject) => {
    child.on('error', reject)
    child.on('close', (code) => {
      exited = true
      onReady()
      resolveDone({ code, stdout: stdout.replace('ready\n', ''), stderr })
    })
  })
  return { ready, go: () => child.stdin.end('go\n'), done, running: () => !exited }
}

function writePlanned(e: PlannedEntry) {
  if (e.kind === 'credit') return t.store.balance.add(orgId, e.type, e.amount, e.occurredAt)
  return t.store.balance.charge({
    orgId,
    type: e.type,
    runId: e.runId,
    apiKeyId: null,
    modelId: MODEL_IDS[e.modelName]!,
    modelName: e.modelName,
    namespace: e.namespace,
    usage: e.usage,
    cost: e.cost,
    occurredAt: e.occurredAt,
  })
}

/** The exact signed sum of planned entries: credits add, charges subtract their cost. */
const signedSum = (entries: PlannedEntry[]) =>
  entries.reduce((sum, e) => (e.kind === 'credit' ? sum.plus(e.amount) : sum.minus(e.cost)), new Decimal(0))

const ROLLUP_KEYS = 'org_id, hour, entry_type, model_id, model_name, namespace, api_key_id'

describe('balance under concurrent writers', () => {
  it('stays exact with several processes and this one writing the same file', async () => {
    const children = Array.from({ length: CHILDREN }, (_, w) => runWriter(t.file, w))
    await Promise.all(children.map((c) => c.ready))
    for (const c of children) c.go()

    // Write from this process too, in small batches, for as long as any child is still writing.
    const parentEntries: PlannedEntry[] = []
    while (parentEntries.length < PARENT_MINIMUM || children.some((c) => c.running())) {
      for (let k = 0; k < 10; k++) {
        const e = plannedEntry(PARENT_WRITER, parentEntries.length)
        const written = writePlanned(e)
        expect(written).not.toBeNull()
        parentEntries.push(e)
      }
      await new Promise((r) => setImmediate(r))
    }
    const results = await Promise.all(children.map((c) => c.done))
    for (const r of results) expect(r.code, r.stderr).toBe(0)

    // Exactly one child's settlement of the shared run wrote an entry.
    const sharedOutcomes = results.map((r) => r.stdout.trim()).sort()
    expect(sharedOutcomes).toEqual(['shared:skipped', 'shared:skipped', 'shared:skipped', 'shared:written'])

    const childEntries = Array.from({ length: CHILDREN }, (_, w) => Array.from({ length: PER_CHILD }, (_, i) => plannedEntry(w, i))).flat()
    const all = [...childEntries, ...parentEntries]
    const expected = signedSum(all).minus(SHARED_RUN.cost)

    const count = (t.db.prepare('SELECT count(*) AS n FROM balance_entries WHERE org_id = ?').get(orgId) as { n: number }).n
    expect(count).toBe(all.length + 1)

    // The balance is the exact decimal sum (no lost update, no float).
    const balance = t.store.balance.balanceOf(orgId)
    expect(new Decimal(balance).eq(expected), `${balance} = ${expected.toFixed()}`).toBe(true)
    const units = t.db
      .prepare('SELECT sum(amount_units) AS total FROM balance_entries WHERE org_id = ?')
      .safeIntegers(true)
      .get(orgId) as { total: bigint }
    expect(units.total).toBe(moneyToUnits(expected.toFixed()))

    // Every planned run was charged exactly once.
    const runIds = t.db.prepare('SELECT run_id FROM balance_entries WHERE run_id IS NOT NULL').pluck().all() as string[]
    const plannedRuns = all.flatMap((e) => (e.kind === 'charge' ? [e.runId] : []))
    expect(runIds.sort()).toEqual([...plannedRuns, SHARED_RUN.runId].sort())

    // The hourly roll-up equals a direct SUM over the entries, row for row.
    const fromEntries = t.db
      .prepare(
        `SELECT org_id, substr(occurred_at, 1, 13) || ':00:00.000Z' AS hour, entry_type,
           coalesce(model_id, '') AS model_id, coalesce(model_name, '') AS model_name,
           coalesce(namespace, '') AS namespace, coalesce(api_key_id, '') AS api_key_id,
           count(*) AS entries, count(run_id) AS runs,
           sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens, sum(reasoning_tokens) AS reasoning_tokens,
           sum(cache_read_tokens) AS cache_read_tokens, sum(cache_write_tokens) AS cache_write_tokens,
           sum(CASE WHEN entry_type IN ('usage', 'compaction') THEN -amount_units ELSE 0 END) AS cost_units
         FROM balance_entries GROUP BY ${ROLLUP_KEYS} ORDER BY ${ROLLUP_KEYS}`,
      )
      .safeIntegers(true)
      .all()
    const rollUp = t.db
      .prepare(
        `SELECT ${ROLLUP_KEYS}, entries, runs, input_tokens, output_tokens, reasoning_tokens, cache_read_tokens,
           cache_write_tokens, cost_units FROM usage_hourly ORDER BY ${ROLLUP_KEYS}`,
      )
      .safeIntegers(true)
      .all()
    expect(rollUp.length).toBeGreaterThan(4)
    expect(rollUp).toEqual(fromEntries)

    // And the roll-up's spend is exactly the charges: credits add nothing to it.
    const spend = t.db.prepare('SELECT sum(cost_units) AS s FROM usage_hourly').safeIntegers(true).get() as { s: bigint }
    const charges = all.reduce((sum, e) => (e.kind === 'charge' ? sum.plus(e.cost) : sum), new Decimal(SHARED_RUN.cost))
    expect(spend.s).toBe(moneyToUnits(charges.toFixed()))
  }, 120_000)
})

describe('charging a run twice', () => {
  const charge = (cost: string) =>
    t.store.balance.charge({
      orgId,
      type: 'usage',
      runId: '5b0c5d0e-8a59-4d8c-9a57-9b3f1c1e2d01',
      apiKeyId: null,
      modelId: MODEL_IDS['sandbox/echo']!,
      modelName: 'sandbox/echo',
      namespace: 'acme',
      usage: { input_tokens: 10, output_tokens: 5, reasoning_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0 },
      cost,
      occurredAt: '2026-11-22T10:00:00.000Z',
    })

  it('writes nothing the second time and returns null', () => {
    t.store.balance.add(orgId, 'topup', '10.00')
    const first = charge('0.0000123456')
    expect(first).not.toBeNull()
    expect(first!.entry).toMatchObject({ entry_type: 'usage', amount: '-0.0000123456' })
    expect(first!.balance).toBe('9.9999876544')
    const rollUpBefore = t.db.prepare('SELECT * FROM usage_hourly ORDER BY hour, entry_type').all()

    expect(charge('0.0000123456')).toBeNull()
    expect(charge('5.00')).toBeNull()

    expect(t.store.balance.balanceOf(orgId)).toBe('9.9999876544')
    expect((t.db.prepare('SELECT count(*) AS n FROM balance_entries').get() as { n: number }).n).toBe(2)
    expect(t.db.prepare('SELECT * FROM usage_hourly ORDER BY hour, entry_type').all()).toEqual(rollUpBefore)
  })

  it('writes nothing the second time inside a caller’s transaction either', () => {
    charge('1.00')
    const again = t.db.transaction(() => charge('1.00'))
    expect(again()).toBeNull()
    expect(t.store.balance.balanceOf(orgId)).toBe('-1.00')
  })
})
