import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createContextHistory } from '../../../src/actors/context-history.ts'
import type { RunDeps } from '../../../src/actors/run-deps.ts'
import { type RunOutcome, usageKnownSoFar } from '../../../src/domain/runs/run-outcome.ts'
import { settleInLedger } from '../../../src/actors/run-lifecycle.ts'
import { createConfigResolver } from '../../../src/store/config-resolution.ts'
import { openTempStore } from '../../helpers/temp-store.ts'
import { echo, insertRun, sandboxCatalogue, usageEntries, withFakes } from '../../helpers/turns.ts'

/** One outcome type from the stream to the store: settleInLedger writes it as the run row, the charge and the uptime sample. */

let temp: ReturnType<typeof openTempStore>
let orgId: string
let chatId: string

/** Runs reported settled (RunDeps.onRunSettled), in order. */
let reported: { runId: string; cost: string; entryType: string | undefined }[] = []
const deps = (): RunDeps => ({
  onRunSettled: (settled, cost) => reported.push({ runId: settled.runId, cost, entryType: settled.entryType }),
  store: temp.store,
  resolver: createConfigResolver(temp.store),
  languageModelFor: withFakes({}),
  modelById: (id) => sandboxCatalogue().find((m) => m.id === id),
  now: () => new Date(),
  nodeId: 'node',
  leaseTtlMs: 30_000,
  history: createContextHistory(temp.store),
})

beforeEach(() => {
  reported = []
  temp = openTempStore()
  orgId = temp.store.organisations.create('org', 'org').id
  temp.store.balance.add(orgId, 'topup', '10')
  chatId = temp.store.chats.create({ orgId, namespace: null, title: null, description: null, userMetadata: {} }).id
})
afterEach(() => temp.close())

const USAGE = { input_tokens: 10, output_tokens: 5, reasoning_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0 }
const outcome = (over: Partial<RunOutcome> = {}): RunOutcome => ({
  status: 'succeeded',
  stopReason: 'end_turn',
  error: null,
  usage: USAGE,
  usageLost: false,
  providerResponseId: 'resp_1',
  providerRequestId: 'req_1',
  modelServed: 'm',
  pendingToolCalls: [],
  latencyMs: 120,
  firstDeltaMs: 40,
  streamOpened: true,
  vendorRequests: 1,
  contextRefusal: null,
  ...over,
})

function settle(o: RunOutcome, startedAt: string | null = new Date().toISOString(), entryType?: 'usage' | 'compaction') {
  const runId = insertRun(temp.store, { org_id: orgId, chat_id: chatId })
  const cost = settleInLedger(deps(), { runId, orgId, chatId, apiKeyId: null, namespace: null, model: echo(), markupPercent: '5', startedAt, outcome: o, ...(entryType ? { entryType } : {}) })
  const row = temp.db.prepare('SELECT status, error, stop_reason, latency_ms, provider_request_id, usage FROM runs WHERE id = ?').get(runId) as Record<string, unknown>
  return { runId, cost, row }
}
const samples = () => (temp.db.prepare('SELECT succeeded, first_delta_ms FROM provider_calls').all() as { succeeded: number; first_delta_ms: number | null }[])

describe('settleInLedger writes a RunOutcome', () => {
  it('a success: the row, the charge and a successful uptime sample; the request id stands for the run', () => {
    const { cost, row, runId } = settle(outcome())
    expect(cost).not.toBeNull()
    expect(row).toMatchObject({ status: 'succeeded', error: null, stop_reason: 'end_turn', latency_ms: 120, provider_request_id: 'req_1' })
    expect(JSON.parse(row.usage as string)).toEqual(USAGE)
    expect(usageEntries(temp.store, runId)).toHaveLength(1)
    expect(samples()).toEqual([{ succeeded: 1, first_delta_ms: 40 }])
  })

  it('without a request id header the response id is stored', () => {
    expect(settle(outcome({ providerRequestId: null })).row.provider_request_id).toBe('resp_1')
  })

  it('lost usage: billed for the usage known so far, reported as null', () => {
    const known = usageKnownSoFar(100, 'some output text', true)
    const { row, runId } = settle(outcome({ status: 'failed', error: { code: 'upstream_error', message: 'boom' }, usage: known, usageLost: true }))
    expect(row).toMatchObject({ status: 'failed', error: 'boom', usage: null })
    // A debit: the estimate is charged.
    expect(usageEntries(temp.store, runId)[0]!.amount_units).toBeLessThan(0)
    expect(samples()).toEqual([{ succeeded: 0, first_delta_ms: 40 }])
  })

  it('no uptime sample for a cancel, a call that never reached the vendor, our own failure (internal), or an untimed run', () => {
    settle(outcome({ status: 'cancelled' }))
    settle(outcome({ status: 'failed', vendorRequests: 0 }))
    settle(outcome({ status: 'failed', error: { code: 'internal', message: 'ledger' } }))
    settle(outcome(), null)
    expect(samples()).toEqual([])
  })

  it('the usage known so far: the packed input once the call reached the provider, and the output written', () => {
    expect(usageKnownSoFar(100, '', true)).toEqual({ input_tokens: 100, output_tokens: 0, reasoning_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0 })
    expect(usageKnownSoFar(100, 'hello world', false)).toMatchObject({ input_tokens: 0 })
    expect(usageKnownSoFar(0, 'hello world', true).output_tokens).toBeGreaterThan(0)
  })
})

describe('settleInLedger tells of each run it settled, once committed (the operator\'s run line)', () => {
  it('a customer run and a compaction run are each reported once, after the commit, with the cost charged', async () => {
    const first = settle(outcome())
    const second = settle(outcome(), null, 'compaction')
    // Not before the transaction is over.
    expect(reported).toEqual([])
    await Promise.resolve()
    expect(reported).toEqual([
      { runId: first.runId, cost: first.cost, entryType: undefined },
      { runId: second.runId, cost: second.cost, entryType: 'compaction' },
    ])
  })

  it('a settlement rolled back with its transaction is not reported; a run already settled is not reported again', async () => {
    const { runId } = settle(outcome())
    await Promise.resolve()
    expect(reported).toHaveLength(1)
    // Settled again: nothing charged, nothing reported.
    expect(settleInLedger(deps(), { runId, orgId, chatId, apiKeyId: null, namespace: null, model: echo(), markupPercent: '5', startedAt: null, outcome: outcome() })).toBeNull()
    const rolledBack = insertRun(temp.store, { org_id: orgId, chat_id: chatId })
    expect(() =>
      temp.db.transaction(() => {
        settleInLedger(deps(), { runId: rolledBack, orgId, chatId, apiKeyId: null, namespace: null, model: echo(), markupPercent: '5', startedAt: null, outcome: outcome() })
        throw new Error('the batch failed')
      })(),
    ).toThrow('the batch failed')
    await Promise.resolve()
    expect(reported.map((r) => r.runId)).toEqual([runId])
  })
})
