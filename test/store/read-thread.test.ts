import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { DatabaseUnavailableError } from '../../src/domain/errors.ts'
import { WATCH_LOOK_BEGAN, WATCH_MAIN_POSITION, WATCH_POSITION, WATCH_SLOTS } from '../../src/store/litefs-watch.ts'
import { startReadThread, type OffThreadReads } from '../../src/store/read-thread.ts'
import { installStorageStall, writeHold } from '../../src/store/storage-stall.ts'
import { startWalCheckpointer, type WalCheckpointer } from '../../src/store/wal-checkpointer.ts'
import { readFileSync } from 'node:fs'
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

/**
 * The WAL cycle (read-thread.ts, WAL_CYCLE_MS): every few seconds the primary's log is started
 * afresh, which needs a moment when no snapshot reads it. A stall may begin at any point of it, and
 * must still find a snapshot held that holds every write (issue 34: history within 100 ms while
 * litefs is stopped). Here the stall is declared at the cycle's riskiest points.
 */
describe('the WAL cycle', () => {
  let checkpointer: WalCheckpointer
  /** Called as each checkpoint the cycle asked for answers. */
  let onCheckpoint: () => void = () => {}
  const take = writeHold.take
  beforeEach(async () => {
    await reads.stop()
    checkpointer = startWalCheckpointer(t.file, () => {})
    onCheckpoint = () => {}
    const shared = watch.buffer as SharedArrayBuffer
    reads = startReadThread(t.file, () => t.db, () => true, shared, () =>
      checkpointer.checkpointNow().then((complete) => {
        onCheckpoint()
        return complete
      }),
      // Room for both parts of a cycle on a loaded machine (a CI run's 2 cores): what is watched must happen.
      10_000,
      10_000,
    )
    for (let i = 0; i < 4; i++) await reads.historyPage(orgId, chatId, {})
  })
  afterEach(async () => {
    writeHold.take = take
    await checkpointer.stop()
  })
  /**
   * The next cycle's write hold (a cycle may already be under way when the test begins: it is not
   * the one watched): `atTake` runs as it is taken, `atRelease` just after it is let go; resolves then.
   */
  const nextHold = (atTake: () => void = () => {}, atRelease: () => void = () => {}) =>
    new Promise<void>((resolve) => {
      writeHold.take = () => {
        writeHold.take = take
        atTake()
        const release = take()
        return () => {
          release()
          atRelease()
          resolve()
        }
      }
    })

  it('a stall that begins as writes are held finds a current snapshot', async () => {
    await nextHold(() => stall(true))
    // Asked in turn, each thread answers: neither may be without its snapshot.
    for (let i = 0; i < 4; i++) expect(texts(await reads.historyPage(orgId, chatId, {}))).toEqual(['one'])
    expect(reads.servedFromHeldSnapshot()).toBe(4)
  })

  it('a stall that begins once the log is copied whole, as the threads renew past it, finds a current snapshot', async () => {
    let stalledInHold = false
    onCheckpoint = () => {
      if (!writeHold.held() || stalledInHold) return
      stalledInHold = true
      stall(true)
    }
    while (!stalledInHold) await nextHold()
    for (let i = 0; i < 4; i++) expect(texts(await reads.historyPage(orgId, chatId, {}))).toEqual(['one'])
    expect(reads.servedFromHeldSnapshot()).toBe(4)
  })

  it('starts the log afresh while the threads keep snapshots', async () => {
    // The log's salt (bytes 16-19 of its header) changes each time SQLite starts it from its beginning.
    const salt = () => readFileSync(`${t.file}-wal`).subarray(16, 20).toString('hex')
    // Writes keep coming, as on a busy primary: a snapshot renewed between them always needs the log.
    let writing = true
    const writer = (async () => {
      for (let i = 0; writing; i++) {
        await t.store.writes.write(() => say(`write ${i}`))
        if (i % 5 === 0) await reads.historyPage(orgId, chatId, { limit: 1 })
        await new Promise((resolve) => setImmediate(resolve))
      }
    })()
    // A cycle may give up on a slow machine (its hold is bounded) and start nothing: up to five are watched.
    const salts: { before: string; after: string }[] = []
    for (let cycle = 0; cycle < 5 && !salts.some((x) => x.before !== x.after); cycle++) {
      let before = ''
      let after = ''
      // The first write after the hold, made at once on the main connection: no snapshot renewed since.
      await nextHold(
        () => (before = salt()),
        () => {
          say(`after cycle ${cycle}`)
          after = salt()
        },
      )
      salts.push({ before, after })
    }
    writing = false
    await writer
    expect(salts.some((x) => x.before !== x.after), JSON.stringify(salts)).toBe(true)
  })
})
