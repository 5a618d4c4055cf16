import { randomUUID } from 'node:crypto'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { AdminError, adminHelp, runAdminCommand } from '../../src/cli/admin-commands.ts'
import { runAdminOn } from '../../src/cli/admin-run.ts'
import { readSettings } from '../../src/settings.ts'
import Database from 'better-sqlite3'
import { openDatabase } from '../../src/store/database.ts'
import { runAdmin } from '../e2e/server-process.ts'
import { countRows, expectError } from '../helpers/http.ts'
import { createTestApp, type TestContext } from '../helpers/test-app.ts'

let ctx: TestContext

beforeEach(async () => {
  ctx = await createTestApp()
})
afterEach(async () => {
  await ctx.close()
})

/** Runs a command the way the CLI does and returns what it would print, parsed back. */
function run(...argv: string[]): Record<string, unknown> {
  const result = runAdminCommand(ctx.store, argv)
  const printed = JSON.stringify(result)
  const parsed = JSON.parse(printed)
  expect(typeof parsed).toBe('object')
  expect(Array.isArray(parsed)).toBe(false)
  return parsed
}

function fails(argv: string[], message?: RegExp) {
  let caught: unknown
  try {
    runAdminCommand(ctx.store, argv)
  } catch (error) {
    caught = error
  }
  expect(caught, argv.join(' ')).toBeInstanceOf(AdminError)
  if (message) expect((caught as Error).message).toMatch(message)
}

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const newOrg = (slug = 'acme') => run('org', 'create', '--name', 'Acme Corp', '--slug', slug) as { id: string }

describe('org create', () => {
  it('prints {id, name, slug}, deriving the slug from the name', () => {
    const org = run('org', 'create', '--name', 'Acme Corp')
    expect(Object.keys(org).sort()).toEqual(['id', 'name', 'slug'])
    expect(org).toMatchObject({ name: 'Acme Corp', slug: 'acme-corp' })
    expect(ctx.store.organisations.get(org.id as string)).toMatchObject({ name: 'Acme Corp', slug: 'acme-corp' })
  })

  it('takes an explicit slug', () => {
    expect(run('org', 'create', '--name', 'Acme Corp', '--slug', 'acme')).toMatchObject({ slug: 'acme' })
  })

  it('refuses a bad slug, a duplicate slug, a missing name and a name with nothing to slug', () => {
    newOrg('acme')
    fails(['org', 'create', '--name', 'X', '--slug', 'Bad Slug'], /slug/)
    fails(['org', 'create', '--name', 'X', '--slug', '-leading'], /slug/)
    fails(['org', 'create', '--name', 'X', '--slug', 'acme'], /acme/)
    fails(['org', 'create'], /--name/)
    fails(['org', 'create', '--name', '!!!'], /slug/)
    expect(countRows(ctx.store, 'organisations')).toBe(1)
  })
})

describe('org set-markup', () => {
  it('prints the organisation with markup_percent', () => {
    const org = newOrg()
    const printed = run('org', 'set-markup', '--org', org.id, '--percent', '7.5')
    expect(printed).toMatchObject({ id: org.id, name: 'Acme Corp', slug: 'acme', markup_percent: '7.5' })
    expect(ctx.store.organisations.get(org.id)!.markup_percent).toBe('7.5')
  })

  it('refuses an unknown organisation and a bad or negative percent', () => {
    const org = newOrg()
    fails(['org', 'set-markup', '--org', randomUUID(), '--percent', '5'], /organisation/)
    fails(['org', 'set-markup', '--org', org.id, '--percent', 'lots'], /percent/)
    fails(['org', 'set-markup', '--org', org.id, '--percent', '-1'], /percent/)
    expect(ctx.store.organisations.get(org.id)!.markup_percent).toBeNull()
  })
})

