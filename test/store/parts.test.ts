import { randomUUID } from 'node:crypto'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { PARTS_NEWER_SQL, PARTS_OLDER_SQL } from '../../src/store/parts.ts'
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

const newChat = () => t.store.chats.create({ orgId, namespace: null, title: null, description: null, userMetadata: {} })
const prompts = (n: number, label = 'p') => Array.from({ length: n }, (_, i) => ({ body: { type: 'prompt' as const, text: `${label}${i}` } }))

/** The plan reads the (chat_id, ordinal) index as a range: no table scan, no sort. */
function expectIndexRangeScan(sql: string, comparison: '<' | '>') {
  const plan = queryPlan(t.db, sql, randomUUID(), 1000, 50)
  const details = plan.map((row) => row.detail)
  expect(details).toHaveLength(1)
  expect(details[0]).toMatch(/^SEARCH parts USING (COVERING )?INDEX parts_chat_ordinal \(chat_id=\? AND ordinal[<>]\?\)$/)
  expect(details[0]).toContain(`ordinal${comparison}?`)
  expect(details.some((d) => d.startsWith('SCAN'))).toBe(false)
  expect(details.some((d) => d.includes('TEMP B-TREE'))).toBe(false)
}

describe('history paging SQL', () => {
  it('pages older parts as a range scan of parts_chat_ordinal', () => {
    expectIndexRangeScan(PARTS_OLDER_SQL, '<')
  })

  it('pages newer parts as a range scan of parts_chat_ordinal', () => {
    expectIndexRangeScan(PARTS_NEWER_SQL, '>')
  })

  it('keeps the range scan once the planner has statistics of a large, skewed ledger', () => {
    const big = newChat()
    const small = newChat()
    const insert = t.db.prepare(
      "INSERT INTO parts (id, chat_id, kind, body, user_metadata, created_at) VALUES (?, ?, 'prompt', '{}', '{}', '2026-01-01T00:00:00.000Z')",
    )
    t.db.transaction(() => {
      for (let i = 0; i < 20_000; i++) insert.run(randomUUID(), big.id)
      for (let i = 0; i < 10; i++) insert.run(randomUUID(), small.id)
    })()
    t.db.exec('ANALYZE')
    expectIndexRangeScan(PARTS_OLDER_SQL, '<')
    expectIndexRangeScan(PARTS_NEWER_SQL, '>')
  })
})

describe('parts store', () => {
  it('appends in order with increasing ordinals and counts them on the chat', () => {
    const chat = newChat()
    const rows = t.store.parts.append(chat.id, prompts(3))
    expect(rows.map((r) => JSON.parse(r.body).text)).toEqual(['p0', 'p1', 'p2'])
    expect(rows[0]!.ordinal).toBeLessThan(rows[1]!.ordinal)
    expect(rows[1]!.ordinal).toBeLessThan(rows[2]!.ordinal)
    expect(rows.every((r) => r.kind === 'prompt' && r.chat_id === chat.id)).toBe(true)
    expect(t.store.chats.get(orgId, chat.id)!.part_count).toBe(3)
  })

  it('writes nothing when an append fails part-way', () => {
    const chat = newChat()
    t.store.parts.append(chat.id, prompts(2))
    const bad = [...prompts(2), { body: { type: 'bogus' } as never }]
    expect(() => t.store.parts.append(chat.id, bad)).toThrow()
    expect(t.store.parts.page({ chatId: chat.id, limit: 100 }).rows).toHaveLength(2)
    expect(t.store.chats.get(orgId, chat.id)!.part_count).toBe(2)
  })

  it('refuses parts for a chat that does not exist', () => {
    expect(() => t.store.parts.append(randomUUID(), prompts(1))).toThrow(/FOREIGN KEY/)
    expect((t.db.prepare('SELECT count(*) AS n FROM parts').get() as { n: number }).n).toBe(0)
  })

  it('pages oldest first within a page, with has_more in the direction paged', () => {
    const chat = newChat()
    const all = t.store.parts.append(chat.id, prompts(7)).map((r) => r.ordinal)
    const newest = t.store.parts.page({ chatId: chat.id, limit: 3 })
    expect(newest.rows.map((r) => r.ordinal)).toEqual(all.slice(4))
    expect(newest.hasMore).toBe(true)
    const oldest = t.store.parts.page({ chatId: chat.id, beforeOrdinal: all[3], limit: 3 })
    expect(oldest.rows.map((r) => r.ordinal)).toEqual(all.slice(0, 3))
    expect(oldest.hasMore).toBe(false)
    const forward = t.store.parts.page({ chatId: chat.id, afterOrdinal: all[1], limit: 5 })
    expect(forward.rows.map((r) => r.ordinal)).toEqual(all.slice(2, 7))
    expect(forward.hasMore).toBe(false)
  })

  it('deletes a chat’s parts with the chat and never reuses their ordinals', () => {
    const doomed = newChat()
    const kept = newChat()
    const doomedRows = t.store.parts.append(doomed.id, prompts(3))
    const keptRows = t.store.parts.append(kept.id, prompts(2))
    expect(t.store.chats.delete(orgId, doomed.id)).toBe(true)
    expect(t.store.parts.page({ chatId: doomed.id, limit: 100 }).rows).toEqual([])
    expect(t.store.parts.page({ chatId: kept.id, limit: 100 }).rows).toEqual(keptRows)
    const later = t.store.parts.append(newChat().id, prompts(3))
    const used = new Set([...doomedRows, ...keptRows].map((r) => r.ordinal))
    for (const row of later) {
      expect(used.has(row.ordinal)).toBe(false)
      expect(row.ordinal).toBeGreaterThan(Math.max(...used))
    }
  })
})
