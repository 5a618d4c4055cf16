import type { CatalogueEntry } from '../../domain/catalogue/catalogue-entry.ts'
import { resolveModelForTurn, statusAt, versionInForce, type TurnModelResolution } from '../../domain/catalogue/lifecycle.ts'
import type { LoadedCatalogue } from './load-catalogue.ts'
import { storageStall } from '../../store/storage-stall.ts'

export type ModelStats = { avgTimeToFirstTokenMs: number | null; uptime: string | null }

export const STATS_REFRESH_MS = 15 * 60 * 1000
export const STATS_WINDOW_MS = 24 * 3600 * 1000
/** How soon after a provider call the figures include it (decision 015): current, at most one refresh a second. */
export const STATS_AFTER_CALL_MS = 1000

/** One catalogue version (decision 041): the shipped file is version 0, effective from the epoch; imports follow. */
export type CatalogueVersion = { version: number; effective_at: string; loaded: LoadedCatalogue }

/** Where imported versions are read: the highest version number (a cheap check), and all of them. */
export type CatalogueVersionSource = { latestVersion(): number; all(): CatalogueVersion[] }

export type CatalogueService = {
  /** The models a customer may name now (active and deprecated, with their status), at provider cost, with the latest statistics. */
  list(): CatalogueEntry[]
  /** A model a customer may name now, by its public name; undefined for a retired or unknown one. */
  findByName(name: string): CatalogueEntry | undefined
  /** What a turn naming `name` gets now (decision 041): the model, with a warning when deprecated, or its refusal with the successor. */
  resolve(name: string): TurnModelResolution
  /** A model's rates and tiers in the catalogue version in force at `at` (a run's created_at); undefined where that version lacks it. */
  pricesAt(modelId: string, at: Date): Pick<CatalogueEntry, 'rates' | 'tiers'> | undefined
  /** The date the prices in force now were read. */
  readonly pricesAsOf: string
  /** The catalogue version in force now. */
  readonly version: number
  refreshStats(now?: Date): void
  /** Re-reads the versions when the source has a newer one; cheap when it has not. */
  checkVersion(): void
  /** A provider call was recorded: refresh within STATS_AFTER_CALL_MS rather than at the next quarter hour. */
  noteCall(): void
  /** Refreshes now and then every 15 minutes; returns the stop function. */
  start(): () => void
}

const BASE_EFFECTIVE_AT = new Date(0).toISOString()

/**
 * Serves the catalogue version in force (docs/decisions/041-catalogue-lifecycle.md), each model's status derived
 * against the clock. Latency and uptime are recomputed from the last 24 hours of provider calls
 * (docs/decisions/015-vendor-calls-deadlines-retries-uptime.md): at start, every 15 minutes (which brings in other
 * nodes' calls and imported catalogue versions), and within a second of a call settled here, never per request.
 */
export function createCatalogueService(
  loaded: LoadedCatalogue,
  activeProviders: Set<string>,
  statsSince: (sinceIso: string) => Map<string, ModelStats>,
  /** The service's clock (store.now): the 24 h window ends at its now, as the calls' own dates do. */
  clock: () => Date = () => new Date(),
  versionSource: CatalogueVersionSource | null = null,
): CatalogueService {
  const base: CatalogueVersion = { version: 0, effective_at: BASE_EFFECTIVE_AT, loaded }
  let versions: CatalogueVersion[] = [base]
  let seenVersion = 0
  let stats = new Map<string, ModelStats>()
  let inForce: CatalogueVersion = base
  let all: CatalogueEntry[] = []

  const readVersions = () => {
    if (!versionSource) return
    seenVersion = versionSource.latestVersion()
    versions = [base, ...versionSource.all()]
  }
  const withStats = (entry: CatalogueEntry): CatalogueEntry => {
    const s = stats.get(entry.id)
    return { ...entry, avg_time_to_first_token_ms: s?.avgTimeToFirstTokenMs ?? null, uptime: s?.uptime ?? null }
  }
  /** The version in force now, its providers' models with statistics; recomputed when the clock passes a version's start. */
  const current = (): CatalogueEntry[] => {
    const now = clock()
    const version = versionInForce(versions, now) ?? base
    if (version !== inForce || all.length === 0) {
      inForce = version
      all = version.loaded.entries.filter((e) => activeProviders.has(e.provider)).map(withStats)
    }
    return all.map((e) => ({ ...e, status: statusAt(e, now) }))
  }
  let afterCall: NodeJS.Timeout | null = null

  const service: CatalogueService = {
    list: () => current().filter((e) => e.status !== 'retired'),
    findByName: (name) => current().find((e) => e.name === name && e.status !== 'retired'),
    resolve: (name) => resolveModelForTurn(current(), name, clock()),
    pricesAt(modelId, at) {
      const version = versionInForce(versions, at) ?? base
      const entry = version.loaded.entries.find((e) => e.id === modelId)
      return entry ? { rates: entry.rates, tiers: entry.tiers } : undefined
    },
    get pricesAsOf() {
      current()
      return inForce.loaded.pricesAsOf
    },
    get version() {
      current()
      return inForce.version
    },
    refreshStats(now = clock()) {
      // Read on the event loop: not while litefs does not answer (decision 048); the old figures serve meanwhile.
      if (storageStall.stalled()) return
      readVersions()
      stats = statsSince(new Date(now.getTime() - STATS_WINDOW_MS).toISOString())
      all = []
      current()
    },
    checkVersion() {
      if (!versionSource || versionSource.latestVersion() === seenVersion) return
      readVersions()
      all = []
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
  readVersions()
  return service
}

/** The service over a fixed list of models, every one's provider on, with the statistics they carry: benches and tests compose the app with it. */
export function fixedCatalogue(entries: CatalogueEntry[], clock: () => Date = () => new Date(), pricesAsOf = '2025-10-15', versionSource: CatalogueVersionSource | null = null): CatalogueService {
  const service = createCatalogueService({ pricesAsOf, entries }, new Set(entries.map((e) => e.provider)), () => new Map(entries.map((e) => [e.id, { avgTimeToFirstTokenMs: e.avg_time_to_first_token_ms ?? null, uptime: e.uptime ?? null }])), clock, versionSource)
  service.refreshStats()
  return service
}
