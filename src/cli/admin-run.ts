import { existsSync } from 'node:fs'
import { CLI_BUSY_TIMEOUT_MS, openDatabase, schemaVersionOf } from '../store/database.ts'
import { createStore } from '../store/index.ts'
import { litefsRole } from '../store/replication-role.ts'
import type { Settings } from '../settings.ts'
import { AdminError, adminCommandReadsOnly, adminOutput } from './admin-commands.ts'

/**
 * Runs one admin command on this node's database and returns what it prints. Only the LiteFS
 * primary may write (decision 009): a command that writes refuses on a replica, naming the primary,
 * before opening anything. A command that only reads runs there too, over a read-only connection
 * that neither migrates nor sets the journal mode (LiteFS keeps a replica's file read-only and
 * brings the schema). On the primary, and without LiteFS, every command opens the database as
 * before, migrated if need be. Only the server creates a database: a DATA_DIR that holds none is
 * refused before anything is opened, so a mistyped one is not left with an empty database.
 */
export function runAdminOn(settings: Pick<Settings, 'databaseFile' | 'litefs'>, argv: string[]): string {
  const readsOnly = adminCommandReadsOnly(argv)
  const role = settings.litefs ? litefsRole(settings.litefs.primaryFile, settings.litefs.lagFile, settings.litefs.primaryPort).current() : { kind: 'primary' as const }
  const replica = role.kind !== 'primary'
  if (replica && !readsOnly) {
    const where = role.kind === 'replica' ? `the primary is ${role.primaryUrl}` : 'no primary is known yet'
    throw new AdminError(`this node is a LiteFS read replica and cannot write; run the command on the primary (${where})`)
  }
  requireParleyDatabase(settings)
  const db = openDatabase(settings.databaseFile, { busyTimeoutMs: CLI_BUSY_TIMEOUT_MS, replica })
  try {
    return adminOutput(createStore(db), argv)
  } finally {
    db.close()
  }
}

/**
 * Refuses, creating nothing, a data directory that holds no Parley database (issue 38): no file
 * there, or a file that is not a database the server made (no schema version). A mistyped DATA_DIR
 * used to get a new empty database and answer `{"data":[]}`, as though the organisations were gone.
 */
export function requireParleyDatabase(settings: Pick<Settings, 'databaseFile' | 'litefs'>): void {
  const version = schemaVersionOf(settings.databaseFile)
  if (version !== null && version > 0) return
  const variable = settings.litefs ? 'LITEFS_DIR' : 'DATA_DIR'
  const what = existsSync(settings.databaseFile) ? `${settings.databaseFile} is not a Parley database` : `there is no Parley database at ${settings.databaseFile}`
  throw new AdminError(
    `${what}; check ${variable} (admin commands work on the database the server made there, and never create one: start the server once to create it)`,
  )
}
