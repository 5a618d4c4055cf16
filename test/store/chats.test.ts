import { randomUUID } from 'node:crypto'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { descendantRange } from '../../src/domain/namespace.ts'
import { CHAT_LIST_NEWER_SQL, CHAT_LIST_OLDER_SQL } from '../../src/store/chats.ts'
import { openTempStore, queryPlan } from '../helpers/temp-store.ts'

let t: ReturnType<typeof openTempStore>
let orgId: string

beforeEach(() => {
  t = openTempStore()
  orgId = t.store.organisations.create('Acme', 'acme').id
})
afterEach(() => {
  t.close()
})

const newChat = (namespace: string | null = null, org = orgId) =>
  t.store.chats.create({ orgId: org, namespace, title: null, description: null, userMetadata: { n: 1 } })

const params = (ns: string | null) => ({
  org: orgId,
  cursor: 1000,
  ns,
  from: ns === null ? null : descendantRange(ns).from,
  to: ns === null ? null : descendantRange(ns).to,
  limit: 21,
})

function expectIndexSearch(sql: string, ns: string | null) {
  const details = queryPlan(t.db, sql, params(ns)).map((row) => row.detail)
  expect(details.length).toBeGreaterThan(0)
  expect(details.some((d) => /^SEARCH chats USING (COVERING )?INDEX chats_org_\w+ \(org_id=\?/.test(d))).toBe(true)
  expect(details.some((d) => d.startsWith('SCAN'))).toBe(false)
  expect(details.some((d) => d.includes('TEMP B-TREE'))).toBe(false)
}

describe('chat list SQL', () => {
  for (const [name, sql] of [['older', CHAT_LIST_OLDER_SQL], ['newer', CHAT_LIST_NEWER_SQL]] as const) {
    it(`pages ${name} chats by an index search on the organisation, with no sort and no table scan`, () => {
      expectIndexSearch(sql, null)
      expectIndexSearch(sql, 'acme/support')
    })
  }

  it('keeps the index search once the planner has statistics of a many-tenant table', () => {
    const orgs = [orgId, ...Array.from({ length: 49 }, (_, i) => t.store.organisations.create(`Org ${i}`, `org-${i}`).id)]
    t.db.transaction(() => {
      for (let i = 0; i < 3000; i++) newChat(i % 3 === 0 ? 'acme/support' : 'acme/sales', orgs[i % orgs.length])
    })()
    t.db.exec('ANALYZE')
    for (const sql of [CHAT_LIST_OLDER_SQL, CHAT_LIST_NEWER_SQL]) {
      expectIndexSearch(sql, null)
      expectIndexSearch(sql, 'acme')
    }
  })
})

describe('chats store', () => {
  it('creates and reads a chat only within its organisation', () => {
    const other = t.store.organisations.create('Other', 'other').id
    const chat = newChat('acme')
    expect(chat).toMatchObject({ org_id: orgId, namespace: 'acme', part_count: 0, user_metadata: '{"n":1}' })
    expect(t.store.chats.get(orgId, chat.id)).toEqual(chat)
    expect(t.store.chats.get(other, chat.id)).toBeUndefined()
    expect(t.store.chats.delete(other, chat.id)).toBe(false)
    expect(t.store.chats.get(orgId, chat.id)).toEqual(chat)
    expect(t.store.chats.delete(orgId, chat.id)).toBe(true)
    expect(t.store.chats.delete(orgId, chat.id)).toBe(false)
  })

  it('answers null to a cursor naming no chat of the organisation', () => {
    const foreign = newChat(null, t.store.organisations.create('Other', 'other').id)
    expect(t.store.chats.list({ orgId, afterId: randomUUID(), limit: 5 })).toBeNull()
    expect(t.store.chats.list({ orgId, beforeId: foreign.id, limit: 5 })).toBeNull()
  })

  it('lists newest first in both directions', () => {
    const ids = Array.from({ length: 5 }, () => newChat().id)
    const older = t.store.chats.list({ orgId, afterId: ids[3], limit: 2 })!
    expect(older.rows.map((r) => r.id)).toEqual([ids[2], ids[1]])
    expect(older.hasMore).toBe(true)
    const newer = t.store.chats.list({ orgId, beforeId: ids[1], limit: 2 })!
    expect(newer.rows.map((r) => r.id)).toEqual([ids[3], ids[2]])
    expect(newer.hasMore).toBe(true)
  })

  it('lists distinct namespaces in use, ascending', () => {
    for (const ns of ['b', 'a/b', null, 'a', 'b']) newChat(ns)
    newChat('z', t.store.organisations.create('Other', 'other').id)
    expect(t.store.chats.namespaces(orgId)).toEqual(['a', 'a/b', 'b'])
  })
})
