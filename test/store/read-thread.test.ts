import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { DatabaseUnavailableError } from '../../src/domain/errors.ts'
import { WATCH_LOOK_BEGAN, WATCH_MAIN_POSITION, WATCH_POSITION, WATCH_SLOTS } from '../../src/store/litefs-watch.ts'
import { startReadThread, type OffThreadReads } from '../../src/store/read-thread.ts'
import { installStorageStall } from '../../src/store/storage-stall.ts'
import { openTempStore } from '../helpers/temp-store.ts'

/**
 * The read threads (decision 048) on a plain file, with the LiteFS watcher's shared state written by
 * hand: "stalled" is a look begun a second ago and not ended. A plain file never blocks, so what is
 * shown here is which snapshot answers, not the wait itself (test/cluster/stalled-litefs.test.ts).
 */
let t: ReturnType<typeof openTempStore>
let reads: OffThreadReads
let watch: BigInt64Array
let key = ''
let orgId = ''
let chatId = ''

const stall = (on: boolean) => {
  Atomics.store(watch, WATCH_LOOK_BEGAN, on ? BigInt(Date.now() - 1_000) : 0n)
  installStorageStall(on ? { stalled: () => true, stalledForMs: () => 1_000 } : null)
}
const say = (text: string) => t.store.parts.append(chatId, [{ body: { type: 'prompt', text } as never }])
const texts = (json: string | null) => (JSON.parse(json!) as { data: Array<{ part: { text: string } }> }).data.map((p) => p.part.text)

beforeEach(async () => {
  t = openTempStore()
  const org = t.store.organisations.create('Stall', 'stall')
  orgId = org.id
  key = t.store.apiKeys.create(orgId, null).key
  chatId = t.store.chats.create({ orgId, namespace: null, title: null, description: null, userMetadata: {} }).id
  say('one')
  const shared = new SharedArrayBuffer(WATCH_SLOTS * BigInt64Array.BYTES_PER_ELEMENT)
  watch = new BigInt64Array(shared)
  Atomics.store(watch, WATCH_POSITION, 7n)
  Atomics.store(watch, WATCH_MAIN_POSITION, -1n)
  reads = startReadThread(t.file, () => t.db, () => true, shared)
})
afterEach(async () => {
  stall(false)
  await reads.stop()
  t.close()
})

describe('the read threads', () => {
  it('read what was committed before they were asked, key and page, while litefs answers', async () => {
    expect(await reads.authenticate(key)).toMatchObject({ orgId })
    expect(texts(await reads.historyPage(orgId, chatId, {}))).toEqual(['one'])
    say('two')
    expect(texts(await reads.historyPage(orgId, chatId, {}))).toEqual(['one', 'two'])
    expect(await reads.historyPage('another-org', chatId, {})).toBeNull()
    expect(reads.servedFromHeldSnapshot()).toBe(0)
  })

  it('answer from the snapshot they hold while litefs is stalled, when nothing was written since', async () => {
    // Both threads renew their snapshot while litefs answers.
    for (let i = 0; i < 4; i++) expect(texts(await reads.historyPage(orgId, chatId, {}))).toEqual(['one'])
    stall(true)
    for (let i = 0; i < 4; i++) expect(texts(await reads.historyPage(orgId, chatId, {}))).toEqual(['one'])
    expect(await reads.authenticate(key)).toMatchObject({ orgId })
    expect(reads.servedFromHeldSnapshot()).toBe(5)
  })

  it('answer 503 rather than a snapshot that misses a write this node made since', async () => {
    for (let i = 0; i < 4; i++) await reads.historyPage(orgId, chatId, {})
    say('two')
    stall(true)
    const refused = await reads.historyPage(orgId, chatId, {}).then(
      () => null,
      (error: unknown) => error,
    )
    expect(refused).toBeInstanceOf(DatabaseUnavailableError)
    expect(refused).toMatchObject({ code: 'unavailable', retryAfterSeconds: 1 })
    stall(false)
    expect(texts(await reads.historyPage(orgId, chatId, {}))).toEqual(['one', 'two'])
  })

  it('answer 503 rather than a snapshot older than the position this node announced', async () => {
    for (let i = 0; i < 4; i++) await reads.historyPage(orgId, chatId, {})
    Atomics.store(watch, WATCH_MAIN_POSITION, 8n)
    stall(true)
    await expect(reads.historyPage(orgId, chatId, {})).rejects.toBeInstanceOf(DatabaseUnavailableError)
  })
})
