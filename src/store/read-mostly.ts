import type { Db } from './database.ts'

// Taken once at load, as the write queue does: fake timers in tests must not keep a kept row forever.
const nextCheckPhase = globalThis.setImmediate

/** Keys kept per lookup at most; past it the lookup starts afresh (unknown API keys are kept too, as misses). */
const MAX_KEPT = 10_000

export type KeptLookup<K, V> = {
  get(key: K): V
  /** This connection wrote what the lookup keeps: it reads afresh from now on. */
  forget(): void
}

/**
 * Rows read on every turn and written rarely (API keys, organisations, token corrections, the
 * catalogue's latest version), kept in memory between turns (issue 34: fewer statements per turn).
 * What a lookup keeps is good until this connection writes its rows (the store module calls
 * `forget`) or another connection commits anything (the admin CLI; LiteFS replicating the primary's
 * commits to a replica): SQLite's `PRAGMA data_version` moves then, and every lookup starts afresh.
 * It is read at most once per turn of the event loop: within one turn, a commit elsewhere is seen
 * as if it had come just after it.
 */
export function createReadMostly(db: Db) {
  const dataVersion = db.prepare<[], number>('PRAGMA data_version').pluck()
  const lookups: Map<unknown, unknown>[] = []
  let seenVersion: number | null = null
  let checkedThisTurn = false
  const uncheck = () => {
    checkedThisTurn = false
  }
  const checkDataVersion = () => {
    if (checkedThisTurn) return
    checkedThisTurn = true
    nextCheckPhase(uncheck)
    const version = dataVersion.get()!
    if (version === seenVersion) return
    seenVersion = version
    for (const kept of lookups) kept.clear()
  }
  return {
    lookup<K, V>(read: (key: K) => V): KeptLookup<K, V> {
      const kept = new Map<K, V>()
      lookups.push(kept as Map<unknown, unknown>)
      return {
        get(key) {
          // Inside a transaction it may see its own uncommitted writes, which a rollback would undo: not kept.
          if (db.inTransaction) return read(key)
          checkDataVersion()
          if (kept.has(key)) return kept.get(key)!
          const value = read(key)
          if (kept.size >= MAX_KEPT) kept.clear()
          kept.set(key, value)
          return value
        },
        forget: () => kept.clear(),
      }
    },
  }
}
export type ReadMostly = ReturnType<typeof createReadMostly>
