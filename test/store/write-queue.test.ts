import Database from 'better-sqlite3'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createWriteQueue, type WriteQueue } from '../../src/store/write-queue.ts'
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

  it('rejects every write of the batch when BEGIN fails, and runs none of them', async () => {
    t.db.pragma('busy_timeout = 0')
    other.exec('BEGIN IMMEDIATE')
    let ran = 0
    const outcomes = await Promise.all([1, 2].map((n) => settle(queue.write(() => (ran++, insert(n))))))
    other.exec('ROLLBACK')

    expect(ran).toBe(0)
    for (const outcome of outcomes) expect(outcome).toMatchObject({ error: { code: 'SQLITE_BUSY' } })
    expect(committed()).toEqual([])
    // The queue is usable again once the lock is gone.
    await queue.write(() => insert(3))
    expect(committed()).toEqual([3])
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
