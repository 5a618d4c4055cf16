import { readFileSync } from 'node:fs'
import { Worker } from 'node:worker_threads'
import { formatTxid, parsePosition, waitForPosition, type ReplicationPosition } from './replication-position.ts'
import { roleFrom, type ReplicationRole, type ReplicationRoleSource } from './replication-role.ts'
import type { StorageStall } from './storage-stall.ts'

/** How often the watcher's thread looks at LiteFS's files (docs/decisions/048-stalled-litefs.md). */
export const LITEFS_WATCH_INTERVAL_MS = 20
/**
 * A look at the mount unanswered for this long means litefs is stalled. A look is three small
 * reads that litefs answers in tens of microseconds; 40 ms is far beyond a busy machine's
 * scheduling delay, and short enough that the main thread seldom enters SQLite in the moments
 * between litefs stopping and the watcher saying so.
 */
export const LITEFS_STALL_AFTER_MS = 40

export type LitefsFiles = { primaryFile: string; lagFile: string; positionFile: string }

/** Index of each value in the shared state (a BigInt64Array over `shared`). */
export const WATCH_LOOK_BEGAN = 0
export const WATCH_LOOK_ENDED = 1
export const WATCH_POSITION = 2
/** The highest TXID the main thread itself read from the `-pos` file (a write's answer names it). */
export const WATCH_MAIN_POSITION = 3
export const WATCH_SLOTS = 4

/** Stalled, from the shared state: a look under way for longer than `afterMs`. Any thread may ask. */
export function stalledFrom(state: BigInt64Array, afterMs: number, now = Date.now()): number {
  const began = Number(Atomics.load(state, WATCH_LOOK_BEGAN))
  if (began === 0) return 0
  const waited = now - began
  return waited > afterMs ? waited : 0
}

export type LitefsWatch = StorageStall & {
  /** The shared state, for other threads (the read thread) to see a stall themselves. */
  shared: SharedArrayBuffer
  /** The node's role as last read: never touches the mount. */
  role: ReplicationRoleSource
  /** The node's LiteFS position as last read: never touches the mount. */
  position: ReplicationPosition
  stop(): void
}

/**
 * Watches LiteFS from a thread of its own (src/store/litefs-watch-thread.mjs), so that the main
 * thread never reads the mount: the role (`.primary`, `.lag`) and the position (`-pos`) it serves
 * come from the watcher's last look, and a look that litefs leaves unanswered is the stall every
 * thread can see. The position is read from the file directly while litefs answers (a write's
 * answer must name its own commit's TXID), the watcher's last look only during a stall.
 * `initial` is the role main read itself at start, before anything was served.
 */
export function startLitefsWatch(
  files: LitefsFiles,
  primaryPort: number,
  initial: ReplicationRole,
  options: { intervalMs?: number; stallAfterMs?: number } = {},
): LitefsWatch {
  const intervalMs = options.intervalMs ?? LITEFS_WATCH_INTERVAL_MS
  const stallAfterMs = options.stallAfterMs ?? LITEFS_STALL_AFTER_MS
  const shared = new SharedArrayBuffer(WATCH_SLOTS * BigInt64Array.BYTES_PER_ELEMENT)
  const state = new BigInt64Array(shared)
  Atomics.store(state, WATCH_POSITION, -1n)
  Atomics.store(state, WATCH_MAIN_POSITION, -1n)
  let known: ReplicationRole = initial
  const worker = new Worker(new URL('./litefs-watch-thread.mjs', import.meta.url), {
    workerData: { ...files, intervalMs, shared },
    // Plain JavaScript: none of the main thread's loaders.
    execArgv: [],
  })
  worker.on('message', (seen: { primary: string | null; lag: string | null }) => {
    known = roleFrom(seen.primary, primaryPort, seen.lag)
  })
  worker.on('error', (error) => process.stderr.write(`LiteFS watcher failed: ${error.message}\n`))
  worker.unref()

  // A write's answer names the position its commit reached (decision 009), so while litefs answers
  // the file is read now, as before; only during a stall is the watcher's last look served.
  const stalledForMs = () => stalledFrom(state, stallAfterMs)
  const currentPosition = () => {
    if (stalledForMs() === 0) {
      const read = readPosition(files.positionFile)
      if (read !== undefined) {
        if (read !== null && read > Atomics.load(state, WATCH_MAIN_POSITION)) Atomics.store(state, WATCH_MAIN_POSITION, read)
        return read
      }
    }
    const watched = Atomics.load(state, WATCH_POSITION)
    const mine = Atomics.load(state, WATCH_MAIN_POSITION)
    const txid = watched > mine ? watched : mine
    return txid < 0n ? null : txid
  }
  return {
    shared,
    stalled: () => stalledForMs() > 0,
    stalledForMs,
    role: { exclusiveWriter: true, current: () => known },
    position: {
      current: currentPosition,
      waitFor: (txid, timeoutMs) => waitForPosition(currentPosition, txid, timeoutMs),
    },
    stop() {
      worker.postMessage('stop')
      void worker.terminate()
    },
  }
}

/** The `-pos` file's TXID; null when there is none; undefined when it could not be read. */
function readPosition(file: string): bigint | null | undefined {
  try {
    return parsePosition(readFileSync(file, 'utf8'))
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT' ? null : undefined
  }
}

export { formatTxid }
