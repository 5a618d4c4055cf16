import { vi, afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createContextHistory } from '../../src/actors/context-history.ts'
import type { RunDeps } from '../../src/actors/run-deps.ts'
import { commitSettlement, leaveToSweep, openRun, type Settlement } from '../../src/actors/run-lifecycle.ts'
import { summariseBlock } from '../../src/actors/summarise-block.ts'
import { sweepAbandonedRuns } from '../../src/actors/sweep-abandoned-runs.ts'
import { runOutcome } from '../../src/domain/runs/run-outcome.ts'
import { createConfigResolver } from '../../src/store/config-resolution.ts'
import type { Store } from '../../src/store/index.ts'
import { openTempStore } from '../helpers/temp-store.ts'
import { echo, finishPart, insertRun, sandboxCatalogue, scriptedModel, usageEntries, variantOf, withFakes } from '../helpers/turns.ts'

/** One lifecycle for every run (src/actors/run-lifecycle.ts): opened under a lease, settled once, or left to the sweep. */

let temp: ReturnType<typeof openTempStore>
let orgId: string
let chatId: string

const FAKE = variantOf('fake/summariser', '9c1d2e3f-4444-4c3c-8d3d-000000000001', { provider: 'fake', vendor_model_id: 'summariser' })
const summariser = scriptedModel(async (emit) => {
  emit({ type: 'text-start', id: 't' })
  emit({ type: 'text-delta', id: 't', delta: 'the summary' })
  emit({ type: 'text-end', id: 't' })
  emit(finishPart())
})

const deps = (store: Store = temp.store): RunDeps => ({
  store,
  resolver: createConfigResolver(temp.store),
  languageModelFor: withFakes({ summariser }),
  modelById: (id) => [...sandboxCatalogue(), FAKE].find((m) => m.id === id),
  now: () => new Date(),
  nodeId: 'node-a',
  leaseTtlMs: 30_000,
  history: createContextHistory(temp.store),
})

beforeEach(() => {
  temp = openTempStore()
  orgId = temp.store.organisations.create('org', 'org').id
  temp.store.balance.add(orgId, 'topup', '10')
  chatId = temp.store.chats.create({ orgId, namespace: null, title: null, description: null, userMetadata: {} }).id
})
afterEach(() => temp.close())

const USAGE = { input_tokens: 10, output_tokens: 5, reasoning_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0 }
const settlementOf = (runId: string): Settlement => ({
  runId,
  orgId,
  chatId,
  apiKeyId: null,
  namespace: null,
  model: echo(),
  markupPercent: '5',
  startedAt: null,
  outcome: runOutcome({ status: 'succeeded', usage: USAGE, latencyMs: 10, streamOpened: true }),
})
const row = (runId: string) => temp.store.runs.getById(runId)!

describe('openRun', () => {
  it('writes the run running under this node\'s lease, for the lease TTL from its creation', () => {
    const createdAt = '2030-01-01T00:00:00.000Z'
    openRun(deps(), {
      id: 'run-1',
      org_id: orgId,
      chat_id: chatId,
      origin: 'compaction',
      model_id: echo().id,
      model_name: echo().name,
      namespace: null,
      api_key_id: null,
      retry_of: null,
      created_at: createdAt,
      manifest: { purpose: 'compaction' },
    })
    expect(row('run-1')).toMatchObject({ status: 'running', origin: 'compaction', lease_owner: 'node-a', lease_expires_at: '2030-01-01T00:00:30.000Z' })
  })
})

describe('commitSettlement', () => {
  it('settles the run once, with what must be written alongside it', async () => {
    const runId = insertRun(temp.store, { org_id: orgId, chat_id: chatId })
    let alongside = 0
    expect(await commitSettlement(deps(), settlementOf(runId), () => alongside++)).not.toBeNull()
    expect(row(runId)).toMatchObject({ status: 'succeeded', lease_owner: null })
    expect(alongside).toBe(1)
    // A second settlement charges nothing.
    expect(await commitSettlement(deps(), settlementOf(runId))).toBeNull()
    expect(usageEntries(temp.store, runId)).toHaveLength(1)
  })

  it('what is written alongside fails: the settlement is undone with it and the run stays running', async () => {
    const runId = insertRun(temp.store, { org_id: orgId, chat_id: chatId })
    await expect(
      commitSettlement(deps(), settlementOf(runId), () => {
        throw new Error('disk full')
      }),
    ).rejects.toThrow('disk full')
    expect(row(runId).status).toBe('running')
    expect(usageEntries(temp.store, runId)).toHaveLength(0)
  })
})

