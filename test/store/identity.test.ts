import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { CONSOLE_SESSION_TTL_MS } from '../../src/store/console-sessions.ts'
import { bootstrapDevOrganisation } from '../../src/store/bootstrap-dev-organisation.ts'
import { openTempStore } from '../helpers/temp-store.ts'

let t: ReturnType<typeof openTempStore>

beforeEach(() => {
  t = openTempStore()
})
afterEach(() => {
  vi.useRealTimers()
  t.close()
})

describe('API keys', () => {
  it('issues pk_ keys of 32 random bytes and stores only a hash', () => {
    const org = t.store.organisations.create('Acme', 'acme')
    const { id, key } = t.store.apiKeys.create(org.id, 'ci')
    expect(key).toMatch(/^pk_[A-Za-z0-9_-]{43}$/)
    expect(t.store.apiKeys.create(org.id, 'ci').key).not.toBe(key)
    const row = t.db.prepare('SELECT * FROM api_keys WHERE id = ?').get(id) as Record<string, unknown>
    const stored = JSON.stringify(Object.values(row).map((v) => (Buffer.isBuffer(v) ? v.toString('latin1') : v)))
    expect(stored).not.toContain(key)
    expect(stored).not.toContain(key.slice(3))
  })

  it('authenticates a live key to its organisation and nothing else', () => {
    const org = t.store.organisations.create('Acme', 'acme')
    const { id, key } = t.store.apiKeys.create(org.id, null)
    expect(t.store.apiKeys.authenticate(key)).toEqual({ keyId: id, orgId: org.id })
    expect(t.store.apiKeys.authenticate(`${key}x`)).toBeNull()
    expect(t.store.apiKeys.authenticate(key.slice(0, -1))).toBeNull()
    expect(t.store.apiKeys.authenticate('')).toBeNull()
  })

  it('revokes once, keeping the first revocation time; an unknown id is null', () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const org = t.store.organisations.create('Acme', 'acme')
    const { id, key } = t.store.apiKeys.create(org.id, null)
    vi.setSystemTime(new Date('2026-03-01T00:00:00.000Z'))
    expect(t.store.apiKeys.revoke(id)).toEqual({ id, revoked_at: '2026-03-01T00:00:00.000Z' })
    vi.setSystemTime(new Date('2026-03-02T00:00:00.000Z'))
    expect(t.store.apiKeys.revoke(id)).toEqual({ id, revoked_at: '2026-03-01T00:00:00.000Z' })
    expect(t.store.apiKeys.authenticate(key)).toBeNull()
    expect(t.store.apiKeys.revoke('00000000-0000-4000-8000-000000000000')).toBeNull()
  })
})

describe('console sessions', () => {
  it('resolves a live cs_ token to its organisation; unknown and expired tokens are anonymous', () => {
    const org = t.store.organisations.create('Acme', 'acme')
    const live = t.store.consoleSessions.create(org.id)
    expect(live.token).toMatch(/^cs_[A-Za-z0-9_-]{43}$/)
    expect(t.store.consoleSessions.organisationOf(live.token)).toBe(org.id)
    expect(t.store.consoleSessions.organisationOf('cs_unknown')).toBeNull()
    const old = t.store.consoleSessions.create(org.id, new Date(Date.now() - CONSOLE_SESSION_TTL_MS - 1000))
    expect(t.store.consoleSessions.organisationOf(old.token)).toBeNull()
    const stored = JSON.stringify(t.db.prepare('SELECT hex(token_hash) AS h, org_id FROM console_sessions').all())
    expect(stored).not.toContain(live.token)
  })
})

describe('organisations', () => {
  it('refuses a duplicate slug', () => {
    t.store.organisations.create('Acme', 'acme')
    expect(() => t.store.organisations.create('Acme again', 'acme')).toThrow(/UNIQUE/)
  })

  it('sets a markup percent', () => {
    const org = t.store.organisations.create('Acme', 'acme')
    expect(org.markup_percent).toBeNull()
    expect(t.store.organisations.setMarkup(org.id, '7.5')).toMatchObject({ id: org.id, markup_percent: '7.5' })
  })
})

describe('platform updates', () => {
  it('lists newest first', () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const published = ['2026-01-01', '2026-03-01', '2026-02-01'].map((day, i) => {
      vi.setSystemTime(new Date(`${day}T00:00:00.000Z`))
      return t.store.updates.publish({ kind: 'notice', title: `t${i}`, body: 'b', important: false, version: null })
    })
    expect(t.store.updates.list().map((u) => u.title)).toEqual(['t1', 't2', 't0'])
    expect(t.store.updates.list()[0]).toEqual(published[1])
  })
})

describe('first-start bootstrap', () => {
  it('creates the dev organisation, a working key and 10.00 of promotional credit, once', () => {
    const dev = bootstrapDevOrganisation(t.store)
    expect(dev).not.toBeNull()
    expect(t.store.organisations.get(dev!.orgId)).toMatchObject({ slug: 'dev' })
    expect(t.store.apiKeys.authenticate(dev!.key)).toEqual({ keyId: dev!.keyId, orgId: dev!.orgId })
    expect(t.store.balance.balanceOf(dev!.orgId)).toBe('10.00')
    const entry = t.db.prepare('SELECT entry_type FROM balance_entries WHERE org_id = ?').all(dev!.orgId)
    expect(entry).toEqual([{ entry_type: 'promotional_credit' }])

    expect(bootstrapDevOrganisation(t.store)).toBeNull()
    expect(t.store.organisations.count()).toBe(1)
    expect(t.store.balance.balanceOf(dev!.orgId)).toBe('10.00')
  })

  it('does nothing when an organisation already exists', () => {
    t.store.organisations.create('Acme', 'acme')
    expect(bootstrapDevOrganisation(t.store)).toBeNull()
    expect(t.store.organisations.getBySlug('dev')).toBeUndefined()
  })
})
