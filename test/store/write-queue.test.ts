import Database from 'better-sqlite3'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { DatabaseUnavailableError } from '../../src/domain/errors.ts'
import { SERVER_BUSY_TIMEOUT_MS } from '../../src/store/database.ts'
import { createWriteQueue, type WriteQueue } from '../../src/store/write-queue.ts'
import { installStorageStall } from '../../src/store/storage-stall.ts'
import { openTempStore } from '../helpers/temp-store.ts'

let t: ReturnType<typeof openTempStore>
let other: Database.Database
let queue: WriteQueue

const insert = (n: number) => t.db.prepare('INSERT INTO scratch (n) VALUES (?)').run(n)
/** What a second connection to the same file sees: only committed rows. */
const committed = () => (other.prepare('SELECT n FROM scratch ORDER BY rowid').pluck().all() as number[])
/** Resolves with the write's outcome without letting a rejection go unhandled. */
const settle = <T>(p: Promise<T>) => p.then((value) => ({ value }), (error: unknown) => ({ error }))

beforeEach(() => {
  t = openTempStore()
  t.db.exec('CREATE TABLE scratch (n INTEGER) STRICT')
  other = new Database(t.file)
  queue = createWriteQueue(t.db)
})
afterEach(() => {
  other.close()
  t.close()
})

describe('createWriteQueue', () => {
  it('is what the store exposes as store.writes', async () => {
    await expect(t.store.writes.write(() => insert(7).changes)).resolves.toBe(1)
    expect(committed()).toEqual([7])
  })

  it('commits the writes of one tick together, and only after write() has returned', async () => {
    let settled = false
    const seenMidBatch: number[][] = []
    const writes = [
      queue.write(() => insert(1)),
      queue.write(() => insert(2)),
      queue.write(() => {
        // Writes 1 and 2 have run on the queue's connection but are not yet visible elsewhere.
        seenMidBatch.push(committed())
        return insert(3)
      }),
    ]
    void Promise.all(writes).then(() => (settled = true))
    expect(committed()).toEqual([])
    await Promise.resolve()
    await Promise.resolve()
    expect(settled).toBe(false)
    expect(committed()).toEqual([])

    await Promise.all(writes)
    expect(seenMidBatch).toEqual([[]])
    expect(committed()).toEqual([1, 2, 3])
  })

  it('rejects a throwing write with its own error and undoes its rows; the rest of the batch commits', async () => {
    const boom = new Error('boom')
    const [a, b, c] = await Promise.all([
      settle(queue.write(() => (insert(1), 'a'))),
      settle(
        queue.write(() => {
          insert(2)
          throw boom
        }),
      ),
      settle(queue.write(() => (insert(3), 'c'))),
    ])
    expect(a).toEqual({ value: 'a' })
    expect((b as { error: unknown }).error).toBe(boom)
    expect(c).toEqual({ value: 'c' })
    expect(committed()).toEqual([1, 3])
  })

  it('runs writes and returns their results in queue order', async () => {
    const results = await Promise.all([5, 3, 9, 1].map((n) => queue.write(() => (insert(n), n * 10))))
    expect(results).toEqual([50, 30, 90, 10])
    expect(committed()).toEqual([5, 3, 9, 1])
  })

  it('puts a write queued after a batch started into a later batch', async () => {
    let seenBySecond: number[] = []
    let second: Promise<void> | undefined
    await queue.write(() => {
      insert(1)
      // Queued while the first batch is being applied: it must wait for that batch's commit.
      second = queue.write(() => {
        seenBySecond = committed()
        insert(2)
      })
    })
    await second
    expect(seenBySecond).toEqual([1])

    await queue.write(() => insert(3))
    expect(committed()).toEqual([1, 2, 3])
  })

  it('refuses an async write, undoing what it wrote before its first await', async () => {
    const asyncWrite = queue.write(async () => {
      insert(1)
      await Promise.resolve()
    })
    const fine = queue.write(() => insert(3))
    await expect(asyncWrite).rejects.toThrow('a queued write must be synchronous')
    await fine
    expect(committed()).toEqual([3])
  })

  it('waits for a write lock held elsewhere without holding up the event loop, then commits; writes queued meanwhile join', async () => {
    other.exec('BEGIN IMMEDIATE')
    let ran = 0
    const first = Promise.all([1, 2].map((n) => queue.write(() => (ran++, insert(n)))))
    // While the batch waits, the event loop turns: no statement blocks longer than the busy timeout,
    // and the batch waits between attempts on a timer. (How long the loop stalls is the machine's,
    // not asserted here: decision 019, "Under load"; test/e2e/held-write-lock.test.ts times the
    // server's answers while a lock is held.)
    let ticks = 0
    const ticker = setInterval(() => ticks++, 10)
    await new Promise((resolve) => setTimeout(resolve, 150))
    const ticksBeforeJoin = ticks
    const joined = queue.write(() => (ran++, insert(3)))
    await new Promise((resolve) => setTimeout(resolve, 150))
    const ticksWhileWaiting = ticks
    expect(ran).toBe(0)
    other.exec('ROLLBACK')
    await Promise.all([first, joined])
    clearInterval(ticker)

    expect(ran).toBe(3)
    expect(committed()).toEqual([1, 2, 3])
    // The ticker ran in both waits, while the lock was held and the batch not yet written.
    expect(ticksBeforeJoin).toBeGreaterThan(0)
    expect(ticksWhileWaiting).toBeGreaterThan(ticksBeforeJoin)
    // A statement waits for the lock at most SERVER_BUSY_TIMEOUT_MS (20 ms) at a time.
    expect(t.db.pragma('busy_timeout', { simple: true })).toBe(SERVER_BUSY_TIMEOUT_MS)
  })

  it('gives up after its budget: every write of the batch rejects with 503 database_busy, none of them ran', async () => {
    const short = createWriteQueue(t.db, { busyBudgetMs: 200 })
    other.exec('BEGIN IMMEDIATE')
    let ran = 0
    const started = performance.now()
    const outcomes = await Promise.all([1, 2].map((n) => settle(short.write(() => (ran++, insert(n))))))
    const waited = performance.now() - started
    other.exec('ROLLBACK')

    expect(ran).toBe(0)
    expect(waited).toBeGreaterThanOrEqual(190)
    for (const outcome of outcomes) {
      const error = (outcome as { error: unknown }).error
      expect(error).toBeInstanceOf(DatabaseUnavailableError)
      expect(error).toMatchObject({ code: 'unavailable', reason: 'database_busy', retryAfterSeconds: 2, cause: { code: 'SQLITE_BUSY' } })
    }
    expect(committed()).toEqual([])
    expect(t.db.inTransaction).toBe(false)
    // The queue is usable again once the lock is gone.
    await short.write(() => insert(3))
    expect(committed()).toEqual([3])
  })

  it('rejects a batch that fills the disk with 503 storage_full, and leaves the file intact', async () => {
    await queue.write(() => insert(1))
    t.db.pragma(`max_page_count = ${t.db.pragma('page_count', { simple: true }) as number}`)
    // 100,000 rows need hundreds of new pages; the file may not grow by one.
    const many = 'WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 100000) INSERT INTO scratch (n) SELECT i FROM c'
    const outcomes = await Promise.all([
      settle(queue.write(() => insert(2))),
      settle(queue.write(() => t.db.prepare(many).run())),
    ])
    for (const outcome of outcomes) {
      expect((outcome as { error: unknown }).error).toMatchObject({ code: 'unavailable', reason: 'storage_full', cause: { code: 'SQLITE_FULL' } })
    }
    expect(t.db.inTransaction).toBe(false)
    expect(committed()).toEqual([1])
    expect(other.pragma('integrity_check', { simple: true })).toBe('ok')
    t.db.pragma('max_page_count = 1073741823')
    await queue.write(() => insert(4))
    expect(committed()).toEqual([1, 4])
  })

  it('rejects the writes of a batch whose connection was closed meanwhile (a role change, shutdown) with 503 read_only', async () => {
    const pending = settle(queue.write(() => insert(1)))
    t.db.close()
    expect(((await pending) as { error: unknown }).error).toMatchObject({ code: 'unavailable', reason: 'read_only', retryAfterSeconds: 2 })
  })

  it('rejects a batch waiting for a busy lock whose connection is closed meanwhile, without throwing from its timer', async () => {
    other.exec('BEGIN IMMEDIATE')
    const pending = settle(queue.write(() => insert(1)))
    await new Promise((resolve) => setTimeout(resolve, 60))
    t.db.close()
    expect(((await pending) as { error: unknown }).error).toMatchObject({ code: 'unavailable', reason: 'read_only' })
    other.exec('ROLLBACK')
  })

  it('rejects every write of the batch when COMMIT fails, and writes none of them', async () => {
    t.db.exec(`
      CREATE TABLE parent (id INTEGER PRIMARY KEY) STRICT;
      CREATE TABLE child (parent_id INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED) STRICT;
    `)
    // The dangling reference passes its savepoint and only fails the deferred check at COMMIT.
    const outcomes = await Promise.all([
      settle(queue.write(() => insert(1))),
      settle(queue.write(() => t.db.prepare('INSERT INTO child (parent_id) VALUES (42)').run())),
      settle(queue.write(() => insert(2))),
    ])
    for (const outcome of outcomes) expect(outcome).toMatchObject({ error: { code: 'SQLITE_CONSTRAINT_FOREIGNKEY' } })
    expect(committed()).toEqual([])
    expect(other.prepare('SELECT count(*) FROM child').pluck().get()).toBe(0)
    expect(t.db.inTransaction).toBe(false)
  })
})

