import Database from 'better-sqlite3'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { migrate } from '../../src/store/database.ts'
import { migrations } from '../../src/store/migrations/index.ts'
import { openTempStore } from '../helpers/temp-store.ts'

/**
 * Erasing parts (docs/decisions/056-erasing-items.md): the rows go, with their attachments, bytes no
 * other part holds, and every summary whose range holds one of them; an answer part keeps its place
 * in its run's answer (migration 0018), so the items after an erased one keep their names.
 */
let t: ReturnType<typeof openTempStore>
let org: string
beforeEach(() => {
  t = openTempStore()
  org = t.store.organisations.create('Acme', 'acme').id
})
afterEach(() => t.close())

const newChat = () => t.store.chats.create({ orgId: org, namespace: null, title: null, description: null, userMetadata: {} }).id
const doc = (text: string) => ({ mime: 'text/plain', bytes: Buffer.from(text), filename: 'd.txt', width: null, height: null, page_count: null }) as never
const summary = (first: number, last: number, merged = false) => ({ firstOrdinal: first, lastOrdinal: last, text: `s ${first}-${last}`, tokens: 3, runId: 'cr', ...(merged ? { merged } : {}) })
const count = (sql: string, ...args: unknown[]) => (t.db.prepare(sql).get(...args) as { n: number }).n

describe('store.erasures.erase', () => {
  it('erases the parts named, leaves a gap, and lowers the part count; the chat\'s other parts and other chats are untouched', () => {
    const chat = newChat()
    const other = newChat()
    const [a, b, c] = t.store.parts.append(chat, [{ body: { type: 'prompt', text: 'a' } }, { body: { type: 'prompt', text: 'b' } }, { body: { type: 'prompt', text: 'c' } }])
    const [elsewhere] = t.store.parts.append(other, [{ body: { type: 'prompt', text: 'x' } }])
    // An ordinal of another chat is not this chat's to erase.
    expect(t.store.erasures.erase(chat, [b!.ordinal, elsewhere!.ordinal])).toBe(1)
    expect(t.store.parts.page({ chatId: chat, limit: 10 }).rows.map((r) => r.ordinal)).toEqual([a!.ordinal, c!.ordinal])
    expect(t.store.parts.page({ chatId: other, limit: 10 }).rows).toHaveLength(1)
    expect(t.store.chats.get(org, chat)!.part_count).toBe(2)
    // Erasing it again erases nothing.
    expect(t.store.erasures.erase(chat, [b!.ordinal])).toBe(0)
    expect(t.store.chats.get(org, chat)!.part_count).toBe(2)
  })

  it('takes the part\'s attachments, and their bytes when no other part holds the same bytes', () => {
    const chat = newChat()
    const [shared1, , only] = t.store.parts.append(chat, [
      { body: { type: 'prompt', text: 'a' }, media: [doc('shared')] },
      { body: { type: 'prompt', text: 'b' }, media: [doc('shared')] },
      { body: { type: 'prompt', text: 'c' }, media: [doc('only here')] },
    ])
    t.store.erasures.erase(chat, [shared1!.ordinal, only!.ordinal])
    expect(count('SELECT count(*) AS n FROM part_media')).toBe(1)
    expect(count("SELECT count(*) AS n FROM media_blobs WHERE bytes = CAST('shared' AS BLOB)")).toBe(1)
    expect(count("SELECT count(*) AS n FROM media_blobs WHERE bytes = CAST('only here' AS BLOB)")).toBe(0)
  })

  it('takes every summary whose range holds an erased part, block or merged, and no other', () => {
    const chat = newChat()
    const rows = t.store.parts.append(chat, Array.from({ length: 6 }, (_, i) => ({ body: { type: 'prompt' as const, text: `p${i}` } })))
    const o = rows.map((r) => r.ordinal)
    t.store.summaries.insert(chat, summary(o[0]!, o[1]!), 'x')
    t.store.summaries.insert(chat, summary(o[2]!, o[3]!), 'x')
    t.store.summaries.insert(chat, summary(o[4]!, o[5]!), 'x')
    t.store.summaries.insert(chat, summary(o[0]!, o[3]!, true), 'x')
    t.store.erasures.erase(chat, [o[3]!])
    expect(t.store.summaries.ofChat(chat).map((s) => [s.firstOrdinal, s.lastOrdinal])).toEqual([
      [o[0], o[1]],
      [o[4], o[5]],
    ])
  })
})

