import Database from 'better-sqlite3'
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { migrations, type Migration } from './migrations/index.ts'

export type Db = Database.Database

/**
 * Opens (creating if needed) the database file, sets the pragmas and applies pending migrations.
 * A LiteFS replica (`replica: true`) only reads its copy: the primary creates the file, sets the
 * journal mode and migrates, and replication brings all of it.
 */
export function openDatabase(file: string, options: { migrations?: Migration[]; replica?: boolean } = {}): Db {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true })
  // LiteFS keeps a replica's file read-only; opening it so makes a stray write fail here, loudly.
  const db = new Database(file, options.replica ? { readonly: true, fileMustExist: true } : {})
  if (!options.replica) db.pragma('journal_mode = WAL')
  db.pragma('synchronous = NORMAL')
  db.pragma('foreign_keys = ON')
  // The admin CLI writes while the server runs: wait for the lock instead of failing.
  db.pragma('busy_timeout = 5000')
  if (!options.replica) migrate(db, options.migrations ?? migrations)
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