describe('leaveToSweep', () => {
  it('releases the lease: nobody renews it, and the sweep settles the run as interrupted', async () => {
    const runId = insertRun(temp.store, { org_id: orgId, chat_id: chatId, lease_owner: 'node-a' })
    await leaveToSweep(deps(), runId)
    expect(row(runId)).toMatchObject({ status: 'running', lease_owner: null })
    temp.store.runs.renewLeases('node-a', new Date(Date.now() + 60_000).toISOString())
    expect(row(runId).lease_owner).toBeNull()
    expect(sweepAbandonedRuns(deps(), null).map((r) => r.id)).toEqual([runId])
    expect(row(runId)).toMatchObject({ status: 'failed', error: 'interrupted' })
  })
})

describe('a compaction run goes through the same lifecycle', () => {
  const part = () => temp.store.parts.append(chatId, [{ body: { type: 'prompt', text: 'a long story' }, tokens: 10 }])[0]!.ordinal
  const job = () => ({ chatId, orgId, apiKeyId: null, namespace: null, model: FAKE, markupPercent: '5', forRunId: null })
  const block = (ordinal: number) => ({ kind: 'block' as const, start: 0, end: 1, firstOrdinal: ordinal, lastOrdinal: ordinal, parts: 1, tokens: 10, ordinals: [ordinal], maxTokens: 200 })
  const compactionRun = () => temp.db.prepare(`SELECT id FROM runs WHERE origin = 'compaction'`).get() as { id: string }

  it('opened under this node\'s lease, settled with its summary as a compaction entry', async () => {
    const ordinal = part()
    const summary = await summariseBlock(deps(), job(), block(ordinal), new AbortController().signal)
    expect(summary).toMatchObject({ text: 'the summary', firstOrdinal: ordinal })
    const run = row(compactionRun().id)
    expect(run).toMatchObject({ origin: 'compaction', status: 'succeeded', lease_owner: null })
    expect(usageEntries(temp.store, run.id).map((e) => e.entry_type)).toEqual(['compaction'])
  })

  it('its settlement cannot be written: tried again at 200 ms × 4^n, then left to the sweep, which settles it as interrupted', async () => {
    const ordinal = part()
    let attempts = 0
    const failing: Store = {
      ...temp.store,
      summaries: {
        ...temp.store.summaries,
        insert: () => {
          attempts++
          throw new Error('disk full')
        },
      },
    }
    const released: string[] = []
    // The backoffs on a fake clock, advanced 10 ms at a time; the write queue's real immediates run in between.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    let waitedMs = 0
    try {
      let done = false
      const summarised = summariseBlock(deps(failing), job(), block(ordinal), new AbortController().signal, (runId) => released.push(runId)).finally(() => {
        done = true
      })
      while (!done && waitedMs < 10_000) {
        await vi.advanceTimersByTimeAsync(10)
        await new Promise((resolve) => setImmediate(resolve))
        if (attempts > 0) waitedMs += 10
      }
      expect(await summarised).toBeNull()
    } finally {
      vi.useRealTimers()
    }
    expect(attempts).toBe(4)
    // 200 + 800 + 3 200 ms of backoff between the first attempt and the release.
    expect(waitedMs).toBeGreaterThanOrEqual(4_200)
    expect(waitedMs).toBeLessThan(4_400)
    const run = row(compactionRun().id)
    expect(released).toEqual([run.id])
    expect(run).toMatchObject({ origin: 'compaction', status: 'running', lease_owner: null })
    expect(sweepAbandonedRuns(deps(), null).map((r) => r.id)).toEqual([run.id])
    expect(row(run.id)).toMatchObject({ status: 'failed', error: 'interrupted' })
    expect(usageEntries(temp.store, run.id).map((e) => e.entry_type)).toEqual(['compaction'])
  })

  it('a settlement that fails once is tried again: the summary is stored and billed once', async () => {
    const ordinal = part()
    let attempts = 0
    const flaky: Store = {
      ...temp.store,
      summaries: {
        ...temp.store.summaries,
        insert: (...args: Parameters<Store['summaries']['insert']>) => {
          if (++attempts === 1) throw new Error('database is locked')
          return temp.store.summaries.insert(...args)
        },
      },
    }
    const summary = await summariseBlock(deps(flaky), job(), block(ordinal), new AbortController().signal)
    expect(attempts).toBe(2)
    expect(summary).toMatchObject({ text: 'the summary', firstOrdinal: ordinal })
    const run = row(compactionRun().id)
    expect(run).toMatchObject({ origin: 'compaction', status: 'succeeded' })
    expect(temp.store.summaries.ofRange(chatId, ordinal, ordinal)).toMatchObject({ text: 'the summary' })
    expect(usageEntries(temp.store, run.id).map((e) => e.entry_type)).toEqual(['compaction'])
  })
})