describe('createWriteQueue while litefs is stalled (decision 048)', () => {
  let stalled = false
  beforeEach(() => {
    stalled = false
    installStorageStall({ stalled: () => stalled, stalledForMs: () => (stalled ? 100 : 0) })
  })
  afterEach(() => installStorageStall(null))

  it('does not enter SQLite while stalled, and commits the waiting batch once litefs answers', async () => {
    stalled = true
    let ran = 0
    const write = settle(queue.write(() => (ran++, insert(5).changes)))
    await new Promise((resolve) => setTimeout(resolve, 60))
    // Not run, not begun: the connection holds no transaction the stall could catch.
    expect(ran).toBe(0)
    expect(t.db.inTransaction).toBe(false)
    expect(committed()).toEqual([])
    stalled = false
    expect(await write).toEqual({ value: 1 })
    expect(ran).toBe(1)
    expect(committed()).toEqual([5])
  })

  it('fails the batch with 503 (Retry-After) once the stall outlasts its budget, having written nothing', async () => {
    stalled = true
    const patient = createWriteQueue(t.db, { stallBudgetMs: 50 })
    let ran = 0
    const outcome = await settle(patient.write(() => (ran++, insert(6))))
    expect(ran).toBe(0)
    expect('error' in outcome && outcome.error).toBeInstanceOf(DatabaseUnavailableError)
    expect((outcome as { error: DatabaseUnavailableError }).error).toMatchObject({ code: 'unavailable', retryAfterSeconds: 2 })
    stalled = false
    expect(committed()).toEqual([])
  })
})