describe('summaries written from erased sources', () => {
  it('a block summary is not stored when a part it read was erased meanwhile; a merge, when a summary it merged was', () => {
    const chat = newChat()
    const o = t.store.parts.append(chat, Array.from({ length: 4 }, (_, i) => ({ body: { type: 'prompt' as const, text: `p${i}` } }))).map((r) => r.ordinal)
    expect(t.store.summaries.insert(chat, summary(o[0]!, o[1]!), 'x', { parts: [o[0]!, o[1]!] })).toBe(true)
    t.store.erasures.erase(chat, [o[3]!])
    // Made from parts 2 and 3 before part 3 was erased: refused.
    expect(t.store.summaries.insert(chat, summary(o[2]!, o[3]!), 'x', { parts: [o[2]!, o[3]!] })).toBe(false)
    // Of what is left: stored.
    expect(t.store.summaries.insert(chat, summary(o[2]!, o[3]!), 'x', { parts: [o[2]!] })).toBe(true)
    // A merge of both stored summaries: stored; of one erased since, refused.
    expect(t.store.summaries.insert(chat, summary(o[0]!, o[3]!, true), 'x', { merges: [{ firstOrdinal: o[0]!, lastOrdinal: o[1]! }, { firstOrdinal: o[2]!, lastOrdinal: o[3]! }] })).toBe(true)
    t.store.erasures.erase(chat, [o[0]!])
    expect(t.store.summaries.insert(chat, summary(o[1]!, o[3]!, true), 'x', { merges: [{ firstOrdinal: o[0]!, lastOrdinal: o[1]! }, { firstOrdinal: o[2]!, lastOrdinal: o[3]! }] })).toBe(false)
  })
})

describe('answer_index', () => {
  it('numbers a run\'s answer parts as they are written, and an erasure renames none of the others', () => {
    const chat = newChat()
    const [input] = t.store.parts.append(chat, [{ body: { type: 'prompt', text: 'q' }, runId: 'r1' }])
    const answers = ['reasoning', 'message', 'message'].map((kind, i) =>
      t.store.parts.append(chat, [{ body: kind === 'reasoning' ? { type: 'reasoning', text: `r${i}` } : { type: 'message', text: `m${i}` }, runId: 'r1' }])[0]!,
    )
    expect(input!.answer_index).toBeNull()
    expect(answers.map((r) => r.answer_index)).toEqual([0, 1, 2])
    t.store.erasures.erase(chat, [answers[1]!.ordinal])
    expect(t.store.parts.answerOf('r1', chat, 1)).toBeUndefined()
    expect(t.store.parts.answerOf('r1', chat, 2)!.id).toBe(answers[2]!.id)
    // Another run's answers are numbered on their own.
    expect(t.store.parts.append(chat, [{ body: { type: 'message', text: 'n' }, runId: 'r2' }])[0]!.answer_index).toBe(0)
  })

  it('migration 0018 numbers the answers already in the ledger per chat and run, as they were counted before', () => {
    const db = new Database(':memory:')
    const before = migrations.findIndex((m) => m.name === '0018-answer-index')
    migrate(db, migrations.slice(0, before))
    db.exec(`INSERT INTO organisations (id, name, slug, created_at) VALUES ('o', 'O', 'o', 'x')`)
    db.exec(`INSERT INTO chats (id, org_id, user_metadata, created_at, updated_at) VALUES ('c1', 'o', '{}', 'x', 'x'), ('c2', 'o', '{}', 'x', 'x')`)
    const insert = db.prepare(`INSERT INTO parts (id, chat_id, run_id, kind, body, user_metadata, created_at) VALUES (?, ?, ?, ?, '{}', '{}', 'x')`)
    const parts: [string, string, string | null, string][] = [
      ['p1', 'c1', 'r1', 'prompt'],
      ['p2', 'c1', 'r1', 'reasoning'],
      ['p3', 'c2', 'r1', 'message'], // a fork's copy of r1's answer: numbered in its own chat
      ['p4', 'c1', 'r1', 'tool_call'],
      ['p5', 'c1', 'r2', 'tool_result'],
      ['p6', 'c1', 'r2', 'message'],
      ['p7', 'c1', null, 'message'],
    ]
    for (const p of parts) insert.run(...p)
    migrate(db, migrations)
    const numbered = db.prepare('SELECT id, answer_index FROM parts ORDER BY ordinal').all()
    expect(numbered).toEqual([
      { id: 'p1', answer_index: null },
      { id: 'p2', answer_index: 0 },
      { id: 'p3', answer_index: 0 },
      { id: 'p4', answer_index: 1 },
      { id: 'p5', answer_index: null },
      { id: 'p6', answer_index: 0 },
      { id: 'p7', answer_index: null },
    ])
    db.close()
  })
})
