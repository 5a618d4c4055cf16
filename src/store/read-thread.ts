import { Worker } from 'node:worker_threads'
import type { HistoryPageQuery } from './history-page.ts'
import type { ApiKeyIdentity } from './api-keys.ts'
import type { Db } from './database.ts'
import { LITEFS_STALL_AFTER_MS, WATCH_MAIN_POSITION, WATCH_POSITION } from './litefs-watch.ts'
import type { ReadAnswer, ReadRequest, ReadTag } from './read-thread-worker.ts'
import { commitsOffMain, onCommitNoted, stalledError, storageStall, writeHold } from './storage-stall.ts'

/**
 * How long a read waits for the read thread once the storage is known to be stalled, before it is
 * answered 503 `unavailable` (Retry-After: 1). While litefs answers, a read waits as long as it
 * takes, as any read did on the main thread. 40 ms keeps the answer within issue 34's 100 ms.
 */
export const READ_STALL_WAIT_MS = 40
/** Read threads: two, so one keeps its snapshot while the other is caught in a renewal (read-thread-worker.ts). */
export const READ_THREADS = 2
/** A renewal takes a few tenths of a millisecond; one under way for longer suggests litefs stopped. */
export const READ_SUSPECT_AFTER_MS = 5
/** A snapshot left unused is renewed this often, so it never holds the WAL back for long. */
export const READ_IDLE_REFRESH_MS = 200
/**
 * How often the primary starts its write-ahead log afresh. A snapshot held keeps every frame after
 * it in the log, and SQLite starts the log again from its beginning only when every frame is in
 * the database file and no reader's snapshot needs the log. Without this the `-wal` file grew by
 * about 2 MB a second at 90 commits a second (bench/wal-held-snapshot.ts). Each cycle: the threads
 * renew their snapshots one at a time and the checkpointer copies the log (writes flowing); then,
 * with this process's queued writes held (`writeHold`), the same again, which leaves the whole log
 * copied and the threads' new snapshots reading the database file alone; the next write starts the
 * log afresh. One thread renews at a time, so a stall that begins during a cycle still finds a
 * snapshot held, current since nothing committed (decision 048). The hold lasts a few milliseconds,
 * WAL_HOLD_MAX_MS at most.
 */
export const WAL_CYCLE_MS = 2_000
/** The longest the cycle holds writes: past it the cycle gives up and tries again at the next. */
export const WAL_HOLD_MAX_MS = 100
/** How long the cycle's part with writes flowing waits for a renewal or the checkpoint. */
const WAL_CYCLE_WAIT_MS = 250
/** A request as a caller gives it: the thread's id and tag are added here. */
type Unasked = ReadRequest extends infer R ? (R extends ReadRequest ? Omit<R, 'id' | 'tag'> : never) : never

/** How often the main thread publishes its change count for the read thread's idle renewals. */
const PUBLISH_TAG_MS = 25

export type OffThreadReads = {
  /** The key's identity, null when it is unknown or revoked: `apiKeys.authenticate`, read on the thread. */
  authenticate(secret: string): Promise<ApiKeyIdentity | null>
  /** A history page as the route sends it, null when the organisation has no such chat. */
  historyPage(orgId: string, chatId: string, query: HistoryPageQuery): Promise<string | null>
  /** Starts the threads now rather than at the first read (under LiteFS, where a stall may come before it). */
  warm(): void
  /** How many answers came from a snapshot held through a stall (for the log and the tests' curiosity). */
  servedFromHeldSnapshot(): number
  stop(): Promise<void>
}

/**
 * The read thread (docs/decisions/048-stalled-litefs.md): history pages and the key lookup in front
 * of them are read on a thread with its own read-only connection, so a read transaction that waits
 * on litefs (its lock on the `-shm` file goes through FUSE) never waits on the event loop. See
 * read-thread-worker.ts for when a snapshot is renewed and when a held one may answer.
 *
 * `mainDb` is the server's connection as it is now (it changes with LiteFS roles): its change count
 * (`SELECT total_changes()`, which touches no file) tags what the main thread has written.
 * `watchShared` is the LiteFS watcher's shared state (null without LiteFS: never stalled).
 */
