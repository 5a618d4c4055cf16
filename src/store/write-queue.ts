import type { Db } from './database.ts'
import { cannotWriteError, databaseErrorOf, sqliteErrorKind } from './sqlite-errors.ts'
import { noteCommit, stalledError, storageStall, writeHold } from './storage-stall.ts'

type Queued = { fn: () => unknown; resolve: (value: unknown) => void; reject: (error: unknown) => void }
type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown }

// Taken once at load: fake timers in tests must not stall the ledger's commits.
const nextCheckPhase = globalThis.setImmediate
const later = globalThis.setTimeout

export type WriteQueueOptions = {
  /**
   * How long a batch waits in all for a write lock held elsewhere (docs/decisions/028): its BEGIN is
   * tried again after growing pauses, the event loop free in between, until this has passed since
   * the first refusal; then its writes fail with 503 `unavailable` (`database_busy`).
   */
  busyBudgetMs?: number
  /** The first pause before trying a refused BEGIN again; it doubles up to `busyBackoffMaxMs`. */
  busyBackoffMs?: number
  busyBackoffMaxMs?: number
  /** How long a batch waits in all for a stalled litefs (WRITE_STALL_BUDGET_MS unless told). */
  stallBudgetMs?: number
}

export const WRITE_BUSY_BUDGET_MS = 5_000
const WRITE_BUSY_BACKOFF_MS = 10
const WRITE_BUSY_BACKOFF_MAX_MS = 250
/**
 * How long a batch waits, in all, for a stalled litefs to answer again (docs/decisions/048): the
 * queue does not enter SQLite meanwhile (the call would hold the event loop until litefs answers),
 * and looks again every STALL_RECHECK_MS. Past it, the batch's writes fail with 503 (nothing of
 * them was written), so no run waits for ever on a node whose storage is gone.
 */
export const WRITE_STALL_BUDGET_MS = 30_000
const STALL_RECHECK_MS = 10
/** Retry-After of a batch that waited its whole budget: the lock has been held for seconds already. */
const EXHAUSTED_RETRY_AFTER_SECONDS = 2

/**
 * Group commit for the turn path. Writes queued during one turn of the event loop are applied
 * together at its end, in one transaction, each in its own savepoint: a write that throws is undone
 * alone, and the others commit. A write's promise settles only after that COMMIT, so nothing that
 * waits for it (a streamed byte, a `done` frame) can get ahead of the ledger. Concurrent turns share
 * one commit and the pages they all touch (the ledger's tail, the organisation's balance, the hour's
 * usage row) are written once per batch instead of once per turn.
 *
 * A write lock held by another process (docs/decisions/028-busy-and-full-database.md) refuses the
 * batch's BEGIN after the connection's short busy_timeout; none of its writes has run, so the batch
 * waits asynchronously and tries again (writes queued meanwhile join it), for `busyBudgetMs` at most.
 * An SQLite failure of the database's condition (busy, full, read-only) rejects with the domain's
 * DatabaseUnavailableError (503 with Retry-After), the SQLite error as its cause; others as they are.
 */
