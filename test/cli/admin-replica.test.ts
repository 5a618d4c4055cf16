import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { AdminError, runAdminCommand } from '../../src/cli/admin-commands.ts'
import { runAdminOn } from '../../src/cli/admin-run.ts'
import { openDatabase } from '../../src/store/database.ts'
import { createStore } from '../../src/store/index.ts'
import { migrations } from '../../src/store/migrations/index.ts'
import { readSettings } from '../../src/settings.ts'

/**
 * The admin CLI on a LiteFS node. The role comes from the mount's `.primary` file, as the server
 * reads it (test/store/replication-role.test.ts): written, this node is a replica. The commands
 * that only read run there, over a read-only connection; those that write refuse, naming the primary.
 */

const READING: string[][] = [
  ['org', 'list'],
  ['org', 'show', 'acme'],
  ['key', 'list', '--org', 'acme'],
  ['balance', 'history', '--org', 'acme', '--json'],
  ['runs', '--org', 'acme'],
  ['usage', '--org', 'acme', '--from', '2026-11-26', '--to', '2026-11-27'],
]
const WRITING: string[][] = [
  ['org', 'create', '--name', 'Other'],
  ['org', 'set-markup', '--org', 'acme', '--percent', '5'],
  ['key', 'create', '--org', 'acme'],
  ['key', 'revoke', '--id', 'no-such-key'],
  ['balance', 'add', '--org', 'acme', '--amount', '1'],
  ['session', 'create', '--org', 'acme'],
  ['update', 'publish', '--kind', 'release', '--title', 't', '--body', 'b'],
]

let dir: string
let settings: ReturnType<typeof readSettings>

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'parley-admin-replica-'))
  settings = readSettings({ LITEFS_DIR: dir, DATA_DIR: dir })
  const db = openDatabase(settings.databaseFile)
  const store = createStore(db)
  runAdminCommand(store, ['org', 'create', '--name', 'Acme', '--slug', 'acme'])
  runAdminCommand(store, ['balance', 'add', '--org', 'acme', '--amount', '12.50'])
  db.close()
})
afterEach(() => rmSync(dir, { recursive: true, force: true }))

const becomeReplica = () => writeFileSync(settings.litefs!.primaryFile, 'primary.internal:8080\n')
const orgCount = () => {
  const db = openDatabase(settings.databaseFile, { replica: true })
  try {
    return (db.prepare('SELECT count(*) AS n FROM organisations').get() as { n: number }).n
  } finally {
    db.close()
  }
}

function refusal(argv: string[]): unknown {
  try {
    runAdminOn(settings, argv)
  } catch (error) {
    return error
  }
  return null
}

describe('the admin CLI on a LiteFS replica', () => {
  it('the commands that only read run there', () => {
    becomeReplica()
    for (const argv of READING) expect(() => runAdminOn(settings, argv), argv.join(' ')).not.toThrow()
    expect(JSON.parse(runAdminOn(settings, ['org', 'list']))).toMatchObject({ data: [{ slug: 'acme', balance: expect.stringMatching(/^12\.50*$/) }] })
    expect(runAdminOn(settings, ['key', 'list', '--org', 'acme'])).toBeTypeOf('string')
  })

  it('the commands that write refuse, naming the primary, and write nothing', () => {
    becomeReplica()
    for (const argv of WRITING) {
      const error = refusal(argv)
      expect(error, argv.join(' ')).toBeInstanceOf(AdminError)
      expect((error as Error).message).toBe('this node is a LiteFS read replica and cannot write; run the command on the primary (the primary is http://primary.internal:8080)')
    }
    expect(orgCount()).toBe(1)
  })

  it('a replica that knows no primary (an empty .primary) says so, and still reads', () => {
    writeFileSync(settings.litefs!.primaryFile, '')
    expect((refusal(['org', 'create', '--name', 'X']) as Error).message).toMatch(/cannot write; .*no primary is known yet/)
    expect(JSON.parse(runAdminOn(settings, ['org', 'show', 'acme']))).toMatchObject({ slug: 'acme' })
  })

  it('reads over a read-only connection: a replica behind the build is not migrated by the CLI', () => {
    rmSync(settings.databaseFile)
    const db = openDatabase(settings.databaseFile, { migrations: migrations.slice(0, -1) })
    db.close()
    becomeReplica()
    try {
      runAdminOn(settings, ['org', 'list'])
    } catch {
      // Whether the older schema answers this read does not matter here; that nothing was written does.
    }
    const after = openDatabase(settings.databaseFile, { replica: true })
    expect(after.pragma('user_version', { simple: true })).toBe(migrations.length - 1)
    after.close()
  })

  it('on the primary (no .primary file) every command runs, as before', () => {
    expect(JSON.parse(runAdminOn(settings, ['org', 'create', '--name', 'Other']))).toMatchObject({ slug: 'other' })
    expect(JSON.parse(runAdminOn(settings, ['org', 'list'])).data).toHaveLength(2)
  })

  it('an unknown command is named as unknown, not refused as a write', () => {
    becomeReplica()
    expect((refusal(['frobnicate']) as Error).message).toMatch(/^unknown command "frobnicate"/)
  })
})
