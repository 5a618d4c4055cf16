import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { FORK_MEDIA_SQL, FORK_PARTS_SQL, FORK_SUMMARIES_SQL } from '../../src/store/fork-chat.ts'
import { openTempStore, queryPlan } from '../helpers/temp-store.ts'

let t: ReturnType<typeof openTempStore>
let org: string

beforeEach(() => {
  t = openTempStore()
  org = t.store.organisations.create('Acme', 'acme').id
})
afterEach(() => t.close())

const labels = { title: 'fork', description: null, userMetadata: { a: 1 } }
const run = (id: string, chatId: string, status: 'failed' | 'succeeded') => {
  t.db.prepare(
    `INSERT INTO runs (id, org_id, chat_id, origin, status, model_id, model_name, created_at, manifest) VALUES (?, ?, ?, 'customer', ?, 'm', 'm', '2030-01-01T00:00:00.000Z', '{}')`,
  ).run(id, org, chatId, status)
}

describe('store.forks.fork', () => {
  it('copies parts up to the cut with one ordinal offset, their media rows (same blobs), summaries wholly inside, failed runs', () => {
    const source = t.store.chats.create({ orgId: org, namespace: 'ns', title: null, description: null, userMetadata: {} }).id
    const other = t.store.chats.create({ orgId: org, namespace: null, title: null, description: null, userMetadata: {} }).id
    run('r-failed', source, 'failed')
    const [a] = t.store.parts.append(source, [{ body: { type: 'prompt', text: 'a' }, runId: 'r1', media: [{ mime: 'text/plain', bytes: Buffer.from('doc'), filename: 'd.txt', width: null, height: null, page_count: null }] as never }])
    t.store.parts.append(other, [{ body: { type: 'prompt', text: 'elsewhere' } }])
    const [b, c] = t.store.parts.append(source, [{ body: { type: 'message', text: 'b' }, runId: 'r-failed' }, { body: { type: 'prompt', text: 'c' } }])
    const [d] = t.store.parts.append(source, [{ body: { type: 'prompt', text: 'd' } }])
    const summary = (first: number, last: number) => ({ firstOrdinal: first, lastOrdinal: last, text: `s ${first}-${last}`, tokens: 3, runId: 'cr' })
    t.store.summaries.insert(source, summary(a!.ordinal, b!.ordinal), 'x')
    t.store.summaries.insert(source, summary(c!.ordinal, d!.ordinal), 'x')

    const fork = t.store.forks.fork({ orgId: org, sourceChatId: source, upTo: c!.ordinal, ...labels })!
    expect(fork).toMatchObject({ namespace: 'ns', title: 'fork', part_count: 3, user_metadata: '{"a":1}' })
    const rows = t.store.parts.page({ chatId: fork.id, limit: 10 }).rows
    const delta = rows[0]!.ordinal - a!.ordinal
    expect(delta).toBeGreaterThan(d!.ordinal - a!.ordinal)
    expect(rows.map((r) => [r.ordinal - delta, r.body, r.run_id, r.created_at])).toEqual([a, b, c].map((r) => [r!.ordinal, r!.body, r!.run_id, r!.created_at]))
    expect(rows.map((r) => r.id)).not.toContain(a!.id)
    const media = t.store.parts.mediaOf([rows[0]!.ordinal], true).get(rows[0]!.ordinal)!
    expect(media).toMatchObject([{ mime: 'text/plain', filename: 'd.txt', bytes: Buffer.from('doc') }])
    expect((t.db.prepare('SELECT count(*) AS n FROM media_blobs').get() as { n: number }).n).toBe(1)
    // The summary of [c, d] straddles the cut: not copied.
    expect(t.store.summaries.ofChat(fork.id).map((s) => [s.firstOrdinal - delta, s.lastOrdinal - delta, s.text])).toEqual([[a!.ordinal, b!.ordinal, `s ${a!.ordinal}-${b!.ordinal}`]])
    expect(t.store.runs.failedRunIds(fork.id)).toEqual(['r-failed'])

    // Deleting the source leaves the fork's rows and the shared blob.
    expect(t.store.chats.deleteById(source)).toBe(true)
    expect(t.store.parts.page({ chatId: fork.id, limit: 10 }).rows).toHaveLength(3)
    expect(t.store.parts.mediaOf([rows[0]!.ordinal], true).get(rows[0]!.ordinal)![0]!.bytes).toEqual(Buffer.from('doc'))
    expect(t.store.summaries.ofChat(fork.id)).toHaveLength(1)
  })

  it('is null for another organisation’s chat, and writes nothing', () => {
    const otherOrg = t.store.organisations.create('B', 'b').id
    const foreign = t.store.chats.create({ orgId: otherOrg, namespace: null, title: null, description: null, userMetadata: {} }).id
    expect(t.store.forks.fork({ orgId: org, sourceChatId: foreign, upTo: null, ...labels })).toBeNull()
    expect((t.db.prepare('SELECT count(*) AS n FROM chats').get() as { n: number }).n).toBe(1)
  })

  it('each copy reads the source through an index, never a scan of every part', () => {
    const params = { fork: 'f', source: 's', upTo: 10, delta: 5 }
    for (const sql of [FORK_PARTS_SQL, FORK_MEDIA_SQL, FORK_SUMMARIES_SQL]) {
      const plan = queryPlan(t.db, sql, params).map((r) => r.detail).join('\n')
      expect(plan, sql).not.toMatch(/^SCAN (parts|part_media|summaries)\b/m)
    }
  })
})
