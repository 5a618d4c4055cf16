import { Decimal } from 'decimal.js'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import {
  createCatalogueService,
  STATS_AFTER_CALL_MS,
  STATS_REFRESH_MS,
  type ModelStats,
} from '../../../src/providers/catalogue/catalogue-service.ts'
import { loadCatalogue } from '../../../src/providers/catalogue/load-catalogue.ts'
import { openTempStore } from '../../helpers/temp-store.ts'

const loaded = loadCatalogue()
const byName = (name: string) => loaded.entries.find((m) => m.name === name)!
const ECHO = byName('sandbox/echo')
const ECHO_1M = byName('sandbox/echo-1m')
const SONNET = byName('anthropic/claude-sonnet-4.5')

const NOW = new Date('2026-11-22T10:30:00.000Z')
const ago = (ms: number) => new Date(NOW.getTime() - ms).toISOString()
const MIN = 60_000
const HOUR = 60 * MIN

let t: ReturnType<typeof openTempStore>
beforeEach(() => {
  t = openTempStore()
})
afterEach(() => {
  t.close()
  vi.useRealTimers()
})

const serviceOver = (active: string[], clock = () => new Date('2026-11-28T12:00:00Z')) =>
  createCatalogueService(loaded, new Set(active), (since) => t.store.providerCalls.statsSince(since), clock)

