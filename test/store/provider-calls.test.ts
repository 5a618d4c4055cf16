import fc from 'fast-check'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { openTempStore } from '../helpers/temp-store.ts'

let t: ReturnType<typeof openTempStore>
beforeEach(() => {
  t = openTempStore()
})
afterEach(() => t.close())

type Call = { modelId: string; startedAt: string; succeeded: boolean; firstDeltaMs: number | null }

/** The figures as the catalogue states them (docs/guide/models.md), computed from the calls themselves, independently of the store. */
function expected(calls: Call[], since: string) {
  const byModel = new Map<string, Call[]>()
  for (const c of calls) if (c.startedAt >= since) byModel.set(c.modelId, [...(byModel.get(c.modelId) ?? []), c])
  return new Map(
    [...byModel].map(([model, list]) => {
      const timed = list.filter((c) => c.succeeded && c.firstDeltaMs !== null).map((c) => c.firstDeltaMs!)
      return [
        model,
        {
          avgTimeToFirstTokenMs: timed.length === 0 ? null : Math.round((timed.reduce((a, b) => a + b, 0) / timed.length) * 10) / 10,
          uptime: (list.filter((c) => c.succeeded).length / list.length).toFixed(4),
        },
      ]
    }),
  )
}

const BASE = Date.parse('2026-11-29T00:00:00.000Z')
const call = fc.record({
  modelId: fc.constantFrom('openai/gpt-5', 'anthropic/claude-haiku-4.5', 'sandbox/echo'),
  // Within three hours, to the millisecond: many calls share minutes, some sit on a minute's edge.
  startedAt: fc.oneof(fc.integer({ min: 0, max: 3 * 3600_000 }), fc.integer({ min: 0, max: 180 }).map((m) => m * 60_000)).map((ms) => new Date(BASE + ms).toISOString()),
  succeeded: fc.boolean(),
  firstDeltaMs: fc.option(fc.integer({ min: 0, max: 60_000 })),
})

describe('provider call statistics (the catalogue figures), kept per minute (issue 34)', () => {
  it('equal the figures computed from the calls themselves, for any window start, inside a transaction or not', () => {
    fc.assert(
      fc.property(fc.array(call, { maxLength: 60 }), fc.integer({ min: 0, max: 3 * 3600_000 }), fc.boolean(), (calls, sinceMs, inTransaction) => {
        t.db.exec('DELETE FROM provider_calls; DELETE FROM provider_call_minutes')
        const recordAll = () => calls.forEach((c) => t.store.providerCalls.record(c))
        if (inTransaction) t.db.transaction(recordAll)()
        else recordAll()
        const since = new Date(BASE + sinceMs).toISOString()
        expect(t.store.providerCalls.statsSince(since)).toEqual(expected(calls, since))
      }),
      { numRuns: 150 },
    )
  })

  it('a window reads the calls of its first, partial minute only; whole minutes come from their totals', () => {
    const at = (minute: number, second: number) => new Date(BASE + minute * 60_000 + second * 1000).toISOString()
    for (let m = 0; m < 30; m++) for (let i = 0; i < 20; i++) t.store.providerCalls.record({ modelId: 'm', startedAt: at(m, i), succeeded: true, firstDeltaMs: 100 })
    // 600 calls in 30 minutes: the totals hold 30 rows.
    expect(t.db.prepare('SELECT count(*) AS n FROM provider_call_minutes').get()).toEqual({ n: 30 })
    // Counting rows read through a trace of the statement's steps is not possible from JavaScript;
    // the plan shows both reads are bounded by their index ranges.
    const plan = t.db.prepare(`EXPLAIN QUERY PLAN SELECT 1 FROM provider_calls WHERE started_at >= ? AND started_at < ?`).all('a', 'b') as { detail: string }[]
    expect(plan.map((p) => p.detail).join()).toMatch(/INDEX provider_calls_started \(started_at>\? AND started_at<\?\)/)
    expect(t.store.providerCalls.statsSince(at(10, 5)).get('m')).toEqual({ avgTimeToFirstTokenMs: 100, uptime: '1.0000' })
  })
})
