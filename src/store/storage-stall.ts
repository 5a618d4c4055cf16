import { DatabaseUnavailableError } from '../domain/errors.ts'

/**
 * Whether this node's storage (its litefs process, under the FUSE mount that holds the database)
 * answers right now (docs/decisions/048-stalled-litefs.md). While litefs does not answer, every
 * system call that reaches the mount waits in the kernel for it: a read transaction's lock on the
 * `-shm` file, a write, a `stat`, a read of `.primary`. On the main thread that wait is the whole
 * event loop's. So the main thread asks `stalled()` before it would enter SQLite from a timer or a
 * request, and waits (asynchronously) or answers 503 instead.
 *
 * One per process, like the event loop it protects: main.ts installs the LiteFS watcher's view
 * (src/store/litefs-watch.ts); without LiteFS (a plain file, the tests) storage is never stalled.
 */
export type StorageStall = {
  /** True while a look at the mount has gone unanswered for longer than the watcher's threshold. */
  stalled(): boolean
  /** How long the current stall has lasted (ms), 0 when none. */
  stalledForMs(): number
}

const NEVER: StorageStall = { stalled: () => false, stalledForMs: () => 0 }
let current: StorageStall = NEVER

export const storageStall: StorageStall = {
  stalled: () => current.stalled(),
  stalledForMs: () => current.stalledForMs(),
}

/** Installs the source of truth (the LiteFS watcher); null puts back "never stalled". */
export function installStorageStall(source: StorageStall | null): void {
  current = source ?? NEVER
}

let commitsOffMainConnection = 0
/**
 * A commit made on another connection of this process (the fork copier's thread): counted, so the
 * read thread knows a snapshot taken before it is not current (src/store/read-thread.ts).
 */
export function noteCommitOffMainConnection(): void {
  commitsOffMainConnection++
}
export const commitsOffMain = (): number => commitsOffMainConnection

/**
 * 503 `unavailable` (`database_busy`, Retry-After): litefs does not answer, and this request would
 * have to wait for it. Nothing was written.
 */
export function stalledError(retryAfterSeconds = 1): DatabaseUnavailableError {
  return new DatabaseUnavailableError(
    'the storage (litefs) is not answering',
    'database_busy',
    retryAfterSeconds,
    "The node's storage is not answering for the moment; nothing was written. Retry shortly.",
  )
}

let writeHolds = 0
let onWritesReleased: (() => void)[] = []
/**
 * A short hold on this process's queued writes (src/store/write-queue.ts), taken by the read
 * threads' WAL cycle (src/store/read-thread.ts): while nothing commits, the log can be copied whole
 * and the read threads' snapshots renewed past it, one thread at a time, so the next write starts
 * the log afresh while a snapshot is always held. Writes queued meanwhile wait and commit when it ends.
 */
export const writeHold = {
  held: (): boolean => writeHolds > 0,
  /** Takes a hold; the function returned lets go of it (once). */
  take(): () => void {
    writeHolds++
    let released = false
    return () => {
      if (released) return
      released = true
      writeHolds--
      if (writeHolds > 0) return
      const waiting = onWritesReleased
      onWritesReleased = []
      for (const resume of waiting) resume()
    }
  },
  /** Calls `resume` once no hold is left. */
  whenReleased(resume: () => void): void {
    if (writeHolds === 0) resume()
    else onWritesReleased.push(resume)
  },
}

let onCommit: (() => void) | null = null
/**
 * This process committed on its main connection (a group commit, a lease renewal): the read threads
 * take snapshots past it at once (src/store/read-thread.ts), so a stall that begins a moment later
 * finds one that holds it, rather than one that is a request or an idle tick old.
 */
export function noteCommit(): void {
  onCommit?.()
}
/** The read threads' hook for noteCommit (one per process; null lets go of it). */
export function onCommitNoted(hook: (() => void) | null): void {
  onCommit = hook
}