describe('key create and key revoke', () => {
  it('prints {id, key}; the key works over HTTP until revoked, then gets 401', async () => {
    const org = newOrg()
    const created = run('key', 'create', '--org', org.id, '--name', 'ci')
    expect(Object.keys(created).sort()).toEqual(['id', 'key'])
    expect(created.key).toMatch(/^pk_[A-Za-z0-9_-]{43}$/)
    const auth = { authorization: `Bearer ${created.key as string}` }
    expect((await ctx.app.inject({ url: '/api/v1/chats', headers: auth })).statusCode).toBe(200)

    const revoked = run('key', 'revoke', '--id', created.id as string)
    expect(Object.keys(revoked).sort()).toEqual(['id', 'revoked_at'])
    expect(revoked.id).toBe(created.id)
    expect(revoked.revoked_at).toMatch(ISO)
    expectError(await ctx.app.inject({ url: '/api/v1/chats', headers: auth }), 401, 'unauthorized')
  })

  it('refuses an unknown organisation or key', () => {
    fails(['key', 'create', '--org', randomUUID()], /organisation/)
    fails(['key', 'revoke', '--id', randomUUID()], /key/)
    fails(['key', 'revoke'], /--id/)
    expect(countRows(ctx.store, 'api_keys')).toBe(0)
  })
})

describe('balance add', () => {
  it('prints the entry and the new balance, exactly', () => {
    const org = newOrg()
    const first = run('balance', 'add', '--org', org.id, '--amount', '12.50')
    expect(first).toEqual({
      entry: { id: expect.any(String), org_id: org.id, entry_type: 'topup', amount: '12.50', currency: 'USD', occurred_at: expect.stringMatching(ISO) },
      balance: '12.50',
    })
    expect(run('balance', 'add', '--org', org.id, '--amount', '0.1', '--type', 'refund')).toMatchObject({ balance: '12.60' })
    expect(run('balance', 'add', '--org', org.id, '--amount', '0.2', '--type', 'promotional_credit')).toMatchObject({ balance: '12.80' })
    expect(run('balance', 'add', '--org', org.id, '--amount', '-2.8', '--type', 'adjustment')).toMatchObject({
      entry: { entry_type: 'adjustment', amount: '-2.80' },
      balance: '10.00',
    })
    expect(run('balance', 'add', '--org', org.id, '--amount=-0.5', '--type', 'adjustment')).toMatchObject({ balance: '9.50' })
    expect(run('balance', 'add', '--org', org.id, '--amount', '0.0000000001')).toMatchObject({ balance: '9.5000000001' })
  })

  it('refuses bad amounts, negative credits, zero, unknown types and unknown organisations, writing nothing', () => {
    const org = newOrg()
    fails(['balance', 'add', '--org', org.id, '--amount', 'abc'], /amount/)
    fails(['balance', 'add', '--org', org.id, '--amount', '1.00000000001'], /amount/)
    fails(['balance', 'add', '--org', org.id, '--amount', '1e3'], /amount/)
    fails(['balance', 'add', '--org', org.id, '--amount', '0'], /zero/)
    fails(['balance', 'add', '--org', org.id, '--amount', '-5'], /positive/)
    fails(['balance', 'add', '--org', org.id, '--amount', '-5', '--type', 'topup'], /positive/)
    fails(['balance', 'add', '--org', org.id, '--amount', '-5', '--type', 'refund'], /positive/)
    fails(['balance', 'add', '--org', org.id, '--amount', '-5', '--type', 'promotional_credit'], /positive/)
    fails(['balance', 'add', '--org', org.id, '--amount', '5', '--type', 'usage'], /type/)
    fails(['balance', 'add', '--org', org.id], /--amount/)
    fails(['balance', 'add', '--org', randomUUID(), '--amount', '5'], /organisation/)
    expect(countRows(ctx.store, 'balance_entries')).toBe(0)
    expect(ctx.store.balance.balanceOf(org.id)).toBe('0.00')
  })
})