describe('createCatalogueService', () => {
  it('lists only the models of active providers', () => {
    const service = serviceOver(['sandbox', 'anthropic'])
    expect(service.list().map((m) => m.name).sort()).toEqual([
      'anthropic/claude-haiku-4.5',
      'anthropic/claude-sonnet-4.5',
      'anthropic/claude-sonnet-5.5',
      'sandbox/agent',
      'sandbox/echo',
      'sandbox/echo-1m',
      'sandbox/echo-8k',
    ])
    expect(service.findByName('sandbox/echo-1m')?.id).toBe(ECHO_1M.id)
    expect(service.findByName('openai/gpt-5')).toBeUndefined()
    expect(service.pricesAsOf).toBe(loaded.pricesAsOf)
  })

  it('lists nothing with no active provider', () => {
    const service = serviceOver([])
    expect(service.list()).toEqual([])
    expect(service.findByName('sandbox/echo')).toBeUndefined()
  })

  it('lists every model when every provider is active, at provider cost', () => {
    const service = serviceOver(['anthropic', 'openai', 'google', 'mistral', 'xai', 'deepseek', 'sandbox'])
    // 23 in the file, less the five retired by 2026-11-28 (decision 041).
    expect(service.list()).toHaveLength(18)
    expect(service.list().map((m) => m.name)).not.toContain('xai/grok-4')
    expect(service.findByName('sandbox/echo')!.rates.input).toBe('1.00')
  })

  it('has null statistics before any refresh and when there are no samples', () => {
    const service = serviceOver(['sandbox'])
    for (const m of service.list()) expect(m).toMatchObject({ avg_time_to_first_token_ms: null, uptime: null })
    service.refreshStats(NOW)
    for (const m of service.list()) expect(m).toMatchObject({ avg_time_to_first_token_ms: null, uptime: null })
  })

  it('computes mean time to first token over successes and uptime over all calls of the last 24 hours', () => {
    const record = (modelId: string, startedAt: string, succeeded: boolean, firstDeltaMs: number | null) =>
      t.store.providerCalls.record({ modelId, startedAt, succeeded, firstDeltaMs })
    // sandbox/echo, inside the window: successes at 100, 200 and 600 ms, two failures
    record(ECHO.id, ago(1 * MIN), true, 100)
    record(ECHO.id, ago(5 * HOUR), true, 200)
    record(ECHO.id, ago(24 * HOUR - MIN), true, 600)
    record(ECHO.id, ago(2 * HOUR), false, null)
    record(ECHO.id, ago(3 * HOUR), false, 5) // a failure after a first delta: not a latency sample
    // older than 24 hours: excluded from both figures
    record(ECHO.id, ago(24 * HOUR + MIN), true, 90_000)
    record(ECHO.id, ago(30 * HOUR), false, null)
    record(ECHO.id, ago(72 * HOUR), false, null)
    // sandbox/echo-1m: failures only in the window
    record(ECHO_1M.id, ago(10 * MIN), false, null)
    record(ECHO_1M.id, ago(20 * MIN), false, null)
    // an inactive provider's model: recorded but never listed
    record(SONNET.id, ago(10 * MIN), true, 50)

    const service = serviceOver(['sandbox'])
    service.refreshStats(NOW)
    const echo = service.findByName('sandbox/echo')!
    // (100 + 200 + 600) / 3 = 300 ms; 3 successes of 5 calls = 0.6
    expect(echo.avg_time_to_first_token_ms).toBe(300)
    expect(typeof echo.uptime).toBe('string')
    expect(new Decimal(echo.uptime!).eq('0.6'), echo.uptime!).toBe(true)

    const echo1m = service.findByName('sandbox/echo-1m')!
    // no successful request: no latency sample; every eligible request failed: uptime 0
    expect(echo1m.avg_time_to_first_token_ms).toBeNull()
    expect(new Decimal(echo1m.uptime!).eq(0), String(echo1m.uptime)).toBe(true)

    expect(service.list().map((m) => m.name)).not.toContain(SONNET.name)
    // list() and findByName() agree after the refresh
    expect(service.list().find((m) => m.name === 'sandbox/echo')).toEqual(echo)
  })

  it('drops samples that age out of the window on the next refresh', () => {
    t.store.providerCalls.record({ modelId: ECHO.id, startedAt: ago(23 * HOUR), succeeded: true, firstDeltaMs: 400 })
    t.store.providerCalls.record({ modelId: ECHO.id, startedAt: ago(1 * HOUR), succeeded: false, firstDeltaMs: null })
    const service = serviceOver(['sandbox'])
    service.refreshStats(NOW)
    expect(service.findByName('sandbox/echo')).toMatchObject({ avg_time_to_first_token_ms: 400 })
    expect(new Decimal(service.findByName('sandbox/echo')!.uptime!).eq('0.5')).toBe(true)

    // Two hours later the success is 25 hours old: only the failure remains.
    service.refreshStats(new Date(NOW.getTime() + 2 * HOUR))
    expect(service.findByName('sandbox/echo')!.avg_time_to_first_token_ms).toBeNull()
    expect(new Decimal(service.findByName('sandbox/echo')!.uptime!).eq(0)).toBe(true)

    // Another day on, nothing is left: no samples, null again.
    service.refreshStats(new Date(NOW.getTime() + 26 * HOUR))
    expect(service.findByName('sandbox/echo')).toMatchObject({ avg_time_to_first_token_ms: null, uptime: null })
  })

  it('keeps statistics until the next refresh rather than computing per request', () => {
    const service = serviceOver(['sandbox'])
    service.refreshStats(NOW)
    t.store.providerCalls.record({ modelId: ECHO.id, startedAt: ago(MIN), succeeded: true, firstDeltaMs: 250 })
    expect(service.findByName('sandbox/echo')!.avg_time_to_first_token_ms).toBeNull()
    service.refreshStats(NOW)
    expect(service.findByName('sandbox/echo')!.avg_time_to_first_token_ms).toBe(250)
  })

  it('refreshes at start and then every 15 minutes until stopped', () => {
    vi.useFakeTimers({ now: NOW })
    const windows: string[] = []
    const stats = (since: string) => {
      windows.push(since)
      return new Map<string, ModelStats>()
    }
    const service = createCatalogueService(loaded, new Set(['sandbox']), stats)
    expect(STATS_REFRESH_MS).toBe(15 * 60 * 1000)
    const stop = service.start()
    expect(windows).toEqual([ago(24 * HOUR)])
    vi.advanceTimersByTime(15 * MIN - 1)
    expect(windows).toHaveLength(1)
    vi.advanceTimersByTime(1)
    expect(windows).toHaveLength(2)
    // each refresh looks back 24 hours from its own clock
    expect(windows[1]).toBe(new Date(NOW.getTime() + 15 * MIN - 24 * HOUR).toISOString())
    vi.advanceTimersByTime(30 * MIN)
    expect(windows).toHaveLength(4)
    stop()
    vi.advanceTimersByTime(60 * MIN)
    expect(windows).toHaveLength(4)
  })

  it('the 24 h window ends at the service clock given, not the wall clock (issue 12: one clock)', () => {
    const windows: string[] = []
    const serviceNow = new Date('2031-06-01T12:00:00.000Z')
    const service = createCatalogueService(loaded, new Set(['sandbox']), (since) => (windows.push(since), new Map()), () => serviceNow)
    service.refreshStats()
    expect(windows).toEqual([new Date(serviceNow.getTime() - 24 * HOUR).toISOString()])
  })

  it('includes a call settled here within a second, one refresh for a burst of calls', () => {
    vi.useFakeTimers({ now: NOW })
    const service = serviceOver(['sandbox'], () => new Date())
    let refreshes = 0
    const refresh = service.refreshStats.bind(service)
    service.refreshStats = (now) => {
      refreshes += 1
      refresh(now)
    }
    const stop = service.start()
    t.store.providerCalls.onRecord(() => service.noteCall())
    expect(refreshes).toBe(1)
    t.store.providerCalls.record({ modelId: ECHO.id, startedAt: ago(1), succeeded: true, firstDeltaMs: 120 })
    t.store.providerCalls.record({ modelId: ECHO.id, startedAt: ago(1), succeeded: false, firstDeltaMs: null })
    expect(service.findByName('sandbox/echo')!.uptime).toBeNull()
    vi.advanceTimersByTime(STATS_AFTER_CALL_MS)
    expect(refreshes).toBe(2)
    expect(service.findByName('sandbox/echo')).toMatchObject({ avg_time_to_first_token_ms: 120, uptime: '0.5000' })
    stop()
  })
})
