import { DatabaseUnavailableError } from '../domain/errors.ts'

/**
 * What a SQLite failure means for the caller (docs/decisions/028-busy-and-full-database.md):
 * - `busy`: another connection holds the lock this statement needs (the admin CLI, a LiteFS
 *   transaction or checkpoint); the same write will very likely succeed in a moment.
 * - `full`: the disk (or `max_page_count`) has no room; the statement was undone, the file is intact.
 * - `readonly`: this node cannot write right now: a read-only file or connection (a LiteFS replica,
 *   a primary being demoted), an I/O error (LiteFS refuses a replica's write with EACCES, which SQLite
 *   reports as SQLITE_IOERR_*), or a journal it cannot open.
 * - `corrupt`: the file is damaged; nothing a retry cures.
 * - `other`: everything else (a constraint, a misuse, a bug): not the database's condition.
 */
export type SqliteErrorKind = 'busy' | 'full' | 'readonly' | 'corrupt' | 'other'

/** Classifies an SQLite result code, primary (`SQLITE_BUSY`) or extended (`SQLITE_BUSY_SNAPSHOT`). */
export function classifySqliteCode(code: string): SqliteErrorKind {
  const primary = /^SQLITE_[A-Z]+/.exec(code)?.[0]
  switch (primary) {
    case 'SQLITE_BUSY':
    // The WAL-index locking protocol lost a race with another connection: transient, like a busy lock.
    case 'SQLITE_PROTOCOL':
      return 'busy'
    case 'SQLITE_FULL':
      return 'full'
    case 'SQLITE_READONLY':
    case 'SQLITE_IOERR':
    case 'SQLITE_CANTOPEN':
    case 'SQLITE_PERM':
      return 'readonly'
    case 'SQLITE_CORRUPT':
    case 'SQLITE_NOTADB':
      return 'corrupt'
    default:
      return 'other'
  }
}

/** The SQLite result code an error carries (better-sqlite3's SqliteError `code`), or null for any other error. */
export function sqliteCodeOf(error: unknown): string | null {
  const code = (error as { code?: unknown } | null)?.code
  return error instanceof Error && typeof code === 'string' && code.startsWith('SQLITE_') ? code : null
}

/** How a thrown error classifies, or null when it is not an SQLite error. */
export function sqliteErrorKind(error: unknown): SqliteErrorKind | null {
  const code = sqliteCodeOf(error)
  return code === null ? null : classifySqliteCode(code)
}

/** Retry-After of each condition: a lock is held for moments, a disk fills for longer. */
export const RETRY_AFTER_SECONDS = { busy: 1, full: 60, readonly: 2 } as const

/**
 * The domain error a caller should get for an SQLite failure of the database's condition (busy,
 * full, read-only): 503 `unavailable` with `Retry-After` and a hint. Null for anything else
 * (corruption, constraints, bugs), which stays the fault it is. The original is the `cause`.
 */
export function databaseErrorOf(error: unknown, options: { retryAfterSeconds?: number } = {}): DatabaseUnavailableError | null {
  if (error instanceof DatabaseUnavailableError) return error
  const code = sqliteCodeOf(error)
  if (code === null) return null
  const kind = classifySqliteCode(code)
  switch (kind) {
    case 'busy':
      return new DatabaseUnavailableError(
        'the database is busy: another process holds its write lock; nothing was written',
        'database_busy',
        options.retryAfterSeconds ?? RETRY_AFTER_SECONDS.busy,
        'retry after the Retry-After delay; the lock is usually held for moments',
        { cause: error },
      )
    case 'full':
      return new DatabaseUnavailableError(
        "the server's storage is full; nothing was written",
        'storage_full',
        options.retryAfterSeconds ?? RETRY_AFTER_SECONDS.full,
        'retry later; reads still work, and the operator must free disk space for writes to resume',
        { cause: error },
      )
    case 'readonly':
      return cannotWriteError(error, options.retryAfterSeconds)
    case 'corrupt':
    case 'other':
      return null
    default: {
      const unknownKind: never = kind
      throw new Error(`unknown SQLite error kind ${String(unknownKind)}`)
    }
  }
}

/**
 * 503 `read_only`: this node cannot write right now: its database refused the write (read-only,
 * I/O error, journal not opened), or the connection was closed under it, as a LiteFS demotion does.
 */
export function cannotWriteError(cause: unknown, retryAfterSeconds: number = RETRY_AFTER_SECONDS.readonly): DatabaseUnavailableError {
  return new DatabaseUnavailableError(
    'this node cannot write right now (its database is read-only or refused the write, as during a change of primary); nothing was written',
    'read_only',
    retryAfterSeconds,
    'retry in a few seconds; the write will go to the primary once it is known',
    { cause },
  )
}
