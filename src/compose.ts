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
import { NO_POSITION, type ReplicationPosition } from './store/replication-position.ts'
import { ALWAYS_PRIMARY, type ReplicationRoleSource } from './store/replication-role.ts'

export type Composition = {
  store: Store
  catalogue: Pick<CatalogueService, 'list' | 'findByName' | 'pricesAsOf'>
  /** Every model of the catalogue file, active or not, for settling old runs. */
  allModels: LoadedCatalogue['entries']
  build: { version: string; commit: string }
  env?: NodeJS.ProcessEnv
  now?: () => Date
  languageModelFor?: LanguageModelFor
  hostOptions?: ActorHostOptions
  /** LiteFS's view of this node; without it, the node is the primary. */
  role?: ReplicationRoleSource
  position?: ReplicationPosition
}

/** Wires the services the HTTP layer is given; main and the tests build the app the same way. */
export function composeApp(c: Composition): AppDeps {
  const env = c.env ?? process.env
  const now = c.now ?? (() => new Date())
  const role = c.role ?? ALWAYS_PRIMARY
  const runDeps: RunDeps = {
    store: c.store,
    resolver: createConfigResolver(c.store),
    history: createContextHistory(c.store),
    languageModelFor: c.languageModelFor ?? createLanguageModels(env),
    modelById: (id) => c.allModels.find((m) => m.id === id),
    now,
    nodeId: env.NODE_ID ?? env.FLY_MACHINE_ID ?? hostname(),
    leaseTtlMs: LEASE_TTL_MS,
  }
  const host = createChatActorHost(runDeps, { inspect: createInspection(env), role, ...c.hostOptions })
  return { store: c.store, catalogue: c.catalogue, build: c.build, now, host, role, position: c.position ?? NO_POSITION, nodeId: runDeps.nodeId }
}
