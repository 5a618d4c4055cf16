import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest'
import { join } from 'node:path'
import { DatabaseUnavailableError } from '../../src/domain/errors.ts'
import { forkCopier } from '../../src/store/fork-copier.ts'
import type { NewPart } from '../../src/store/parts.ts'
import { openTempStore } from '../helpers/temp-store.ts'

let t: ReturnType<typeof openTempStore>
let org: string

beforeEach(() => {
  t = openTempStore()
  org = t.store.organisations.create('Acme', 'acme').id
})
afterEach(() => t.close())
afterAll(() => forkCopier.stop())

const labels = { title: 'fork', description: null, userMetadata: {} }
const chatCount = () => (t.db.prepare('SELECT count(*) AS n FROM chats').get() as { n: number }).n
const forkCount = () => (t.db.prepare("SELECT count(*) AS n FROM chats WHERE title = 'fork'").get() as { n: number }).n

function chatOf(parts: number): { id: string; last: number } {
  const id = t.store.chats.create({ orgId: org, namespace: 'ns', title: null, description: null, userMetadata: {} }).id
  const batch: NewPart[] = Array.from({ length: parts }, (_, i) => ({ body: { type: 'prompt', text: `part ${i} of a long chat` }, tokens: 8 }))
  return { id, last: t.store.parts.append(id, batch).at(-1)!.ordinal }
}

describe('forkCopier (docs/decisions/037-fork.md: the copy runs on a thread of its own)', () => {
  it('copies on its own connection while the event loop turns and reads go on', async () => {
    const source = chatOf(5_000)
    let turns = 0
    const seenDuringCopy: number[] = []
    let copying = true
    const turn = () => {
      turns++
      // Reads on the server's connection go on while the thread copies.
      if (turns % 10 === 0) seenDuringCopy.push(forkCount())
      if (copying) setImmediate(turn)
    }
    setImmediate(turn)
    const fork = await forkCopier.copy(t.file, { orgId: org, sourceChatId: source.id, upTo: source.last, ...labels }, new Date('2031-02-03T04:05:06.000Z'))
    copying = false

    expect(fork).toMatchObject({ namespace: 'ns', title: 'fork', part_count: 5_000, created_at: '2031-02-03T04:05:06.000Z' })
    expect(t.store.parts.page({ chatId: fork!.id, limit: 1 }).rows).toHaveLength(1)
    expect(turns).toBeGreaterThan(20)
    expect(seenDuringCopy.length).toBeGreaterThan(1)
    // Until its commit the fork is not there; the reads before it saw none.
    expect(seenDuringCopy[0]).toBe(0)
  })

  // Apart from the test above: a write waiting for the lock blocks the loop for up to its busy
  // timeout (20 ms, decision 028) at each try, so a fast copy could finish within one such wait.
  it('a write queued while the thread copies waits for its lock and then commits', async () => {
    const source = chatOf(5_000)
    const copy = forkCopier.copy(t.file, { orgId: org, sourceChatId: source.id, upTo: source.last, ...labels }, new Date('2031-02-03T04:05:06.000Z'))
    // Written through the turn path's queue meanwhile: it waits for the thread's transaction, asynchronously.
    const queued = t.store.writes.write(() => t.store.chats.create({ orgId: org, namespace: null, title: 'meanwhile', description: null, userMetadata: {} }))
    await expect(copy).resolves.toMatchObject({ part_count: 5_000 })
    await expect(queued).resolves.toMatchObject({ title: 'meanwhile' })
  })

  it('is null for another organisation’s chat and writes nothing', async () => {
    const otherOrg = t.store.organisations.create('B', 'b').id
    const foreign = t.store.chats.create({ orgId: otherOrg, namespace: null, title: null, description: null, userMetadata: {} }).id
    const before = chatCount()
    await expect(forkCopier.copy(t.file, { orgId: org, sourceChatId: foreign, upTo: null, ...labels }, new Date())).resolves.toBeNull()
    expect(chatCount()).toBe(before)
  })

  it('answers a database it cannot open as the database being unavailable (503), and copies again afterwards', async () => {
    const missing = join(t.dir, 'no-such.db')
    await expect(forkCopier.copy(missing, { orgId: org, sourceChatId: 'x', upTo: null, ...labels }, new Date())).rejects.toBeInstanceOf(DatabaseUnavailableError)
    const source = chatOf(3)
    await expect(forkCopier.copy(t.file, { orgId: org, sourceChatId: source.id, upTo: source.last, ...labels }, new Date())).resolves.toMatchObject({ part_count: 3 })
  })
})
