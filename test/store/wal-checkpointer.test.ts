import { statSync } from 'node:fs'
import { afterEach, describe, expect, it } from 'vitest'
import { openDatabase } from '../../src/store/database.ts'
import { startWalCheckpointer, type WalCheckpointer } from '../../src/store/wal-checkpointer.ts'
import { openTempStore } from '../helpers/temp-store.ts'

const MiB = 1024 * 1024

describe('the WAL checkpointer thread (decision 034)', () => {
  let cleanup: (() => Promise<void> | void)[] = []
  afterEach(async () => {
    for (const step of cleanup.reverse()) await step()
    cleanup = []
  })

  it("copies a large write from the log into the database file, off the writer's connection", async () => {
    const temp = openTempStore()
    cleanup.push(() => temp.close())
    const db = openDatabase(temp.file, { autocheckpointPages: 1_000_000 })
    cleanup.push(() => void db.close())
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(1_000_000)

    db.exec('CREATE TABLE blobs (bytes BLOB) STRICT')
    const before = statSync(temp.file).size
    db.prepare('INSERT INTO blobs VALUES (?)').run(Buffer.alloc(8 * MiB, 1))
    // The writer's own connection did not checkpoint: the pages are in the log only.
    expect(statSync(temp.file).size - before).toBeLessThan(MiB)

    const failures: string[] = []
    const checkpointer: WalCheckpointer = startWalCheckpointer(temp.file, (message) => failures.push(message), 20)
    cleanup.push(() => checkpointer.stop())
    await expect.poll(() => statSync(temp.file).size - before, { timeout: 60_000, interval: 20 }).toBeGreaterThan(8 * MiB)
    expect(failures).toEqual([])
  })

  it('checkpoints what is left when stopped, and its thread ends', async () => {
    const temp = openTempStore()
    cleanup.push(() => temp.close())
    const db = openDatabase(temp.file, { autocheckpointPages: 1_000_000 })
    cleanup.push(() => void db.close())
    db.exec('CREATE TABLE blobs (bytes BLOB) STRICT')
    // A tick far longer than the test: only the stop can copy the write.
    const checkpointer = startWalCheckpointer(temp.file, () => {}, 3_600_000)
    const before = statSync(temp.file).size
    db.prepare('INSERT INTO blobs VALUES (?)').run(Buffer.alloc(4 * MiB, 1))
    expect(statSync(temp.file).size - before).toBeLessThan(MiB)
    await checkpointer.stop()
    expect(statSync(temp.file).size - before).toBeGreaterThan(4 * MiB)
  })

  it('reports a database it cannot checkpoint instead of failing silently', async () => {
    const failures: string[] = []
    const checkpointer = startWalCheckpointer('/nonexistent/parley.db', (message) => failures.push(message), 20)
    await expect.poll(() => failures.length, { timeout: 60_000 }).toBeGreaterThan(0)
    await checkpointer.stop()
    expect(failures[0]).toMatch(/directory does not exist|unable to open/)
  })
})