describe('session create', () => {
  it('prints a token for a console session of the organisation', async () => {
    const org = newOrg()
    ctx.store.organisations.setMarkup(org.id, '10')
    const session = run('session', 'create', '--org', org.id)
    expect(session.token).toMatch(/^cs_/)
    expect(ctx.store.consoleSessions.organisationOf(session.token as string)).toBe(org.id)
    const catalogue = await ctx.app.inject({ url: '/v1/catalogue', headers: { cookie: `console_session=${session.token as string}` } })
    expect(catalogue.json()).toMatchObject({ markup_percent: '10', organisation_specific: true })
  })

  it('refuses an unknown organisation', () => {
    fails(['session', 'create', '--org', randomUUID()], /organisation/)
    expect(countRows(ctx.store, 'console_sessions')).toBe(0)
  })
})

describe('update publish', () => {
  it('prints the update, which the public feed then serves', async () => {
    const update = run('update', 'publish', '--kind', 'release', '--title', 'v1.1', '--body', 'Faster history', '--important', '--version', '1.1.0')
    expect(update).toEqual({
      id: expect.any(String),
      kind: 'release',
      title: 'v1.1',
      body: 'Faster history',
      important: true,
      version: '1.1.0',
      published_at: expect.stringMatching(ISO),
    })
    const plain = run('update', 'publish', '--kind', 'notice', '--title', 'Hi', '--body', 'B')
    expect(plain).toMatchObject({ important: false, version: null })
    const feed = (await ctx.app.inject({ url: '/api/v1/updates' })).json()
    expect(feed.map((u: { id: string }) => u.id).sort()).toEqual([update.id, plain.id].sort())
  })

  it('refuses an unknown kind and missing fields', () => {
    fails(['update', 'publish', '--kind', 'party', '--title', 'T', '--body', 'B'], /kind/)
    fails(['update', 'publish', '--kind', 'notice', '--body', 'B'], /--title/)
    fails(['update', 'publish', '--kind', 'notice', '--title', 'T'], /--body/)
    expect(countRows(ctx.store, 'platform_updates')).toBe(0)
  })
})

describe('command line', () => {
  it('refuses unknown commands and unknown options', () => {
    fails([], /unknown command/)
    fails(['frobnicate'], /unknown command/)
    fails(['org'], /unknown command/)
    fails(['org', 'delete', '--id', 'x'], /unknown command/)
    fails(['org', 'create', '--name', 'A', '--colour', 'blue'])
    fails(['org', 'create', '--name', 'A', 'stray-positional'])
    expect(countRows(ctx.store, 'organisations')).toBe(0)
  })
})

describe('org list and org show', () => {
  it('org list prints every organisation with its balance, oldest first', () => {
    expect(run('org', 'list')).toEqual({ data: [] })
    const acme = newOrg('acme')
    run('balance', 'add', '--org', acme.id, '--amount', '2.50')
    const beta = newOrg('beta')
    const listed = run('org', 'list') as { data: Record<string, unknown>[] }
    expect(listed.data.map((o) => o.id)).toEqual([acme.id, beta.id])
    expect(listed.data[0]).toMatchObject({ id: acme.id, name: 'Acme Corp', slug: 'acme', markup_percent: null, balance: '2.50' })
    expect(listed.data[0]!.created_at).toMatch(ISO)
    expect(listed.data[1]).toMatchObject({ slug: 'beta', balance: '0.00' })
  })

  it('org show takes the id or the slug, as the argument or as --org', () => {
    const acme = newOrg('acme')
    const byId = run('org', 'show', acme.id)
    expect(byId).toMatchObject({ id: acme.id, slug: 'acme', balance: '0.00' })
    expect(run('org', 'show', 'acme')).toEqual(byId)
    expect(run('org', 'show', '--org', 'acme')).toEqual(byId)
  })

  it('org show refuses an unknown organisation, none, or two', () => {
    newOrg('acme')
    fails(['org', 'show', 'nope'], /no organisation with id or slug "nope"/)
    fails(['org', 'show'], /--org is required/)
    fails(['org', 'show', 'acme', '--org', 'acme'], /once/)
    fails(['org', 'show', 'acme', 'extra'], /unexpected argument "extra"/)
  })
})

