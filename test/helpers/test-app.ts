import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { CatalogueEntry } from '../../src/domain/catalogue/catalogue-entry.ts'
import type { ChatActorHost } from '../../src/actors/chat-actor-host.ts'
import { composeApp } from '../../src/compose.ts'
import { Writable } from 'node:stream'
import { buildApp, type App, type BuildAppOptions } from '../../src/http/app.ts'
import { storedCatalogueVersions } from '../../src/providers/catalogue/catalogue-import.ts'
import { fixedCatalogue } from '../../src/providers/catalogue/catalogue-service.ts'
import { loadCatalogue } from '../../src/providers/catalogue/load-catalogue.ts'
import type { LanguageModelFor } from '../../src/providers/language-models.ts'
import { openDatabase } from '../../src/store/database.ts'
import { createStore, type Store } from '../../src/store/index.ts'
import { watchInProcess } from './contract-check.ts'

export type TestOrg = { orgId: string; key: string; keyId: string; auth: { authorization: string } }

export type TestContext = {
  app: App
  store: Store
  dir: string
  host: ChatActorHost
  /** Creates an organisation with one API key. */
  org: (slug?: string) => TestOrg
  close: () => Promise<void>
}

/** A real app over a real SQLite file in a fresh temporary directory; `now` is its one clock, the store's and the actors'. */
export async function createTestApp(
  options: {
    catalogue?: CatalogueEntry[]
    now?: () => Date
    languageModelFor?: LanguageModelFor
    rateLimitPerMinute?: number
    /** MAX_RUNNING_RUNS_PER_ORG (decision 033); default 64. */
    maxRunningRunsPerOrg?: number
    /** MAX_CONCURRENT_TURNS (decision 033); default 1024. */
    maxConcurrentTurns?: number
    logger?: BuildAppOptions['logger']
    /** The request deadline (decision 019's slow-body tests); the app's default unless told. */
    requestTimeoutMs?: number
    /** Readers of runs' events held at once (decision 062); the app's defaults unless told. */
    readerLimits?: BuildAppOptions['readerLimits']
  } = {},
): Promise<TestContext> {
  const dir = mkdtempSync(join(tmpdir(), 'parley-test-'))
  const db = openDatabase(join(dir, 'parley.db'))
  const store = createStore(db, { now: options.now })
  const catalogue = options.catalogue ?? []
  const deps = composeApp({
    store,
    // The real service over the given models, every provider on, on the store's clock, reading imported versions.
    catalogue: fixedCatalogue(catalogue, store.now, loadCatalogue().pricesAsOf, storedCatalogueVersions(store)),
    allModels: catalogue,
    languageModelFor: options.languageModelFor,
    env: { NODE_ID: 'test-node' },
    build: { version: '0.0.0-test', commit: 'test' },
    ...(options.maxRunningRunsPerOrg === undefined ? {} : { maxRunningRunsPerOrg: options.maxRunningRunsPerOrg }),
  })
  const app = await buildApp(deps, {
    ...(options.rateLimitPerMinute === undefined ? {} : { rateLimitPerMinute: options.rateLimitPerMinute }),
    ...(options.maxConcurrentTurns === undefined ? {} : { maxConcurrentTurns: options.maxConcurrentTurns }),
    ...(options.logger === undefined ? {} : { logger: options.logger }),
    ...(options.requestTimeoutMs === undefined ? {} : { requestTimeoutMs: options.requestTimeoutMs }),
    ...(options.readerLimits === undefined ? {} : { readerLimits: options.readerLimits }),
  })
  // Every answer of app.inject is checked against the app's /openapi.json (issue 13).
  watchInProcess(app)
  let orgs = 0
  return {
    app,
    store,
    dir,
    org(slug = `org-${++orgs}`) {
      const org = store.organisations.create(slug, slug)
      const { id, key } = store.apiKeys.create(org.id, 'test')
      return { orgId: org.id, key, keyId: id, auth: { authorization: `Bearer ${key}` } }
    },
    host: deps.host,
    async close() {
      deps.host.stopAll()
      await app.close()
      db.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/**
 * createTestApp listening on a loopback port, for what needs a real socket (raw bytes, timing), with
 * one funded organisation: its `Authorization` header value.
 */
export async function listeningTestApp(options: Parameters<typeof createTestApp>[0] = {}): Promise<TestContext & { port: number; authorization: string }> {
  const ctx = await createTestApp(options)
  await ctx.app.listen({ port: 0, host: '127.0.0.1' })
  const org = ctx.org()
  ctx.store.balance.add(org.orgId, 'topup', '10')
  return { ...ctx, port: (ctx.app.server.address() as { port: number }).port, authorization: org.auth.authorization }
}

/** A log destination that keeps everything written to it, for a logger's `stream`. */
export function captureLog(): { stream: Writable; readonly text: string } {
  let text = ''
  const stream = new Writable({
    write(chunk, _encoding, done) {
      text += String(chunk)
      done()
    },
  })
  return {
    stream,
    get text() {
      return text
    },
  }
}