export function createWriteQueue(db: Db, options: WriteQueueOptions = {}) {
  const busyBudgetMs = options.busyBudgetMs ?? WRITE_BUSY_BUDGET_MS
  const backoffMs = options.busyBackoffMs ?? WRITE_BUSY_BACKOFF_MS
  const backoffMaxMs = options.busyBackoffMaxMs ?? WRITE_BUSY_BACKOFF_MAX_MS
  const stallBudgetMs = options.stallBudgetMs ?? WRITE_STALL_BUDGET_MS
  let queued: Queued[] = []
  /** A flush is due (at the end of this tick, or after a pause for a busy lock). */
  let scheduled = false
  /** When the waiting batch's BEGIN was first refused as busy, and how many times since. */
  let busySince: number | null = null
  let busyAttempts = 0
  /** When the waiting batch first found litefs stalled. */
  let stalledSince: number | null = null
  // Prepared once: a flush runs per tick under load, and wrapping each write in db.transaction()
  // would build a new transaction function every time.
  const begin = db.prepare('BEGIN IMMEDIATE')
  const commit = db.prepare('COMMIT')
  const rollback = db.prepare('ROLLBACK')
  const savepoint = db.prepare('SAVEPOINT queued_write')
  const release = db.prepare('RELEASE queued_write')
  const rollbackTo = db.prepare('ROLLBACK TO queued_write')

  /** What a caller is given: the domain's 503 for the database's condition, else the error itself. */
  const asSeen = (error: unknown, retryAfterSeconds?: number) =>
    databaseErrorOf(error, retryAfterSeconds === undefined ? {} : { retryAfterSeconds }) ?? error

  const rejectAll = (batch: Queued[], error: unknown, retryAfterSeconds?: number) => {
    try {
      if (db.inTransaction) rollback.run()
    } catch {
      // The connection ended the transaction itself; the batch's error is what callers need.
    }
    const seen = asSeen(error, retryAfterSeconds)
    for (const item of batch) item.reject(seen)
  }

  const schedule = (delayMs: number | null) => {
    scheduled = true
    if (delayMs === null) nextCheckPhase(flush)
    else later(flush, delayMs)
  }

  /** BEGIN was refused as busy: wait and try again while the budget lasts. True when it will. */
  function waitForLock(batch: Queued[]): boolean {
    const now = Date.now()
    busySince ??= now
    if (now - busySince >= busyBudgetMs) return false
    const pause = Math.min(backoffMaxMs, backoffMs * 2 ** busyAttempts, busySince + busyBudgetMs - now)
    busyAttempts++
    // Writes queued while this flush ran synchronously: none (flush took them all); later ones join.
    queued = batch.concat(queued)
    schedule(pause)
    return true
  }

  function flush() {
    scheduled = false
    const batch = queued
    queued = []
    if (batch.length === 0) return
    // Closed under the queue (a LiteFS role change replaces the connection, shutdown closes it):
    // this connection will never write these; the caller is told to retry, as for a read-only node.
    if (!db.open) {
      for (const item of batch) item.reject(cannotWriteError(new Error('the database connection was closed')))
      return
    }
    // The WAL cycle's hold (a few milliseconds, src/store/read-thread.ts): the batch commits when it ends.
    if (writeHold.held()) {
      queued = batch.concat(queued)
      scheduled = true
      writeHold.whenReleased(() => schedule(null))
      return
    }
    // A stalled litefs (decision 048): wait for it without entering SQLite, within WRITE_STALL_BUDGET_MS.
    if (storageStall.stalled()) {
      const now = Date.now()
      stalledSince ??= now
      if (now - stalledSince < stallBudgetMs) {
        queued = batch.concat(queued)
        schedule(STALL_RECHECK_MS)
        return
      }
      stalledSince = null
      for (const item of batch) item.reject(stalledError(EXHAUSTED_RETRY_AFTER_SECONDS))
      return
    }
    stalledSince = null
    try {
      apply(batch)
    } catch (error) {
      // Flush runs from a timer: whatever the connection throws (closed on shutdown, a savepoint
      // refused) goes to the batch's callers, never to the process as an uncaught exception.
      rejectAll(batch, error)
    }
  }

  function apply(batch: Queued[]) {
    const outcomes: Outcome[] = []
    try {
      begin.run()
    } catch (error) {
      if (sqliteErrorKind(error) === 'busy' && waitForLock(batch)) return
      const exhausted = busySince !== null
      busySince = null
      busyAttempts = 0
      return rejectAll(batch, error, exhausted ? EXHAUSTED_RETRY_AFTER_SECONDS : undefined)
    }
    busySince = null
    busyAttempts = 0
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
    noteCommit()
    batch.forEach((item, i) => {
      const outcome = outcomes[i]!
      if (outcome.ok) item.resolve(outcome.value)
      else item.reject(asSeen(outcome.error))
    })
  }

  return {
    /** Runs `fn` (synchronous SQL) in the next group commit; resolves with its result once committed. */
    write<T>(fn: () => T): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        queued.push({ fn, resolve: resolve as (value: unknown) => void, reject })
        if (!scheduled) schedule(null)
      })
    },
  }
}

export type WriteQueue = ReturnType<typeof createWriteQueue>
