import type { Db } from './database.ts'

type Queued = { fn: () => unknown; resolve: (value: unknown) => void; reject: (error: unknown) => void }
type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown }

// Taken once at load: fake timers in tests must not stall the ledger's commits.
const nextCheckPhase = globalThis.setImmediate

/**
 * Group commit for the turn path. Writes queued during one turn of the event loop are applied
 * together at its end, in one transaction, each in its own savepoint: a write that throws is undone
 * alone, and the others commit. A write's promise settles only after that COMMIT, so nothing that
 * waits for it (a streamed byte, a `done` frame) can get ahead of the ledger. Concurrent turns share
 * one commit and the pages they all touch (the ledger's tail, the organisation's balance, the hour's
 * usage row) are written once per batch instead of once per turn.
 */
export function createWriteQueue(db: Db) {
  let queued: Queued[] = []
  // Prepared once: a flush runs per tick under load, and wrapping each write in db.transaction()
  // would build a new transaction function every time.
  const begin = db.prepare('BEGIN IMMEDIATE')
  const commit = db.prepare('COMMIT')
  const rollback = db.prepare('ROLLBACK')
  const savepoint = db.prepare('SAVEPOINT queued_write')
  const release = db.prepare('RELEASE queued_write')
  const rollbackTo = db.prepare('ROLLBACK TO queued_write')

  const rejectAll = (batch: Queued[], error: unknown) => {
    try {
      if (db.inTransaction) rollback.run()
    } catch {
      // The connection ended the transaction itself; the batch's error is what callers need.
    }
    for (const item of batch) item.reject(error)
  }

  function flush() {
    const batch = queued
    queued = []
    const outcomes: Outcome[] = []
    try {
      begin.run()
    } catch (error) {
      return rejectAll(batch, error)
    }
    for (const item of batch) {
      savepoint.run()
      try {
        const value = item.fn()
        // Whatever an async write did after its first await would run outside this transaction.
        if (typeof (value as { then?: unknown } | null)?.then === 'function') throw new TypeError('a queued write must be synchronous')
        release.run()
        outcomes.push({ ok: true, value })
      } catch (error) {
        // Some errors (a full disk, I/O) end the whole transaction: then none of the batch stands.
        if (!db.inTransaction) return rejectAll(batch, error)
        rollbackTo.run()
        release.run()
        outcomes.push({ ok: false, error })
      }
    }
    try {
      commit.run()
    } catch (error) {
      return rejectAll(batch, error)
    }
    batch.forEach((item, i) => {
      const outcome = outcomes[i]!
      if (outcome.ok) item.resolve(outcome.value)
      else item.reject(outcome.error)
    })
  }

  return {
    /** Runs `fn` (synchronous SQL) in the next group commit; resolves with its result once committed. */
    write<T>(fn: () => T): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        if (queued.length === 0) nextCheckPhase(flush)
        queued.push({ fn, resolve: resolve as (value: unknown) => void, reject })
      })
    },
  }
}

export type WriteQueue = ReturnType<typeof createWriteQueue>
