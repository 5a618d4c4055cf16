import type { Settlement } from './run-lifecycle.ts'
import type { CatalogueEntry } from '../domain/catalogue/catalogue-entry.ts'
import type { LanguageModelFor } from '../providers/language-models.ts'
import type { ContextHistory } from './context-history.ts'
import type { ConfigResolver } from '../store/config-resolution.ts'
import type { Store } from '../store/index.ts'

/** Everything run execution needs from the outside; tests hand in their own. */
export type RunDeps = {
  store: Store
  resolver: ConfigResolver
  /** The ledger as packing reads it, kept between turns. */
  history: ContextHistory
  languageModelFor: LanguageModelFor
  /** Any catalogue model by id, active or not: runs settle even after a vendor is switched off. */
  modelById: (id: string) => CatalogueEntry | undefined
  /**
   * A model's rates and tiers in the catalogue version in force at a run's start (decision 041): a price imported
   * with a later effective time leaves the runs before it as they were. Absent: the model's own rates.
   */
  pricesAt?: (modelId: string, at: Date) => Pick<CatalogueEntry, 'rates' | 'tiers'> | undefined
  now: () => Date
  /** This node's name; its leases mark the runs it streams. */
  nodeId: string
  leaseTtlMs: number
  /**
   * MAX_RUNNING_RUNS_PER_ORG (docs/decisions/033-running-run-caps.md): the running customer runs one
   * organisation may have at once; admission refuses a turn past it. Absent: the default, 64.
   */
  maxRunningRunsPerOrg?: number
  /** Told of every run settled here (customer, compaction, swept) once its settlement is committed: main logs a line. */
  onRunSettled?: (settled: Settlement, cost: string) => void
}

export const LEASE_TTL_MS = 30_000
