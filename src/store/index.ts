import { createApiKeyStore } from './api-keys.ts'
import { createBalanceStore } from './balance.ts'
import { createChatStore } from './chats.ts'
import { createConfigVersionStore } from './config-versions.ts'
import { createConsoleSessionStore } from './console-sessions.ts'
import type { Db } from './database.ts'
import { createOrganisationStore } from './organisations.ts'
import { createPartStore } from './parts.ts'
import { createPlatformUpdateStore } from './platform-updates.ts'
import { createProviderCallStore } from './provider-calls.ts'
import { createUsageReportStore } from './usage-report.ts'
import { createRunStore } from './runs.ts'
import { createSummaryStore } from './summaries.ts'
import { createIdempotencyKeyStore } from './idempotency-keys.ts'
import { createWriteQueue } from './write-queue.ts'

/** Every query module over one connection; each prepares its statements once, here. */
export function createStore(db: Db) {
  return {
    db,
    organisations: createOrganisationStore(db),
    apiKeys: createApiKeyStore(db),
    consoleSessions: createConsoleSessionStore(db),
    chats: createChatStore(db),
    parts: createPartStore(db),
    balance: createBalanceStore(db),
    updates: createPlatformUpdateStore(db),
    config: createConfigVersionStore(db),
    usage: createUsageReportStore(db),
    providerCalls: createProviderCallStore(db),
    runs: createRunStore(db),
    summaries: createSummaryStore(db),
    idempotencyKeys: createIdempotencyKeyStore(db),
    /** Group commit for the turn path: admissions, closed blocks and settlements. */
    writes: createWriteQueue(db),
  }
}
export type Store = ReturnType<typeof createStore>
