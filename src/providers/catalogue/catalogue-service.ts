import type { CatalogueEntry } from '../../domain/catalogue/catalogue-entry.ts'
import type { LoadedCatalogue } from './load-catalogue.ts'

export type ModelStats = { avgTimeToFirstTokenMs: number | null; uptime: string | null }

export const STATS_REFRESH_MS = 15 * 60 * 1000
export const STATS_WINDOW_MS = 24 * 3600 * 1000
/** How soon after a provider call the figures include it (decision 015): current, at most one refresh a second. */
export const STATS_AFTER_CALL_MS = 1000

export type CatalogueService = {
  /** Active models at provider cost, with the latest refreshed statistics. */
  list(): CatalogueEntry[]
  /** An active model by its public name. */
  findByName(name: string): CatalogueEntry | undefined
  pricesAsOf: string
  refreshStats(now?: Date): void
  /** A provider call was recorded: refresh within STATS_AFTER_CALL_MS rather than at the next quarter hour. */
  noteCall(): void
  /** Refreshes now and then every 15 minutes; returns the stop function. */
  start(): () => void
}

/**
 * Serves the active part of the catalogue. Latency and uptime are recomputed from the last 24
 * hours of provider calls (docs/decisions/015-vendor-calls-deadlines-retries-uptime.md): at start, every 15 minutes (which brings in other nodes'
 * calls), and within a second of a call settled here, never per request.
 */
export function createCatalogueService(
  loaded: LoadedCatalogue,
  activeProviders: Set<string>,
  statsSince: (sinceIso: string) => Map<string, ModelStats>,
  /** The service's clock (store.now): the 24 h window ends at its now, as the calls' own dates do. */
  clock: () => Date = () => new Date(),
): CatalogueService {
  const active = loaded.entries.filter((entry) => activeProviders.has(entry.provider))
  let current: CatalogueEntry[] = active.map((e) => ({ ...e, avg_time_to_first_token_ms: null, uptime: null }))
  let byName = new Map(current.map((e) => [e.name, e]))
  let afterCall: NodeJS.Timeout | null = null

  const service: CatalogueService = {
    list: () => current,
    findByName: (name) => byName.get(name),
    pricesAsOf: loaded.pricesAsOf,
    refreshStats(now = clock()) {
      const stats = statsSince(new Date(now.getTime() - STATS_WINDOW_MS).toISOString())
      current = active.map((entry) => {
        const s = stats.get(entry.id)
        return { ...entry, avg_time_to_first_token_ms: s?.avgTimeToFirstTokenMs ?? null, uptime: s?.uptime ?? null }
      })
      byName = new Map(current.map((e) => [e.name, e]))
    },
    noteCall() {
      if (afterCall) return
      afterCall = setTimeout(() => {
        afterCall = null
        service.refreshStats()
      }, STATS_AFTER_CALL_MS)
      afterCall.unref()
    },
    start() {
      service.refreshStats()
      const timer = setInterval(() => service.refreshStats(), STATS_REFRESH_MS)
      timer.unref()
      return () => {
        clearInterval(timer)
        if (afterCall) clearTimeout(afterCall)
      }
    },
  }
  return service
}
