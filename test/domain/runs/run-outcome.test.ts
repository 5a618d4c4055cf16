import { describe, expect, it } from 'vitest'
import { endedAs, isUptimeSample, runOutcome, usageKnownSoFar, type RunOutcome } from '../../../src/domain/runs/run-outcome.ts'

const USAGE = { input_tokens: 10, output_tokens: 5, reasoning_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0 }

describe('runOutcome, the one builder of a RunOutcome', () => {
  it('fills in what a run does not know by rule: no error, no ids, no calls, no first delta, no vendor request', () => {
    expect(runOutcome({ status: 'failed', usage: USAGE, latencyMs: null, streamOpened: true })).toEqual({
      status: 'failed',
      stopReason: null,
      error: null,
      usage: USAGE,
      usageLost: false,
      providerResponseId: null,
      providerRequestId: null,
      modelServed: null,
      pendingToolCalls: [],
      latencyMs: null,
      firstDeltaMs: null,
      streamOpened: true,
      vendorRequests: 0,
      contextRefusal: null,
    })
  })

  it('keeps every fact it is given', () => {
    const facts: RunOutcome = {
      status: 'succeeded',
      stopReason: 'tool_use',
      error: null,
      usage: USAGE,
      usageLost: true,
      providerResponseId: 'resp_1',
      providerRequestId: 'req_1',
      modelServed: 'm-1',
      pendingToolCalls: [{ tool_name: 'x', tool_use_id: 'c1', created_at: '2030-01-01T00:00:00.000Z' }],
      latencyMs: 120,
      firstDeltaMs: 40,
      streamOpened: true,
      vendorRequests: 2,
      contextRefusal: null,
    }
    expect(runOutcome(facts)).toEqual(facts)
  })

  it('a success that did not say how it ended ended end_turn; any other ending keeps what it said, or none', () => {
    const base = { usage: USAGE, latencyMs: 1, streamOpened: true }
    expect(runOutcome({ ...base, status: 'succeeded' }).stopReason).toBe('end_turn')
    expect(runOutcome({ ...base, status: 'succeeded', stopReason: null }).stopReason).toBe('end_turn')
    expect(runOutcome({ ...base, status: 'succeeded', stopReason: 'max_tokens' }).stopReason).toBe('max_tokens')
    expect(runOutcome({ ...base, status: 'failed', stopReason: null }).stopReason).toBeNull()
    expect(runOutcome({ ...base, status: 'cancelled' }).stopReason).toBeNull()
    // A stream that finished but could not be kept (a ledger write failed) still says how it ended.
    expect(runOutcome({ ...base, status: 'failed', stopReason: 'end_turn' }).stopReason).toBe('end_turn')
  })

  it('decision 017: without the vendor request id header, the response id stands in', () => {
    const base = { status: 'succeeded' as const, usage: USAGE, latencyMs: 1, streamOpened: true }
    expect(runOutcome({ ...base, providerResponseId: 'resp_1' }).providerRequestId).toBe('resp_1')
    expect(runOutcome({ ...base, providerResponseId: 'resp_1', providerRequestId: null }).providerRequestId).toBe('resp_1')
    expect(runOutcome({ ...base, providerResponseId: 'resp_1', providerRequestId: 'req_1' }).providerRequestId).toBe('req_1')
  })

  it('an outcome nobody knows reached the vendor is no uptime sample; one that did is', () => {
    const base = { status: 'failed' as const, usage: USAGE, latencyMs: 1, streamOpened: true }
    expect(isUptimeSample(runOutcome(base))).toBe(false)
    expect(isUptimeSample(runOutcome({ ...base, vendorRequests: 1 }))).toBe(true)
  })
})

describe('endedAs: a run that did not succeed, its ending told again', () => {
  const streamed = runOutcome({
    status: 'cancelled',
    stopReason: 'max_tokens',
    usage: usageKnownSoFar(120, 'partial', true),
    usageLost: true,
    providerResponseId: 'resp_1',
    providerRequestId: 'req_1',
    latencyMs: 50,
    firstDeltaMs: 10,
    streamOpened: true,
    vendorRequests: 1,
  })

  it('takes the new status and error, says no stop reason, and keeps what was streamed and used', () => {
    const deleted = endedAs(streamed, 'cancelled', { code: 'chat_deleted', message: 'gone' })
    expect(deleted).toEqual({ ...streamed, status: 'cancelled', stopReason: null, error: { code: 'chat_deleted', message: 'gone' } })
    const interrupted = endedAs(streamed, 'failed', { code: 'interrupted', message: 'interrupted' })
    expect(interrupted).toEqual({ ...streamed, status: 'failed', stopReason: null, error: { code: 'interrupted', message: 'interrupted' } })
  })
})
