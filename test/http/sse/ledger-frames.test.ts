import { afterEach, describe, expect, it, vi } from 'vitest'
import { LEDGER_POLL_MS, ledgerFrameSources } from '../../../src/http/sse/ledger-frames.ts'
import type { RunRow } from '../../../src/store/runs.ts'
import { framesOf } from '../../../src/actors/run-channel.ts'

const runRow = (status: RunRow['status']): RunRow => ({
  id: 'run_1',
  org_id: 'org_1',
  chat_id: 'chat_1',
  origin: 'customer',
  status,
  model_id: 'm',
  model_name: 'sandbox/echo',
  namespace: null,
  api_key_id: null,
  retry_of: null,
  created_at: '2026-11-26T00:00:00.000Z',
  completed_at: null,
  settled_at: null,
  cost_units: null,
  error: status === 'failed' ? 'interrupted' : null,
  stop_reason: null,
  latency_ms: null,
  provider_request_id: null,
  usage: null,
  manifest: '{}',
  lease_owner: null,
  lease_expires_at: null,
})

describe("a run's frames rebuilt from the ledger, shared by its readers (decision 038)", () => {
  afterEach(() => vi.useRealTimers())

  it('rebuilds a run once for all its readers, and lets the frames go with the last one', () => {
    const sources = ledgerFrameSources()
    const read = vi.fn(() => ({ run: runRow('failed'), parts: [] }))
    const first = sources.acquire('run_1', read)
    const second = sources.acquire('run_1', read)
    expect(second.source).toBe(first.source)
    expect(read).toHaveBeenCalledTimes(1)
    expect(first.source.hasEnded).toBe(true)
    expect(framesOf(first.source).at(-1)?.event).toBe('error')

    first.release()
    first.release() // twice is once
    expect(sources.size).toBe(1)
    second.release()
    expect(sources.size).toBe(0)
    // A later reader rebuilds afresh.
    sources.acquire('run_1', read)
    expect(read).toHaveBeenCalledTimes(2)
  })

  it('reads a running run again on one timer however many readers wait, and wakes them all', () => {
    vi.useFakeTimers()
    const sources = ledgerFrameSources()
    let status: RunRow['status'] = 'running'
    const read = vi.fn(() => ({ run: runRow(status), parts: [] }))
    const { source, release } = sources.acquire('run_1', read)
    const wakes = [vi.fn(), vi.fn(), vi.fn()]
    const stops = wakes.map((wake) => source.wake(wake))
    vi.advanceTimersByTime(LEDGER_POLL_MS)
    // One read for the three readers, and nothing new: nobody woken.
    expect(read).toHaveBeenCalledTimes(2)
    for (const wake of wakes) expect(wake).not.toHaveBeenCalled()

    status = 'failed'
    vi.advanceTimersByTime(LEDGER_POLL_MS)
    expect(read).toHaveBeenCalledTimes(3)
    for (const wake of wakes) expect(wake).toHaveBeenCalledTimes(1)
    expect(source.hasEnded).toBe(true)
    // Ended: no more reads.
    vi.advanceTimersByTime(LEDGER_POLL_MS * 5)
    expect(read).toHaveBeenCalledTimes(3)
    for (const stop of stops) stop()
    release()
  })

  it('stops reading once no reader waits', () => {
    vi.useFakeTimers()
    const sources = ledgerFrameSources()
    const read = vi.fn(() => ({ run: runRow('running'), parts: [] }))
    const { source } = sources.acquire('run_1', read)
    const stop = source.wake(() => {})
    vi.advanceTimersByTime(LEDGER_POLL_MS)
    expect(read).toHaveBeenCalledTimes(2)
    stop()
    vi.advanceTimersByTime(LEDGER_POLL_MS * 5)
    expect(read).toHaveBeenCalledTimes(2)
  })
})
