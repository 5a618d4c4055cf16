import Database from 'better-sqlite3'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { migrate, openDatabase } from '../../src/store/database.ts'
import { createStore } from '../../src/store/index.ts'
import { migrations, type Migration } from '../../src/store/migrations/index.ts'

let dir: string
let file: string

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'parley-migrations-'))
  file = join(dir, 'nested', 'parley.db')
})
afterEach(() => {
  rmSync(dir, { recursive: true, force: true })
})

const userVersion = (db: Database.Database) => db.pragma('user_version', { simple: true }) as number
const tableNames = (db: Database.Database) =>
  (db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name").all() as { name: string }[]).map((r) => r.name)

describe('openDatabase', () => {
  it('creates the file and its directory, applies every migration and records user_version', () => {
    const db = openDatabase(file)
    try {
      expect(migrations.length).toBeGreaterThan(0)
      expect(userVersion(db)).toBe(migrations.length)
      expect(tableNames(db)).toEqual(expect.arrayContaining(['api_keys', 'balance_entries', 'chats', 'console_sessions', 'organisations', 'parts', 'platform_updates']))
    } finally {
      db.close()
    }
  })

  it('sets WAL, foreign keys and a busy timeout', () => {
    const db = openDatabase(file)
    try {
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal')
      expect(db.pragma('foreign_keys', { simple: true })).toBe(1)
      expect(db.pragma('busy_timeout', { simple: true })).toBeGreaterThan(0)
    } finally {
      db.close()
    }
  })

  it('is idempotent on reopen: nothing is re-applied and data survives', () => {
    const first = openDatabase(file)
    const org = createStore(first).organisations.create('Acme', 'acme')
    const schema = first.prepare('SELECT type, name, sql FROM sqlite_schema ORDER BY name').all()
    first.close()

    const second = openDatabase(file)
    try {
      expect(userVersion(second)).toBe(migrations.length)
      expect(second.prepare('SELECT type, name, sql FROM sqlite_schema ORDER BY name').all()).toEqual(schema)
      expect(createStore(second).organisations.get(org.id)).toEqual(org)
    } finally {
      second.close()
    }
  })

  it('refuses a database newer than the build', () => {
    const db = openDatabase(file)
    db.pragma(`user_version = ${migrations.length + 1}`)
    db.close()
    expect(() => openDatabase(file)).toThrow(/newer/)
  })

  it('makes every table STRICT', () => {
    const db = openDatabase(file)
    try {
      const tables = (db.pragma('table_list') as { schema: string; name: string; type: string; strict: number }[]).filter(
        (t) => t.schema === 'main' && t.type === 'table' && !t.name.startsWith('sqlite_'),
      )
      expect(tables.length).toBeGreaterThanOrEqual(7)
      for (const table of tables) expect(table.strict, table.name).toBe(1)
      // STRICT in practice: a value of the wrong type is refused, not stored as is.
      expect(() =>
        db.prepare("INSERT INTO organisations (id, name, slug, created_at) VALUES ('x', 'n', 's', ?)").run(Buffer.from('blob')),
      ).toThrow(/cannot store BLOB value in TEXT column/)
    } finally {
      db.close()
    }
  })
})

describe('migrate', () => {
  it('applies only pending migrations, in order, each with its own user_version', () => {
    const db = new Database(':memory:')
    const applied: string[] = []
    const list: Migration[] = [
      { name: 'one', up: (d) => { applied.push('one'); d.exec('CREATE TABLE a (x INTEGER) STRICT') } },
      { name: 'two', up: (d) => { applied.push('two'); d.exec('CREATE TABLE b (x INTEGER) STRICT') } },
    ]
    migrate(db, list.slice(0, 1))
    expect(userVersion(db)).toBe(1)
    migrate(db, list)
    expect(userVersion(db)).toBe(2)
    migrate(db, list)
    expect(applied).toEqual(['one', 'two'])
    db.close()
  })

  it('rolls a failing migration back whole, leaving user_version at the last good one', () => {
    const db = new Database(':memory:')
    const list: Migration[] = [
      { name: 'good', up: (d) => d.exec('CREATE TABLE good (x INTEGER) STRICT') },
      {
        name: 'bad',
        up: (d) => {
          d.exec('CREATE TABLE half_done (x INTEGER) STRICT')
          throw new Error('boom')
        },
      },
    ]
    expect(() => migrate(db, list)).toThrow('boom')
    expect(userVersion(db)).toBe(1)
    expect(tableNames(db)).toEqual(['good'])
    db.close()
  })
})
