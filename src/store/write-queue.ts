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

  function flush() {
    const batch = queued
    queued = []
    const outcomes: Outcome[] = []
    try {
      db.transaction(() => {
        for (const item of batch) {
          try {
            outcomes.push({ ok: true, value: db.transaction(item.fn)() })
          } catch (error) {
            outcomes.push({ ok: false, error })
          }
        }
      }).immediate()
    } catch (error) {
      // BEGIN or COMMIT failed: none of the batch was written.
      for (const item of batch) item.reject(error)
      return
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
