import Database from 'better-sqlite3'
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { migrations, type Migration } from './migrations/index.ts'

export type Db = Database.Database

/**
 * How long one statement of the server's connection waits, synchronously and so on the event loop,
 * for a lock held by another process (the admin CLI, a LiteFS transaction or checkpoint) before it
 * fails with SQLITE_BUSY. Small on purpose (docs/decisions/028-busy-and-full-database.md): it
 * absorbs a lock held for moments and bounds how long a busy database can stall every request;
 * longer waits are asynchronous (the write queue's retries) or a 503 with Retry-After.
 */
export const SERVER_BUSY_TIMEOUT_MS = 20

/** Opening, setting the journal mode and migrating may wait this long: nothing is served yet. */
export const STARTUP_BUSY_TIMEOUT_MS = 5_000

/** A separate process (the admin CLI) may block as long as it likes: it waits this long for the lock. */
export const CLI_BUSY_TIMEOUT_MS = 10_000

export type OpenOptions = {
  migrations?: Migration[]
  replica?: boolean
  /** The connection's busy_timeout once open and migrated: SERVER_BUSY_TIMEOUT_MS unless told. */
  busyTimeoutMs?: number
  /**
   * Pages of write-ahead log after which a commit on this connection checkpoints (SQLite's
   * default, 1,000, unless told). The server raises it when a thread of its own checkpoints
   * (src/store/wal-checkpointer.ts).
   */
  autocheckpointPages?: number
}

/**
 * Opens (creating if needed) the database file, sets the pragmas and applies pending migrations.
 * A LiteFS replica (`replica: true`) only reads its copy: the primary creates the file, sets the
 * journal mode and migrates, and replication brings all of it.
 */
export function openDatabase(file: string, options: OpenOptions = {}): Db {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true })
  // LiteFS keeps a replica's file read-only; opening it so makes a stray write fail here, loudly.
  // Until it is migrated the connection waits for a lock as long as STARTUP_BUSY_TIMEOUT_MS.
  const db = new Database(file, { timeout: STARTUP_BUSY_TIMEOUT_MS, ...(options.replica ? { readonly: true, fileMustExist: true } : {}) })
  if (!options.replica) db.pragma('journal_mode = WAL')
  db.pragma('synchronous = NORMAL')
  db.pragma('foreign_keys = ON')
  if (!options.replica) migrate(db, options.migrations ?? migrations)
  if (options.autocheckpointPages !== undefined) db.pragma(`wal_autocheckpoint = ${options.autocheckpointPages}`)
  // The admin CLI writes while the server runs, and LiteFS takes the lock to apply and checkpoint:
  // the server's statements wait for it only briefly (see SERVER_BUSY_TIMEOUT_MS).
  db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? SERVER_BUSY_TIMEOUT_MS}`)
  return db
}

/** Each pending migration runs in its own transaction together with its `user_version` bump. */
export function migrate(db: Db, list: Migration[]): void {
  const current = db.pragma('user_version', { simple: true }) as number
  if (current > list.length) {
    throw new Error(`database schema version ${current} is newer than this build knows (${list.length})`)
  }
  for (let version = current; version < list.length; version++) {
    const migration = list[version]!
    db.transaction(() => {
      migration.up(db)
      db.pragma(`user_version = ${version + 1}`)
    }).immediate()
  }
}

/**
 * The service's clock (issue 12: one clock). The store dates what it writes by the clock it was
 * made with (createStore's `now`), the same one the actors read as deps.now; the wall clock when none is given.
 */
export type Clock = () => Date
export const wallClock: Clock = () => new Date()

/**
 * The schema version (`user_version`) of a database file, read on a connection of its own; null
 * when the file is not there or cannot be read yet. A LiteFS replica starting beside a primary that
 * is still creating or migrating the database waits until this reaches the build's migrations.
 */
export function schemaVersionOf(file: string): number | null {
  try {
    const db = new Database(file, { readonly: true, fileMustExist: true })
    try {
      return db.pragma('user_version', { simple: true }) as number
    } finally {
      db.close()
    }
  } catch {
    return null
  }
}
