import { randomUUID } from 'node:crypto'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { AdminError, runAdminCommand } from '../../src/cli/admin-commands.ts'
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
