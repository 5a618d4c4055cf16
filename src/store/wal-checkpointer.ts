import { Worker } from 'node:worker_threads'

/**
 * How many pages of write-ahead log the server's own connection lets grow before it checkpoints
 * on the event loop. The checkpointer's thread normally copies the log long before that (every
 * CHECKPOINT_INTERVAL_MS); this is the backstop should that thread fall behind or die, sized to
 * hold a few of the largest turns (a 20 MiB attachment is about 5,000 pages of 4 KiB).
 */
export const SERVER_AUTOCHECKPOINT_PAGES = 20_000

/** How often the checkpointer's thread copies the log into the database file. */
export const CHECKPOINT_INTERVAL_MS = 250

export type WalCheckpointer = {
  /** Checkpoints now; true when every frame of the log is in the database file (none held back by a reader). */
  checkpointNow(): Promise<boolean>
  /** Copies what is left once more, closes the thread's connection and ends the thread. */
  stop(): Promise<void>
}

/**
 * Checkpoints the primary's database on a thread of its own (docs/decisions/034-body-work-off-the-event-loop.md):
 * SQLite's automatic checkpoint runs inside the commit that crosses the threshold, which put 30 to
 * 60 ms of copying a large attachment back into the database file on the event loop. Only the
 * primary writes and checkpoints; a replica's copy is LiteFS's to manage.
 */
export function startWalCheckpointer(
  file: string,
  onFailure: (message: string) => void,
  intervalMs: number = CHECKPOINT_INTERVAL_MS,
): WalCheckpointer {
  const worker = new Worker(new URL('./wal-checkpointer-worker.mjs', import.meta.url), {
    workerData: { file, intervalMs },
    // Plain JavaScript: none of the main thread's loaders (tsx, a test's recorder), which a fresh
    // checkout's worker could fail to resolve.
    execArgv: [],
  })
  let nextId = 1
  const asked = new Map<number, (complete: boolean) => void>()
  worker.on('message', (message: { kind: 'failed'; message: string } | { kind: 'checkpointed'; id: number; complete: boolean }) => {
    if (message.kind === 'failed') return onFailure(message.message)
    asked.get(message.id)?.(message.complete)
    asked.delete(message.id)
  })
  worker.on('error', (error) => onFailure(error.message))
  // The server may end while the thread ticks; the backstop covers a thread that is gone.
  worker.unref()
  const ended = new Promise<void>((resolve) => worker.once('exit', () => resolve()))
  return {
    checkpointNow() {
      const id = nextId++
      return new Promise<boolean>((resolve) => {
        asked.set(id, resolve)
        worker.postMessage({ kind: 'checkpoint-now', id })
      })
    },
    stop() {
      worker.postMessage('stop')
      return ended
    },
  }
}
