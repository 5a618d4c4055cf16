import { Worker } from 'node:worker_threads'
import type { ChatRow } from './chats.ts'
import type { NewFork } from './fork-chat.ts'
import type { ForkJob, ForkJobResult } from './fork-copier-worker.ts'
import { databaseErrorOf } from './sqlite-errors.ts'
import { noteCommitOffMainConnection } from './storage-stall.ts'

/** A thread with no fork to copy for this long ends; the next fork starts another. */
export const FORK_COPIER_IDLE_MS = 30_000

export type ForkCopier = {
  /** Copies the fork on the copier's thread, in one transaction; null when the organisation has no such source chat. */
  copy(file: string, input: NewFork, now: Date): Promise<ChatRow | null>
  /** Ends the thread (forks still copying are refused). */
  stop(): Promise<void>
}

type Waiting = { resolve: (row: ChatRow | null) => void; reject: (error: unknown) => void }

/**
 * Copies forks on a thread of their own (docs/decisions/037-fork.md): a fork is one INSERT … SELECT
 * transaction whose length grows with the source's (about half a second for 100,000 parts), which
 * on the server's connection would hold the event loop, and every request with it, that long. On
 * the thread, with its own connection, it holds only SQLite's write lock: the turn path's writes
 * wait for it asynchronously (docs/decisions/028-busy-and-full-database.md) and reads go on.
 *
 * Each copy names its database file (the store's connection changes with LiteFS roles), so one
 * thread serves every store of the process: `forkCopier`.
 */
export function createForkCopier(): ForkCopier {
  let worker: Worker | null = null
  let idle: ReturnType<typeof setTimeout> | null = null
  let nextId = 1
  const waiting = new Map<number, Waiting>()

  const failAll = (error: unknown) => {
    for (const job of waiting.values()) job.reject(error)
    waiting.clear()
  }

  function start(): Worker {
    // None of the main thread's loaders (tsx, a test runner's) come along: the thread registers tsx itself.
    const thread = new Worker(new URL('./fork-copier-thread.mjs', import.meta.url), { execArgv: [] })
    thread.on('message', (result: ForkJobResult) => {
      const job = waiting.get(result.id)
      if (!job) return
      waiting.delete(result.id)
      if (result.ok) {
        // Committed on the copier's connection: the read thread's snapshot must not be taken for current (decision 048).
        noteCommitOffMainConnection()
        job.resolve(result.row as ChatRow | null)
      }
      else {
        const error = Object.assign(new Error(result.message), result.code === null ? {} : { code: result.code })
        job.reject(databaseErrorOf(error) ?? error)
      }
      if (waiting.size === 0) idle = setTimeout(() => void stop(), FORK_COPIER_IDLE_MS).unref()
    })
    thread.on('error', (error) => failAll(error))
    thread.on('exit', (code) => {
      if (worker === thread) worker = null
      failAll(new Error(`the fork copier's thread ended (exit code ${code})`))
    })
    // An idle thread must not keep the process alive.
    thread.unref()
    return thread
  }

  function stop(): Promise<void> {
    if (idle) clearTimeout(idle)
    idle = null
    const thread = worker
    worker = null
    return thread ? thread.terminate().then(() => undefined) : Promise.resolve()
  }

  return {
    copy(file, input, now) {
      if (idle) clearTimeout(idle)
      idle = null
      worker ??= start()
      const id = nextId++
      const job: ForkJob = { id, file, now: now.toISOString(), input }
      return new Promise<ChatRow | null>((resolve, reject) => {
        waiting.set(id, { resolve, reject })
        worker!.postMessage(job)
      })
    },
    stop,
  }
}

/** The process's fork copier: its thread starts with the first fork and ends when idle. */
export const forkCopier = createForkCopier()