describe('slugs wherever an organisation id goes', () => {
  it('--org takes the slug in set-markup, key create, balance add and session create', async () => {
    const acme = newOrg('acme')
    expect(run('org', 'set-markup', '--org', 'acme', '--percent', '5')).toMatchObject({ id: acme.id, markup_percent: '5' })
    const key = run('key', 'create', '--org', 'acme') as { key: string }
    expect(ctx.store.apiKeys.authenticate(key.key)?.orgId).toBe(acme.id)
    run('balance', 'add', '--org', 'acme', '--amount', '1.25')
    expect(ctx.store.balance.balanceOf(acme.id)).toBe('1.25')
    expect(run('session', 'create', '--org', 'acme')).toHaveProperty('token')
    fails(['key', 'create', '--org', 'no-such-slug'], /no organisation with id or slug "no-such-slug"/)
  })
})

describe('help', () => {
  const EVERY_COMMAND: Record<string, string[]> = {
    'org create': ['--name', '--slug'],
    'org list': [],
    'org show': ['--org'],
    'org set-markup': ['--org', '--percent'],
    'key create': ['--org', '--name'],
    'key list': ['--org', '--json'],
    'key revoke': ['--id'],
    'balance add': ['--org', '--amount', '--type'],
    'balance history': ['--org', '--from', '--to', '--limit', '--json'],
    runs: ['--org', '--status', '--limit', '--json'],
    usage: ['--org', '--from', '--to', '--bin', '--group-by', '--namespace', '--json'],
    'session create': ['--org'],
    'update publish': ['--kind', '--title', '--body', '--important', '--version'],
  }

  it('help, --help and -h give the same text: every command with every flag', () => {
    const text = adminHelp(['help'])!
    expect(adminHelp(['--help'])).toBe(text)
    expect(adminHelp(['-h'])).toBe(text)
    for (const [command, flags] of Object.entries(EVERY_COMMAND)) {
      const line = text.split('\n').find((l) => l.startsWith(`  ${command}`))
      expect(line, command).toBeDefined()
      for (const flag of flags) expect(line, `${command} ${flag}`).toContain(flag)
    }
    expect(text).toMatch(/^ {2}help \[<command>\]$/m)
  })

  it('<command> --help shows that command alone; no help asked, none given', () => {
    const one = adminHelp(['balance', 'add', '--help'])!
    expect(one).toMatch(/^usage: npm run -s admin -- balance add --org <id\|slug> --amount <usd>/)
    expect(one).not.toContain('org create')
    expect(adminHelp(['org', 'list'])).toBeNull()
    expect(adminHelp([])).toBeNull()
  })

  it('an unknown command names itself and shows the usage', () => {
    fails(['frobnicate'], /unknown command "frobnicate"\nusage:/)
  })

  it('help for an unknown command names it and the commands there are, instead of the whole usage', () => {
    for (const argv of [['help', 'nosuchcommand'], ['nosuchcommand', '--help'], ['-h', 'org', 'frob', '--json']]) {
      let caught: unknown
      try {
        adminHelp(argv)
      } catch (error) {
        caught = error
      }
      expect(caught, argv.join(' ')).toBeInstanceOf(AdminError)
      const message = (caught as Error).message
      expect(message).toMatch(/^unknown command "(nosuchcommand|org frob)"; the commands are org create, org list, /)
      for (const command of Object.keys(EVERY_COMMAND)) expect(message).toContain(command)
      expect(message).toContain('`help`')
    }
    expect(adminHelp(['help', 'runs'])).toMatch(/^usage: npm run -s admin -- runs --org/)
  })
})

