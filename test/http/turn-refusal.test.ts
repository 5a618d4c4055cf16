import { describe, expect, it } from 'vitest'
import { TurnCapacityError, TurnOverloadError, retryAfterOf } from '../../src/domain/errors.ts'
import { turnRefusal, type TurnAdmissionLimits } from '../../src/http/routes/api/v1/chats/responses.ts'
import { watchLoopDelay } from '../../src/http/loop-delay.ts'
import { readSettings } from '../../src/settings.ts'

const limits: TurnAdmissionLimits = { maxConcurrentTurns: 100, shedLoopDelayMs: 10, shedFromTurns: 32 }

describe('which turns a node refuses (decision 033)', () => {
  it('takes a turn while under the cap and the loop keeps up', () => {
    expect(turnRefusal(0, 0, limits)).toBeNull()
    expect(turnRefusal(99, 10, limits)).toBeNull()
  })

  it('refuses past MAX_CONCURRENT_TURNS whatever the loop does', () => {
    const refusal = turnRefusal(100, 0, limits)
    expect(refusal).toBeInstanceOf(TurnCapacityError)
    expect(refusal?.details).toEqual({ reason: 'concurrent_turns', limit: 100, retry_after_seconds: 1 })
  })

  it('sheds a turn when the loop runs late while it serves many turns', () => {
    const refusal = turnRefusal(32, 10.6, limits)
    expect(refusal).toBeInstanceOf(TurnOverloadError)
    expect(refusal?.code).toBe('unavailable')
    expect(refusal?.details).toEqual({ reason: 'overloaded', loop_delay_ms: 11, retry_after_seconds: 1 })
    expect(retryAfterOf(refusal!)).toBe(1)
  })

  it('does not shed for a late loop with few turns in flight: something else is busy', () => {
    expect(turnRefusal(31, 500, limits)).toBeNull()
  })

  it('reads its limits from the environment, with defaults', () => {
    expect(readSettings({})).toMatchObject({ shedLoopDelayMs: 3, shedFromTurns: 32 })
    expect(readSettings({ SHED_LOOP_DELAY_MS: '25', SHED_FROM_TURNS: '8' })).toMatchObject({ shedLoopDelayMs: 25, shedFromTurns: 8 })
  })
})

describe('the loop delay gauge', () => {
  it('reads a blocked loop as late', async () => {
    const loop = watchLoopDelay(50)
    try {
      // Node's histogram counts from its timer's first run on: let it run before holding the loop.
      await new Promise((resolve) => setTimeout(resolve, 120))
      // Hold the loop: the sampling timer runs late by about this much.
      const until = performance.now() + 200
      while (performance.now() < until);
      await expect.poll(() => loop.ms, { interval: 5, timeout: 5_000 }).toBeGreaterThan(20)
    } finally {
      loop.stop()
    }
  })
})
