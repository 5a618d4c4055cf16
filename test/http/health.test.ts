import { fixedCatalogue } from '../../src/providers/catalogue/catalogue-service.ts'
import Database from 'better-sqlite3'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { composeApp } from '../../src/compose.ts'
import { buildApp, type App } from '../../src/http/app.ts'
import { NO_MODEL_WARNING } from '../../src/providers/catalogue/active-providers-line.ts'
import { loadCatalogue } from '../../src/providers/catalogue/load-catalogue.ts'
import { openDatabase, SERVER_BUSY_TIMEOUT_MS, type Db } from '../../src/store/database.ts'
import { createStore } from '../../src/store/index.ts'
import type { ReplicationRole } from '../../src/store/replication-role.ts'
import { REPO_ROOT } from '../e2e/server-process.ts'
import { expectError } from '../helpers/http.ts'

/**
 * The probes Fly's checks call (fly.toml): /healthz says the process is up, /readyz whether this
 * node can serve writes (the primary's database takes a write lock) or relay them (a replica knows
 * its primary). Both are public, and a failed readiness answers 503 in the error envelope. A ready
 * answer counts the active models per provider and warns, still ready, when there is none (decision 035).
 */

const CATALOGUE = loadCatalogue()

const cleanups: (() => Promise<void> | void)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

/**
 * A real app over a real SQLite file, opened as the process would in `role` (a replica opens it
 * read-only), serving the real catalogue's models of `providers` (the sandbox alone, as in development).
 */
async function appAs(role: ReplicationRole, options: { readOnly?: boolean; providers?: string[] } = {}): Promise<{ app: App; db: Db; file: string }> {
  const active = CATALOGUE.entries.filter((entry) => (options.providers ?? ['sandbox']).includes(entry.provider))
  const dir = mkdtempSync(join(tmpdir(), 'parley-health-'))
  const file = join(dir, 'parley.db')
  openDatabase(file).close()
  const db = options.readOnly ? openDatabase(file, { replica: true }) : openDatabase(file)
  const deps = composeApp({
    store: createStore(db),
    catalogue: { ...fixedCatalogue([]), list: () => active },
    allModels: [],
    env: { NODE_ID: 'health-test' },
    build: { version: '0.0.0-test', commit: 'test' },
    role: { current: () => role, exclusiveWriter: true },
  })
  const app = await buildApp(deps)
  cleanups.push(async () => {
    deps.host.stopAll()
    await app.close()
    db.close()
    rmSync(dir, { recursive: true, force: true })
  })
  return { app, db, file }
}

describe('/healthz', () => {
  it('answers 200 without an API key', async () => {
    const { app } = await appAs({ kind: 'primary' })
    const res = await app.inject({ method: 'GET', url: '/healthz' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ status: 'ok' })
  })

  it('still answers 200 when the node is not ready: liveness does not depend on the database', async () => {
    const { app } = await appAs({ kind: 'replica-without-primary' }, { readOnly: true })
    expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200)
  })
})

describe('/readyz', () => {
  it('answers 200 on a primary whose database takes a write lock, and leaves no transaction open', async () => {
    const { app, db } = await appAs({ kind: 'primary' })
    const res = await app.inject({ method: 'GET', url: '/readyz' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ status: 'ready', role: 'primary', providers: { sandbox: 4 }, models: 4, warnings: [] })
    expect(db.inTransaction).toBe(false)
    // Requests wait for the lock as long as before the probe.
    expect(db.pragma('busy_timeout', { simple: true })).toBe(SERVER_BUSY_TIMEOUT_MS)
  })

  it('answers 503 unavailable on a primary whose database is read-only', async () => {
    const { app, db } = await appAs({ kind: 'primary' }, { readOnly: true })
    const res = await app.inject({ method: 'GET', url: '/readyz' })
    expectError(res, 503, 'unavailable')
    expect(res.json().error.message).toMatch(/not writable/)
    expect(db.inTransaction).toBe(false)
  })

  it('answers 503 while another connection holds the write lock past the connection busy timeout, then 200 once it lets go', async () => {
    const { app, file } = await appAs({ kind: 'primary' })
    const holder = new Database(file)
    cleanups.push(() => {
      holder.close()
    })
    holder.prepare('BEGIN IMMEDIATE').run()
    const locked = await app.inject({ method: 'GET', url: '/readyz' })
    expectError(locked, 503, 'unavailable')
    holder.prepare('ROLLBACK').run()
    expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200)
  }, 15_000)

  it('answers 200 on a LiteFS replica that knows its primary (its own copy is read-only)', async () => {
    const { app } = await appAs({ kind: 'replica', primaryUrl: 'http://primary.internal:8080' }, { readOnly: true })
    const res = await app.inject({ method: 'GET', url: '/readyz' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ status: 'ready', role: 'replica', providers: { sandbox: 4 }, models: 4, warnings: [] })
  })

  it('counts the active models of each provider', async () => {
    const { app } = await appAs({ kind: 'primary' }, { providers: ['openai', 'anthropic', 'sandbox'] })
    const res = await app.inject({ method: 'GET', url: '/readyz' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({ providers: { anthropic: 3, openai: 3, sandbox: 4 }, models: 10, warnings: [] })
  })

  it('stays ready with no model active, but warns that every turn answers 422 and what to set', async () => {
    const { app } = await appAs({ kind: 'primary' }, { providers: [] })
    const res = await app.inject({ method: 'GET', url: '/readyz' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ status: 'ready', role: 'primary', providers: {}, models: 0, warnings: [NO_MODEL_WARNING] })
    expect(NO_MODEL_WARNING).toMatch(/422/)
    expect(NO_MODEL_WARNING).toContain('OPENAI_API_KEY')
  })

  it('answers 503 unavailable on a replica that knows no primary', async () => {
    const { app } = await appAs({ kind: 'replica-without-primary' }, { readOnly: true })
    const res = await app.inject({ method: 'GET', url: '/readyz' })
    expectError(res, 503, 'unavailable')
    expect(res.json().error.message).toMatch(/no primary/)
  })

  it('both probes are documented in /openapi.json as public operations', async () => {
    const { app } = await appAs({ kind: 'primary' })
    const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json()
    expect(doc.paths['/healthz'].get.responses['200']).toBeDefined()
    // 400 (no Host header) and 4XX (405, 408, 431) are every operation's (decision 036).
    expect(Object.keys(doc.paths['/readyz'].get.responses).sort()).toEqual(['200', '400', '4XX', '503'])
    expect(doc.paths['/readyz'].get.security).toEqual([]) // public: no API key against the document's global bearer scheme
  })
})

describe('fly.toml', () => {
  it("checks the machine's readiness and liveness on these routes, and each answers 200 on a healthy primary", async () => {
    const fly = readFileSync(join(REPO_ROOT, 'fly.toml'), 'utf8')
    const paths = [...fly.matchAll(/^\s*path = "(.+)"/gm)].map((m) => m[1]!)
    expect(paths.sort()).toEqual(['/healthz', '/readyz'])
    const { app } = await appAs({ kind: 'primary' })
    for (const url of paths) expect((await app.inject({ method: 'GET', url })).statusCode, url).toBe(200)
  })
})