describe('the admin process', () => {
  it('help, --help and -h exit 0 with the usage on stdout; an unknown command, or help for one, exits 1 on stderr', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'parley-admin-'))
    try {
      for (const word of ['help', '--help', '-h']) {
        const result = await runAdmin(dataDir, [word])
        expect(result, word).toMatchObject({ code: 0, stderr: '' })
        expect(result.stdout).toContain('org list')
      }
      const unknown = await runAdmin(dataDir, ['frobnicate'])
      expect(unknown.code).toBe(1)
      expect(unknown.stdout).toBe('')
      expect(unknown.stderr).toMatch(/^admin: unknown command "frobnicate"/)
      const unknownHelp = await runAdmin(dataDir, ['help', 'nosuchcommand'])
      expect(unknownHelp).toMatchObject({ code: 1, stdout: '' })
      expect(unknownHelp.stderr).toMatch(/^admin: unknown command "nosuchcommand"; the commands are .*`help`/)
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
  }, 60_000)
})

/** Issue 38: only the server creates a database; an admin command pointed at a DATA_DIR without one refuses and creates nothing. */
describe('a DATA_DIR that holds no Parley database', () => {
  const NO_DATABASE = /^admin: there is no Parley database at .*parley\.db; check DATA_DIR \(admin commands .* never create one: start the server once to create it\)\n$/

  it('admin key list on a mistyped DATA_DIR exits 1 with a clear message and creates nothing, not even the directory', async () => {
    const parent = mkdtempSync(join(tmpdir(), 'parley-admin-nodb-'))
    const mistyped = join(parent, 'dta')
    try {
      const result = await runAdmin(mistyped, ['key', 'list', '--org', 'dev'])
      expect(result.code).toBe(1)
      expect(result.stdout).toBe('')
      expect(result.stderr).toMatch(NO_DATABASE)
      expect(result.stderr).toContain(join(mistyped, 'parley.db'))
      expect(existsSync(mistyped)).toBe(false)
      expect(readdirSync(parent)).toEqual([])
    } finally {
      rmSync(parent, { recursive: true, force: true })
    }
  }, 60_000)

  it('every command refuses an empty directory, a command that writes too, leaving it empty', () => {
    const dir = mkdtempSync(join(tmpdir(), 'parley-admin-empty-'))
    try {
      const settings = readSettings({ DATA_DIR: dir })
      for (const argv of [['key', 'list', '--org', 'dev'], ['org', 'list'], ['org', 'create', '--name', 'Acme']]) {
        expect(() => runAdminOn(settings, argv), argv.join(' ')).toThrow(AdminError)
        expect(() => runAdminOn(settings, argv), argv.join(' ')).toThrow(/^there is no Parley database at /)
      }
      expect(readdirSync(dir)).toEqual([])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('refuses a parley.db that is not a Parley database (another file, an empty SQLite file) and leaves it as it was', () => {
    const dir = mkdtempSync(join(tmpdir(), 'parley-admin-other-'))
    try {
      const settings = readSettings({ DATA_DIR: dir })
      writeFileSync(settings.databaseFile, 'not a database\n')
      expect(() => runAdminOn(settings, ['org', 'list'])).toThrow(/ is not a Parley database; check DATA_DIR/)
      expect(readFileSync(settings.databaseFile, 'utf8')).toBe('not a database\n')
      rmSync(settings.databaseFile)
      new Database(settings.databaseFile).close()
      expect(() => runAdminOn(settings, ['org', 'create', '--name', 'Acme'])).toThrow(/ is not a Parley database; check DATA_DIR/)
      const db = new Database(settings.databaseFile, { readonly: true })
      expect(db.prepare("SELECT count(*) AS n FROM sqlite_master").get()).toEqual({ n: 0 })
      db.close()
      expect(readdirSync(dir)).toEqual(['parley.db'])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('works once the server made one (here the database module, as the server opens it)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'parley-admin-made-'))
    try {
      const settings = readSettings({ DATA_DIR: dir })
      openDatabase(settings.databaseFile).close()
      expect(JSON.parse(runAdminOn(settings, ['org', 'list']))).toEqual({ data: [] })
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
