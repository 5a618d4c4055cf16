import { createCatalogueVersionStore } from './catalogue-versions.ts'
import { createApiKeyStore } from './api-keys.ts'
import { createBalanceStore } from './balance.ts'
import { createBalanceHistoryStore } from './balance-history.ts'
import { createChatStore } from './chats.ts'
import { createConfigVersionStore } from './config-versions.ts'
import { createConsoleSessionStore } from './console-sessions.ts'
import { wallClock, type Clock, type Db } from './database.ts'
import { createOrganisationStore } from './organisations.ts'
import { createPartStore } from './parts.ts'
import { createPlatformUpdateStore } from './platform-updates.ts'
import { createProviderCallStore } from './provider-calls.ts'
import { createUsageReportStore } from './usage-report.ts'
import { createRunStore } from './runs.ts'
import { createSummaryStore } from './summaries.ts'
import { createIdempotencyKeyStore } from './idempotency-keys.ts'
import { createTokenCorrectionStore } from './token-corrections.ts'
import { createWriteQueue } from './write-queue.ts'
import { createReadMostly } from './read-mostly.ts'
import { createForkStore } from './fork-chat.ts'
import { createErasureStore } from './erasures.ts'

export type StoreOptions = {
  /**
   * The service's clock (issue 12: one clock): every created_at, updated_at, occurred_at and the
   * like that the store dates itself comes from it, and composeApp gives the actors the same one as
   * deps.now. The wall clock when not given (the CLI, tests that do not set a time).
   */
  now?: Clock
}

/** Every query module over one connection; each prepares its statements once, here. */
export function createStore(db: Db, options: StoreOptions = {}) {
  const now = options.now ?? wallClock
  const readMostly = createReadMostly(db)
  return {
    db,
    /** The clock this store dates its writes by. */
    now,
    organisations: createOrganisationStore(db, now, readMostly),
    apiKeys: createApiKeyStore(db, now, readMostly),
    consoleSessions: createConsoleSessionStore(db, now),
    chats: createChatStore(db, now),
    parts: createPartStore(db, now),
    balance: createBalanceStore(db, now),
    balanceHistory: createBalanceHistoryStore(db),
    updates: createPlatformUpdateStore(db, now),
    config: createConfigVersionStore(db, now),
    usage: createUsageReportStore(db),
    providerCalls: createProviderCallStore(db),
    runs: createRunStore(db),
    summaries: createSummaryStore(db),
    idempotencyKeys: createIdempotencyKeyStore(db),
    tokenCorrections: createTokenCorrectionStore(db, now, readMostly),
    /** Imported catalogue versions (docs/decisions/041-catalogue-lifecycle.md). */
    catalogueVersions: createCatalogueVersionStore(db, now, readMostly),
    /** Forks: a chat's rows copied into a new chat (docs/decisions/037-fork.md). */
    forks: createForkStore(db, now),
    /** Parts erased from a chat's ledger (docs/decisions/056-erasing-items.md). */
    erasures: createErasureStore(db, now),
    /** Group commit for the turn path: admissions, closed blocks and settlements. */
    writes: createWriteQueue(db),
  }
}
export type Store = ReturnType<typeof createStore>

/**
 * A LiteFS role change (docs/decisions/009-multi-node-litefs.md): the store moves to a new
 * connection, writable after a promotion, read-only after a demotion. Every query module is
 * prepared again on it, in place, so whoever holds the store uses the new connection from its next
 * call. The old connection closes once writes already queued on it have had their turn (they fail
 * on a demoted node, which can no longer write).
 */
export function replaceConnection(store: Store, db: Db): void {
  const old = store.db
  Object.assign(store, createStore(db, { now: store.now }))
  setImmediate(() => {
    if (old.open) old.close()
  })
}
