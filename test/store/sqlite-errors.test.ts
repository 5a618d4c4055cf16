import Database from 'better-sqlite3'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { DatabaseUnavailableError, UnavailableError } from '../../src/domain/errors.ts'
import { classifySqliteCode, databaseErrorOf, RETRY_AFTER_SECONDS, sqliteErrorKind } from '../../src/store/sqlite-errors.ts'

/** docs/decisions/028-busy-and-full-database.md: what each SQLite failure means for a caller. */

describe('classifySqliteCode', () => {
  it.each([
    ['SQLITE_BUSY', 'busy'],
    ['SQLITE_BUSY_SNAPSHOT', 'busy'],
    ['SQLITE_BUSY_RECOVERY', 'busy'],
    ['SQLITE_BUSY_TIMEOUT', 'busy'],
    ['SQLITE_PROTOCOL', 'busy'],
    ['SQLITE_FULL', 'full'],
    ['SQLITE_READONLY', 'readonly'],
    ['SQLITE_READONLY_DBMOVED', 'readonly'],
    ['SQLITE_READONLY_RECOVERY', 'readonly'],
    ['SQLITE_READONLY_CANTINIT', 'readonly'],
    ['SQLITE_IOERR', 'readonly'],
    ['SQLITE_IOERR_WRITE', 'readonly'],
    ['SQLITE_IOERR_FSYNC', 'readonly'],
    ['SQLITE_IOERR_SHMOPEN', 'readonly'],
    ['SQLITE_CANTOPEN', 'readonly'],
    ['SQLITE_PERM', 'readonly'],
    ['SQLITE_CORRUPT', 'corrupt'],
    ['SQLITE_CORRUPT_INDEX', 'corrupt'],
    ['SQLITE_NOTADB', 'corrupt'],
    ['SQLITE_CONSTRAINT_UNIQUE', 'other'],
    ['SQLITE_CONSTRAINT_FOREIGNKEY', 'other'],
    ['SQLITE_ERROR', 'other'],
    ['SQLITE_MISUSE', 'other'],
    ['SQLITE_LOCKED', 'other'],
    ['SQLITE_NOMEM', 'other'],
    // Prefixes must be whole words: SQLITE_FULLY is no SQLITE_FULL.
    ['SQLITE_FULLY', 'other'],
    ['SQLITE_BUSYNESS', 'other'],
  ])('%s is %s', (code, kind) => {
    expect(classifySqliteCode(code)).toBe(kind)
  })

  it('reads only SQLite errors: anything without an SQLITE_ code is not classified', () => {
    expect(sqliteErrorKind(new Error('SQLITE_FULL: database or disk is full'))).toBeNull()
    expect(sqliteErrorKind(Object.assign(new Error('no space'), { code: 'ENOSPC' }))).toBeNull()
    expect(sqliteErrorKind({ code: 'SQLITE_BUSY' })).toBeNull()
    expect(sqliteErrorKind(null)).toBeNull()
    expect(sqliteErrorKind(new Database.SqliteError('database is locked', 'SQLITE_BUSY'))).toBe('busy')
  })
})

describe('databaseErrorOf', () => {
  it('turns busy, full and read-only into a 503 unavailable with a reason, a hint and a Retry-After', () => {
    const cases = [
      ['SQLITE_BUSY', 'database_busy', RETRY_AFTER_SECONDS.busy],
      ['SQLITE_FULL', 'storage_full', RETRY_AFTER_SECONDS.full],
      ['SQLITE_READONLY', 'read_only', RETRY_AFTER_SECONDS.readonly],
      ['SQLITE_IOERR_WRITE', 'read_only', RETRY_AFTER_SECONDS.readonly],
      ['SQLITE_CANTOPEN', 'read_only', RETRY_AFTER_SECONDS.readonly],
    ] as const
    for (const [code, reason, retryAfter] of cases) {
      const sqlite = new Database.SqliteError('from sqlite', code)
      const error = databaseErrorOf(sqlite)
      expect(error, code).toBeInstanceOf(DatabaseUnavailableError)
      expect(error).toBeInstanceOf(UnavailableError)
      expect(error).toMatchObject({ code: 'unavailable', reason, retryAfterSeconds: retryAfter, details: { reason } })
      expect(error!.hint).toMatch(/retry/)
      expect(error!.cause).toBe(sqlite)
      // No internals in the message.
      expect(error!.message).not.toMatch(/SQLITE|from sqlite/)
    }
    expect(databaseErrorOf(new Database.SqliteError('x', 'SQLITE_BUSY'), { retryAfterSeconds: 7 })!.retryAfterSeconds).toBe(7)
  })

  it('leaves corruption, constraints and non-SQLite errors alone (they stay 500s or their own errors)', () => {
    expect(databaseErrorOf(new Database.SqliteError('x', 'SQLITE_CORRUPT'))).toBeNull()
    expect(databaseErrorOf(new Database.SqliteError('x', 'SQLITE_CONSTRAINT_UNIQUE'))).toBeNull()
    expect(databaseErrorOf(new Error('boom'))).toBeNull()
  })

  it('passes a DatabaseUnavailableError through unchanged', () => {
    const error = databaseErrorOf(new Database.SqliteError('x', 'SQLITE_FULL'))!
    expect(databaseErrorOf(error)).toBe(error)
  })
})

describe('the codes better-sqlite3 really throws', () => {
  let dir: string
  let file: string
  const open: Database.Database[] = []
  const connect = (options?: Database.Options) => {
    const db = new Database(file, options)
    open.push(db)
    return db
  }
  const thrown = (f: () => unknown): unknown => {
    try {
      f()
    } catch (error) {
      return error
    }
    throw new Error('expected a throw')
  }

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'parley-sqlite-errors-'))
    file = join(dir, 'db.sqlite')
    const db = connect()
    db.pragma('journal_mode = WAL')
    db.exec('CREATE TABLE t (x TEXT)')
  })
  afterEach(() => {
    for (const db of open.splice(0)) if (db.open) db.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('a write lock held by another connection: busy', () => {
    const holder = connect()
    holder.exec('BEGIN IMMEDIATE')
    const writer = connect({ timeout: 0 })
    expect(sqliteErrorKind(thrown(() => writer.exec('BEGIN IMMEDIATE')))).toBe('busy')
    expect(sqliteErrorKind(thrown(() => writer.prepare('INSERT INTO t VALUES (1)').run()))).toBe('busy')
    // Reads are not refused (WAL).
    expect(writer.prepare('SELECT count(*) AS n FROM t').get()).toEqual({ n: 0 })
    holder.exec('ROLLBACK')
  })

  it('no room left (max_page_count): full', () => {
    const db = connect()
    db.pragma(`max_page_count = ${db.pragma('page_count', { simple: true }) as number}`)
    expect(sqliteErrorKind(thrown(() => db.prepare('INSERT INTO t VALUES (?)').run('x'.repeat(100_000))))).toBe('full')
  })

  it('a read-only connection: readonly', () => {
    const db = connect({ readonly: true })
    expect(sqliteErrorKind(thrown(() => db.prepare('INSERT INTO t VALUES (1)').run()))).toBe('readonly')
  })

  it('a file that is not a database: corrupt', () => {
    const junk = join(dir, 'junk.sqlite')
    writeFileSync(junk, 'this is not a database file, not at all; '.repeat(200))
    const db = new Database(junk)
    open.push(db)
    expect(sqliteErrorKind(thrown(() => db.prepare('SELECT * FROM sqlite_master').all()))).toBe('corrupt')
  })
})