export function startReadThread(
  file: string,
  mainDb: () => Db,
  isPrimary: () => boolean,
  watchShared: SharedArrayBuffer | null,
  /** The checkpointer's `checkpointNow` while this node checkpoints (the primary), else null. */
  checkpointNow: () => Promise<boolean> | null = () => null,
  /** The WAL cycle's longest write hold (WAL_HOLD_MAX_MS unless told: tests on a loaded machine give it room). */
  holdMaxMs: number = WAL_HOLD_MAX_MS,
  /** How long the cycle's part with writes flowing waits (WAL_CYCLE_WAIT_MS unless told, as holdMaxMs). */
  cycleWaitMs: number = WAL_CYCLE_WAIT_MS,
): OffThreadReads {
  // [0] the main connection's generation, [1] its change count, [2] the LiteFS position, [3] 1 on the primary.
  const tagShared = new SharedArrayBuffer(4 * BigInt64Array.BYTES_PER_ELEMENT)
  const tagState = new BigInt64Array(tagShared)
  const watch = watchShared ? new BigInt64Array(watchShared) : null
  let generation = 0
  let lastDb: Db | null = null
  let changesOf: { db: Db; statement: { get(): unknown } } | null = null

  const tag = (): ReadTag => {
    const db = mainDb()
    if (db !== lastDb) {
      lastDb = db
      generation++
      changesOf = null
    }
    let changes = 0
    if (db.open) {
      changesOf ??= { db, statement: db.prepare('SELECT total_changes()').pluck() }
      changes = Number(changesOf.statement.get())
    }
    const position = watch ? (Atomics.load(watch, WATCH_POSITION) > Atomics.load(watch, WATCH_MAIN_POSITION) ? Atomics.load(watch, WATCH_POSITION) : Atomics.load(watch, WATCH_MAIN_POSITION)) : 0n
    const now: ReadTag = { generation, changes: changes + commitsOffMain(), position: String(position) }
    Atomics.store(tagState, 0, BigInt(now.generation))
    Atomics.store(tagState, 1, BigInt(now.changes))
    Atomics.store(tagState, 2, position)
    Atomics.store(tagState, 3, isPrimary() ? 1n : 0n)
    return now
  }
  tag()
  const publish = setInterval(() => {
    try {
      tag()
    } catch {}
  }, PUBLISH_TAG_MS)
  publish.unref()

  const refreshingShared = new SharedArrayBuffer(READ_THREADS * BigInt64Array.BYTES_PER_ELEMENT)
  const busyShared = new SharedArrayBuffer(READ_THREADS * BigInt64Array.BYTES_PER_ELEMENT)
  const busy = new BigInt64Array(busyShared)
  let nextId = 1
  let servedHeld = 0
  let dead: Error | null = null
  type Job = { resolve: (value: unknown) => void; reject: (error: unknown) => void }
  type Thread = { worker: Worker; waiting: Map<number, Job>; outstanding: Set<number>; onRenewed: ((renewed: boolean) => void) | null }
  let threads: Thread[] = []
  // Started at the first read, not at boot: each thread loads TypeScript (tsx) and the store's
  // modules, CPU a process that never serves history (most tests' servers) need not spend.
  const startThreads = () => Array.from({ length: READ_THREADS }, (_, index): Thread => {
    const worker = new Worker(new URL('./read-thread-entry.mjs', import.meta.url), {
      workerData: {
        file,
        watchShared,
        tagShared,
        refreshingShared,
        busyShared,
        index,
        stallAfterMs: LITEFS_STALL_AFTER_MS,
        idleRefreshMs: READ_IDLE_REFRESH_MS,
        suspectAfterMs: READ_SUSPECT_AFTER_MS,
      },
      // None of the main thread's loaders: the entry registers tsx itself.
      execArgv: [],
    })
    worker.unref()
    const waiting = new Map<number, Job>()
    /** Requests sent and not answered yet, those given up on included: a thread caught in litefs keeps them. */
    const outstanding = new Set<number>()
    const thread: Thread = { worker, waiting, outstanding, onRenewed: null }
    worker.on('message', (answer: ReadAnswer | { renewed: boolean }) => {
      if ('renewed' in answer) {
        thread.onRenewed?.(answer.renewed)
        return
      }
      outstanding.delete(answer.id)
      const job = waiting.get(answer.id)
      if (!job) return
      waiting.delete(answer.id)
      if (answer.ok) {
        if (answer.fromHeldSnapshot) servedHeld++
        job.resolve(answer.value)
      } else if (answer.stale) job.reject(stalledError())
      else job.reject(new Error(answer.message))
    })
    const failAll = (error: Error) => {
      dead = error
      for (const t of threads) {
        for (const job of t.waiting.values()) job.reject(error)
        t.waiting.clear()
      }
    }
    worker.on('error', (error) => failAll(error))
    worker.on('exit', (code) => failAll(new Error(`a read thread ended (exit code ${code})`)))
    return thread
  })
  const within = <T>(promise: Promise<T>, fallback: T, ms: number) =>
    Promise.race([promise, new Promise<T>((resolve) => setTimeout(() => resolve(fallback), Math.max(0, ms)).unref())])
  /** Renewals one after another: a thread has one renewal in flight at a time (its onRenewed). */
  let renewals: Promise<unknown> = Promise.resolve()
  const serially = <T>(work: () => Promise<T>): Promise<T> => {
    const done = renewals.then(work, work)
    renewals = done.catch(() => undefined)
    return done
  }
  /** Each thread in turn takes a snapshot at the log's end, the other keeping its own meanwhile. */
  const renewEach = (deadline: number) => serially(() => renewEachNow(deadline))
  async function renewEachNow(deadline: number): Promise<boolean> {
    tag()
    for (const t of threads) {
      const renewed = await within(new Promise<boolean>((resolve) => {
        t.onRenewed = resolve
        t.worker.postMessage('renew')
      }), false, deadline - Date.now())
      t.onRenewed = null
      if (!renewed || storageStall.stalled()) return false
    }
    return true
  }
  let cycling = false
  /** The WAL cycle (WAL_CYCLE_MS). */
  async function walCycle() {
    if (cycling || threads.length === 0 || !isPrimary() || storageStall.stalled()) return
    cycling = true
    let release: (() => void) | null = null
    try {
      // Writes flowing: most of the log is copied here, so little is left for the hold.
      if (!(await renewEach(Date.now() + cycleWaitMs))) return
      const flowing = checkpointNow()
      if (flowing === null) return
      await within(flowing, false, cycleWaitMs)
      // Writes held: the rest of the log, then snapshots that need none of it.
      release = writeHold.take()
      const deadline = Date.now() + holdMaxMs
      if (!(await renewEach(deadline))) return
      const held = checkpointNow()
      if (held === null || !(await within(held, false, deadline - Date.now()))) return
      await renewEach(deadline)
    } finally {
      release?.()
      cycling = false
    }
  }
  const cycle = setInterval(() => void walCycle(), WAL_CYCLE_MS)
  cycle.unref()

  // Under LiteFS, a commit of this process is followed at once by snapshots past it (one thread at a
  // time, once per turn of the loop however many commits it made): a snapshot a request or an idle
  // tick old would miss a commit made just before litefs stops (a lease renewal, say), and every
  // history read during the stop would answer 503 (decision 048).
  let renewAfterCommit = false
  if (watch) {
    onCommitNoted(() => {
      if (renewAfterCommit || threads.length === 0) return
      renewAfterCommit = true
      setImmediate(() => {
        renewAfterCommit = false
        if (!cycling && isPrimary() && !storageStall.stalled()) void renewEach(Date.now() + WAL_CYCLE_WAIT_MS)
      })
    })
  }

  let turn = 0
  /** The thread with the fewest requests unanswered (one caught in litefs keeps its own), in turn among equals. */
  const pick = () => {
    if (threads.length === 0) threads = startThreads()
    turn = (turn + 1) % threads.length
    let best = threads[turn]!
    for (const t of threads) if (t.outstanding.size < best.outstanding.size) best = t
    return best
  }

  function ask<T>(request: Unasked): Promise<T> {
    if (dead) return Promise.reject(dead)
    return new Promise<T>((resolve, reject) => send(request, pick(), resolve as (value: unknown) => void, reject, true))
  }

  /**
   * Sends a request to `thread`. While the thread is stuck in a call litefs does not answer (a
   * renewal begun just as litefs stopped, before the watcher could say so), the request is taken
   * back after READ_STALL_WAIT_MS of a known stall and asked once of another thread not in a call,
   * whose held snapshot may answer it; otherwise it is answered 503. A late answer of the stuck
   * thread is dropped. A thread that is not in a call (only slow to be scheduled, on a busy machine)
   * is waited for.
   */
  function send(request: Unasked, thread: Thread, resolve: (value: unknown) => void, reject: (error: unknown) => void, mayMove: boolean): void {
    const id = nextId++
    let watchdog: NodeJS.Timeout | null = null
    const done = () => {
      if (watchdog) clearInterval(watchdog)
    }
    thread.waiting.set(id, {
      resolve: (value) => {
        done()
        resolve(value)
      },
      reject: (error) => {
        done()
        reject(error)
      },
    })
    if (watch) {
      const askedAt = Date.now()
      const index = threads.indexOf(thread)
      watchdog = setInterval(() => {
        const now = Date.now()
        const inCallSince = Number(Atomics.load(busy, index))
        if (!storageStall.stalled() || now - askedAt < READ_STALL_WAIT_MS || inCallSince === 0 || now - inCallSince < READ_STALL_WAIT_MS) return
        if (!thread.waiting.delete(id)) return
        done()
        const other = mayMove ? threads.find((t, i) => t !== thread && Atomics.load(busy, i) === 0n) : undefined
        if (other) send(request, other, resolve, reject, false)
        else reject(stalledError())
      }, 10)
    }
    thread.outstanding.add(id)
    thread.worker.postMessage({ ...request, id, tag: tag() })
  }

  return {
    authenticate: (secret) => ask<ApiKeyIdentity | null>({ op: 'authenticate', secret }),
    historyPage: (orgId, chatId, query) => ask<string | null>({ op: 'historyPage', orgId, chatId, query }),
    warm() {
      if (threads.length === 0) threads = startThreads()
    },
    servedFromHeldSnapshot: () => servedHeld,
    async stop() {
      clearInterval(publish)
      clearInterval(cycle)
      if (watch) onCommitNoted(null)
      if (threads.length === 0) return
      const ended = Promise.all(threads.map((t) => new Promise<void>((resolve) => t.worker.once('exit', () => resolve()))))
      for (const t of threads) t.worker.postMessage('stop')
      await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, 1_000).unref())])
    },
  }
}
