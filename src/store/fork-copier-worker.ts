// The fork copier's thread (src/store/fork-copier.ts): each job opens its own connection to the
// database file, copies the fork in one transaction (src/store/fork-chat.ts) and closes it, so a
// long copy holds this thread, never the server's event loop.
import Database from 'better-sqlite3'
import { parentPort } from 'node:worker_threads'
import { createForkStore, type NewFork } from './fork-chat.ts'
import { WRITE_BUSY_BUDGET_MS } from './write-queue.ts'

export type ForkJob = { id: number; file: string; now: string; input: NewFork }
export type ForkJobResult =
  | { id: number; ok: true; row: unknown }
  | { id: number; ok: false; message: string; code: string | null }

parentPort!.on('message', (job: ForkJob) => {
  let db: Database.Database | null = null
  try {
    db = new Database(job.file, { fileMustExist: true })
    // Nobody waits on this thread's event loop: it may wait for the server's commits as long as
    // the turn path's writes wait for a lock (docs/decisions/028-busy-and-full-database.md).
    db.pragma(`busy_timeout = ${WRITE_BUSY_BUDGET_MS}`)
    db.pragma('foreign_keys = ON')
    db.pragma('synchronous = NORMAL')
    const row = createForkStore(db, () => new Date(job.now)).fork(job.input)
    parentPort!.postMessage({ id: job.id, ok: true, row } satisfies ForkJobResult)
  } catch (error) {
    const code = (error as { code?: unknown }).code
    parentPort!.postMessage({
      id: job.id,
      ok: false,
      message: error instanceof Error ? error.message : String(error),
      code: typeof code === 'string' ? code : null,
    } satisfies ForkJobResult)
  } finally {
    db?.close()
  }
})
