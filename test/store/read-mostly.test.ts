import Database from 'better-sqlite3'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { openTempStore } from '../helpers/temp-store.ts'

let t: ReturnType<typeof openTempStore>
let operator: Database.Database
beforeEach(() => {
  t = openTempStore()
  operator = new Database(t.file)
})
afterEach(() => {
  operator.close()
  t.close()
})

/** The next turn of the event loop, where kept rows are checked against other connections' commits again. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))
/** Statements this connection runs while `f` does (counted on the statement objects better-sqlite3 hands out). */
function statementsDuring(f: () => void): number {
  const proto = Object.getPrototypeOf(t.db.prepare('SELECT 1')) as Record<'get' | 'all' | 'run', (...args: unknown[]) => unknown>
  const originals = { get: proto.get, all: proto.all, run: proto.run }
  let n = 0
  for (const m of ['get', 'all', 'run'] as const) {
    proto[m] = function (this: unknown, ...args: unknown[]) {
      n++
      return originals[m].apply(this, args)
    }
  }
  try {
    f()
  } finally {
    Object.assign(proto, originals)
  }
  return n
}

describe('read-mostly rows kept between turns (issue 34)', () => {
  it('a key, an organisation and a token correction read again are not read from SQLite again, while nothing wrote them', async () => {
    const org = t.store.organisations.create('A', 'a')
    const { key } = t.store.apiKeys.create(org.id, 'k')
    t.store.tokenCorrections.correctionFor('m')
    t.store.apiKeys.authenticate(key)
    t.store.organisations.get(org.id)
    t.store.catalogueVersions.latestVersion()
    await nextTurn()
    // One statement a turn at most: the data_version check.
    expect(statementsDuring(() => {
      for (let i = 0; i < 5; i++) {
        expect(t.store.apiKeys.authenticate(key)).toMatchObject({ orgId: org.id })
        expect(t.store.organisations.get(org.id)?.slug).toBe('a')
        t.store.tokenCorrections.correctionFor('m')
        t.store.catalogueVersions.latestVersion()
      }
    })).toBeLessThanOrEqual(1)
  })

  it("this connection's own writes are seen at once: a revoked key, a new markup, a new correction sample", () => {
    const org = t.store.organisations.create('A', 'a')
    const { id, key } = t.store.apiKeys.create(org.id, 'k')
    expect(t.store.apiKeys.authenticate(key)).not.toBeNull()
    t.store.apiKeys.revoke(id)
    expect(t.store.apiKeys.authenticate(key)).toBeNull()
    expect(t.store.organisations.get(org.id)?.markup_percent).toBeNull()
    t.store.organisations.setMarkup(org.id, '12.5')
    expect(t.store.organisations.get(org.id)?.markup_percent).toBe('12.5')
    const before = t.store.tokenCorrections.correctionFor('m')
    for (let i = 0; i < 10; i++) t.store.tokenCorrections.record('m', 1.5)
    expect(t.store.tokenCorrections.correctionFor('m').runs).toBe(before.runs + 10)
  })

  it("another connection's commit (the admin CLI, LiteFS replication) is seen from the next turn of the event loop", async () => {
    const org = t.store.organisations.create('A', 'a')
    const { id, key } = t.store.apiKeys.create(org.id, 'k')
    expect(t.store.apiKeys.authenticate(key)).not.toBeNull()
    expect(t.store.catalogueVersions.latestVersion()).toBe(0)
    operator.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ?').run('2026-11-29T00:00:00.000Z', id)
    operator.prepare("UPDATE organisations SET markup_percent = '3' WHERE id = ?").run(org.id)
    operator
      .prepare('INSERT INTO catalogue_versions (version, effective_at, imported_at, source, body) VALUES (1, ?, ?, ?, ?)')
      .run('2026-11-29T00:00:00.000Z', '2026-11-29T00:00:00.000Z', 'test', '{}')
    await nextTurn()
    expect(t.store.apiKeys.authenticate(key)).toBeNull()
    expect(t.store.organisations.get(org.id)?.markup_percent).toBe('3')
    expect(t.store.catalogueVersions.latestVersion()).toBe(1)
  })

  it('nothing read inside a transaction is kept: a rollback would leave it wrong', () => {
    const org = t.store.organisations.create('A', 'a')
    t.store.organisations.setMarkup(org.id, '9')
    expect(t.store.organisations.get(org.id)?.markup_percent).toBe('9')
    let seenInside: string | null | undefined
    const rolledBack = t.db.transaction(() => {
      t.store.organisations.setMarkup(org.id, '50')
      seenInside = t.store.organisations.get(org.id)?.markup_percent
      throw new Error('roll back')
    })
    expect(rolledBack).toThrow('roll back')
    expect(seenInside).toBe('50')
    expect(t.store.organisations.get(org.id)?.markup_percent).toBe('9')
  })
})
