import { hostname } from 'node:os'
import { createChatActorHost, type ActorHostOptions } from './actors/chat-actor-host.ts'
import { createContextHistory } from './actors/context-history.ts'
import { createInspection } from './actors/inspection.ts'
import { LEASE_TTL_MS, type RunDeps } from './actors/run-deps.ts'
import type { AppDeps } from './http/app-deps.ts'
import type { CatalogueService } from './providers/catalogue/catalogue-service.ts'
import type { LoadedCatalogue } from './providers/catalogue/load-catalogue.ts'
import { createLanguageModels, type LanguageModelFor } from './providers/language-models.ts'
import { createConfigResolver } from './store/config-resolution.ts'
import type { Store } from './store/index.ts'
import type { OffThreadReads } from './store/read-thread.ts'
import { NO_POSITION, type ReplicationPosition } from './store/replication-position.ts'
import { ALWAYS_PRIMARY, type ReplicationRoleSource } from './store/replication-role.ts'

export type Composition = {
  /** Its clock (createStore's `now`) is the service's clock: the actors and the routes read it too. */
  store: Store
  catalogue: Pick<CatalogueService, 'list' | 'findByName' | 'pricesAsOf' | 'resolve' | 'pricesAt' | 'checkVersion'>
  /** Every model of the catalogue file, active or not, for settling old runs. */
  allModels: LoadedCatalogue['entries']
  build: { version: string; commit: string }
  env?: NodeJS.ProcessEnv
  languageModelFor?: LanguageModelFor
  hostOptions?: ActorHostOptions
  /** Told of every run settled on this node, once committed (RunDeps.onRunSettled). */
  onRunSettled?: RunDeps['onRunSettled']
  /** MAX_RUNNING_RUNS_PER_ORG (settings.ts, decision 033); absent: the default, 64. */
  maxRunningRunsPerOrg?: number
  /** LiteFS's view of this node; without it, the node is the primary. */
  role?: ReplicationRoleSource
  position?: ReplicationPosition
  /** The read thread (src/store/read-thread.ts); without it history reads on the main thread. */
  reads?: OffThreadReads | null
}

/**
 * docs/guide/runs.md: a running run's lease lasts 30 s, renewed every third of that (decision 018).
 * LEASE_TTL_MS (whole milliseconds, at least 300) sets another, as the tests of a node change do.
 */
function leaseTtlMs(env: NodeJS.ProcessEnv): number {
  const value = env.LEASE_TTL_MS
  if (value === undefined || value === '') return LEASE_TTL_MS
  if (!/^\d+$/.test(value) || Number(value) < 300) throw new Error(`LEASE_TTL_MS must be a whole number of milliseconds, at least 300 (got ${JSON.stringify(value)})`)
  return Number(value)
}

/** Wires the services the HTTP layer is given; main and the tests build the app the same way. */
export function composeApp(c: Composition): AppDeps {
  const env = c.env ?? process.env
  const now = c.store.now
  const role = c.role ?? ALWAYS_PRIMARY
  const runDeps: RunDeps = {
    store: c.store,
    resolver: createConfigResolver(c.store),
    history: createContextHistory(c.store),
    languageModelFor: c.languageModelFor ?? createLanguageModels(env),
    modelById: (id) => c.allModels.find((m) => m.id === id),
    pricesAt: (id, at) => c.catalogue.pricesAt(id, at),
    now,
    nodeId: env.NODE_ID ?? env.FLY_MACHINE_ID ?? hostname(),
    leaseTtlMs: leaseTtlMs(env),
    ...(c.onRunSettled ? { onRunSettled: c.onRunSettled } : {}),
    ...(c.maxRunningRunsPerOrg === undefined ? {} : { maxRunningRunsPerOrg: c.maxRunningRunsPerOrg }),
  }
  const host = createChatActorHost(runDeps, { inspect: createInspection(env), role, ...c.hostOptions })
  return { store: c.store, catalogue: c.catalogue, build: c.build, now, host, role, position: c.position ?? NO_POSITION, nodeId: runDeps.nodeId, reads: c.reads ?? null }
}
