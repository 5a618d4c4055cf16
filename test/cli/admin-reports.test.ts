import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { AdminError, adminHelp, adminOutput, runAdminCommand } from '../../src/cli/admin-commands.ts'
import { unitsToMoney } from '../../src/domain/money.ts'
import { openDatabase } from '../../src/store/database.ts'
import { createStore } from '../../src/store/index.ts'
import { runAdmin } from '../e2e/server-process.ts'
import { createTestApp, type TestContext, type TestOrg } from '../helpers/test-app.ts'
import { newChat, prompt, sandboxCatalogue, turn, type Turn } from '../helpers/turns.ts'

/*
 * The operator's read commands (issue 23, item 6): key list, runs, usage and balance history, over a
 * real SQLite file, with runs made by real turns on the sandbox model and credits added by the store.
 * The clock moves a minute per step so that every run and entry has its own time.
 */

let clock: Date
let ctx: TestContext
let acme: TestOrg
let other: TestOrg

const tick = () => {
  clock = new Date(clock.getTime() + 60_000)
}

beforeEach(async () => {
  clock = new Date('2026-11-26T09:10:00.000Z')
  ctx = await createTestApp({ catalogue: sandboxCatalogue(), now: () => clock })
  acme = ctx.org('acme')
  other = ctx.org('other')
})
afterEach(async () => {
  await ctx.close()
})

type Json = Record<string, any>

/** What the command prints with --json, parsed back. */
function json(...argv: string[]): Json {
  return JSON.parse(adminOutput(ctx.store, [...argv, '--json']))
}

/** What the command prints for a person. */
const table = (...argv: string[]) => adminOutput(ctx.store, argv)

function fails(argv: string[], message: RegExp) {
  let caught: unknown
  try {
    adminOutput(ctx.store, argv)
  } catch (error) {
    caught = error
  }
  expect(caught, argv.join(' ')).toBeInstanceOf(AdminError)
  expect((caught as Error).message).toMatch(message)
}

async function credit(org: TestOrg, amount: string, type: 'topup' | 'refund' | 'promotional_credit' | 'adjustment' = 'topup') {
  tick()
  return ctx.store.balance.add(org.orgId, type, amount)
}

async function say(org: TestOrg, chatId: string, text: string): Promise<Turn> {
  tick()
  return turn(ctx, org.auth, chatId, { input: [prompt(text)] })
}

describe('key list', () => {
  it("lists the organisation's keys oldest first, revoked ones marked, with each key's newest run, never a secret", async () => {
    tick()
    const ci = ctx.store.apiKeys.create(acme.orgId, 'ci')
    tick()
    const unnamed = ctx.store.apiKeys.create(acme.orgId, null)
    const revoked = runAdminCommand(ctx.store, ['key', 'revoke', '--id', ci.id]) as { revoked_at: string }
    await credit(acme, '1')
    const chat = await newChat(ctx, acme.auth)
    const first = await say(acme, chat, 'hello')
    const second = await say(acme, chat, 'again')

    const listed = json('key', 'list', '--org', 'acme')
    expect(listed).toEqual({
      data: [
        { id: acme.keyId, name: 'test', created_at: expect.any(String), revoked_at: null, last_run_at: expect.any(String) },
        { id: ci.id, name: 'ci', created_at: expect.any(String), revoked_at: revoked.revoked_at, last_run_at: null },
        { id: unnamed.id, name: null, created_at: expect.any(String), revoked_at: null, last_run_at: null },
      ],
    })
    // The newest of the key's two runs.
    const runs = json('runs', '--org', 'acme').data as Json[]
    expect(runs.map((r) => r.id)).toEqual([second.runId, first.runId])
    expect(listed.data[0].last_run_at).toBe(runs[0]!.created_at)
    expect(listed.data[0].last_run_at > listed.data[0].created_at).toBe(true)

    const text = table('key', 'list', '--org', acme.orgId)
    expect(text.split('\n')[0]).toMatch(/^ID +NAME +CREATED +LAST RUN +STATUS$/)
    expect(text).toContain(`revoked ${revoked.revoked_at}`)
    expect(text.split('\n').filter((line) => line.endsWith(' active'))).toHaveLength(2)
    for (const secret of [acme.key, ci.key, unnamed.key]) expect(text + JSON.stringify(listed)).not.toContain(secret)
    // Another organisation's keys are its own.
    expect(json('key', 'list', '--org', 'other').data.map((k: Json) => k.id)).toEqual([other.keyId])
  })

  it('says so for an organisation with no keys, and refuses an unknown one', () => {
    const bare = ctx.store.organisations.create('Bare', 'bare')
    expect(table('key', 'list', '--org', bare.id)).toBe('no API keys\n')
    expect(json('key', 'list', '--org', 'bare')).toEqual({ data: [] })
    fails(['key', 'list', '--org', 'nope'], /no organisation with id or slug "nope"/)
    fails(['key', 'list'], /--org is required/)
  })
})

describe('runs', () => {
  it('lists the newest runs first: status, model, cost as settled, chat; --status and --limit narrow it', async () => {
    await credit(acme, '1')
    await credit(other, '1')
    const support = await newChat(ctx, acme.auth, { namespace: 'support' })
    const sales = await newChat(ctx, acme.auth)
    const hello = await say(acme, support, 'hello')
    const broken = await say(acme, sales, '/fail-mid\none two three four five six')
    const again = await say(acme, support, 'again')
    await say(other, await newChat(ctx, other.auth), 'not acme')

    const runs = json('runs', '--org', 'acme').data as Json[]
    expect(runs.map((r) => r.id)).toEqual([again.runId, broken.runId, hello.runId])
    expect(runs[2]).toEqual({
      id: hello.runId,
      status: 'succeeded',
      origin: 'customer',
      model: 'sandbox/echo',
      cost: hello.of('done')[0]!.data.cost,
      chat_id: support,
      namespace: 'support',
      api_key_id: acme.keyId,
      created_at: expect.any(String),
      completed_at: expect.any(String),
      error: null,
    })
    expect(runs[2]!.cost).toBe('0.00000735')
    expect(runs[1]).toMatchObject({ status: 'failed', chat_id: sales, namespace: null, error: expect.any(String) })
    // A failed run is billed for what it used: the cost is its balance entry's debit.
    const charge = ctx.store.db.prepare('SELECT amount_units FROM balance_entries WHERE run_id = ?').safeIntegers(true).get(broken.runId) as { amount_units: bigint }
    expect(charge.amount_units < 0n).toBe(true)
    expect(runs[1]!.cost).toBe(unitsToMoney(-charge.amount_units))

    expect(json('runs', '--org', 'acme', '--status', 'failed').data.map((r: Json) => r.id)).toEqual([broken.runId])
    expect(json('runs', '--org', 'acme', '--status', 'cancelled').data).toEqual([])
    expect(json('runs', '--org', 'acme', '--limit', '2').data.map((r: Json) => r.id)).toEqual([again.runId, broken.runId])

    const lines = table('runs', '--org', 'acme').trimEnd().split('\n')
    expect(lines[0]).toMatch(/^ID +STATUS +ORIGIN +MODEL +COST +CHAT +CREATED$/)
    expect(lines.slice(1).map((line) => line.split(/ +/)[0])).toEqual([again.runId, broken.runId, hello.runId])
    expect(lines[3]).toContain(' succeeded ')
    expect(lines[3]).toContain(' 0.00000735 ')
  })

  it('shows a running run without a cost', async () => {
    const chat = await newChat(ctx, acme.auth)
    ctx.store.runs.insert({
      id: '00000000-0000-4000-8000-000000000001',
      org_id: acme.orgId,
      chat_id: chat,
      origin: 'customer',
      model_id: sandboxCatalogue()[0]!.id,
      model_name: 'sandbox/echo',
      namespace: null,
      api_key_id: null,
      retry_of: null,
      created_at: clock.toISOString(),
      manifest: {},
      lease_owner: 'elsewhere',
      lease_expires_at: new Date(clock.getTime() + 30_000).toISOString(),
    })
    expect(json('runs', '--org', 'acme').data).toMatchObject([{ status: 'running', cost: null, completed_at: null }])
    expect(table('runs', '--org', 'acme').split('\n')[1]).toMatch(/ running +customer +sandbox\/echo +- /)
  })

  it('refuses a bad status, a bad limit and an unknown organisation; says so when there are none', () => {
    expect(table('runs', '--org', 'acme')).toBe('no runs\n')
    fails(['runs', '--org', 'acme', '--status', 'done'], /--status must be one of running, succeeded, failed, cancelled/)
    fails(['runs', '--org', 'acme', '--limit', '0'], /--limit must be a whole number from 1 to 1000, got "0"/)
    fails(['runs', '--org', 'acme', '--limit', '1001'], /--limit/)
    fails(['runs', '--org', 'acme', '--limit', 'ten'], /--limit/)
    fails(['runs', '--org', 'nope'], /no organisation with id or slug "nope"/)
    fails(['runs', '--org', 'acme', '--colour', 'red'], /colour/)
  })
})

describe('usage', () => {
  async function seedUsage() {
    await credit(acme, '2.50')
    const chat = await newChat(ctx, acme.auth, { namespace: 'support' })
    await say(acme, chat, 'hello')
    await say(acme, chat, 'hello again')
    await credit(other, '1')
    await say(other, await newChat(ctx, other.auth), 'hello')
  }

  it('is the report GET /api/v1/usage gives for the same organisation and window', async () => {
    await seedUsage()
    // At 09:1x the 24h window is [2026-11-25T10:00, 2026-11-26T10:00).
    for (const groupBy of [null, 'model', 'run', 'entry_type', 'api_key', 'namespace', 'organisation']) {
      for (const bin of [null, 'hour']) {
        const query = `range=24h${groupBy ? `&group_by=${groupBy}` : ''}${bin ? `&bin=${bin}` : ''}`
        const http = await ctx.app.inject({ url: `/api/v1/usage?${query}`, headers: acme.auth })
        expect(http.statusCode, http.body).toBe(200)
        const flags = [...(groupBy ? ['--group-by', groupBy] : []), ...(bin ? ['--bin', bin] : [])]
        expect(json('usage', '--org', 'acme', '--from', '2026-11-25T10:00Z', '--to', '2026-11-26T10:00Z', ...flags), query).toEqual(http.json())
      }
    }
    // Without --to, the window ends where the route's does: at the start of the next whole hour.
    const http = (await ctx.app.inject({ url: '/api/v1/usage?range=24h&group_by=model', headers: acme.auth })).json()
    expect(json('usage', '--org', acme.orgId, '--from', '2026-11-25T10:00Z', '--group-by', 'model')).toEqual(http)
  })

  it('shows the credit as a row of its own: no model, no runs, no cost (docs/guide/billing-and-usage.md)', async () => {
    await seedUsage()
    const report = json('usage', '--org', 'acme', '--from', '2026-11-26', '--to', '2026-11-27', '--group-by', 'model')
    expect(report.rows).toEqual([
      expect.objectContaining({ group: { dimension: 'model', model_id: null, model_name: null }, runs: 0, input_tokens: 0, output_tokens: 0, cost: '0.00' }),
      expect.objectContaining({ group: expect.objectContaining({ model_name: 'sandbox/echo' }), runs: 2 }),
    ])
    const lines = table('usage', '--org', 'acme', '--from', '2026-11-26', '--to', '2026-11-27', '--group-by', 'model').trimEnd().split('\n')
    expect(lines[0]).toBe('usage from 2026-11-26T00:00:00.000Z to 2026-11-27T00:00:00.000Z')
    expect(lines[1]).toMatch(/^MODEL +RUNS +INPUT +OUTPUT +REASONING +CACHE READ +CACHE WRITE +COST$/)
    expect(lines[2]).toMatch(/^\(credits\) +0 +0 +0 +0 +0 +0 +0\.00$/)
    expect(lines[3]).toMatch(/^sandbox\/echo +2 /)
    // A namespace leaves credits out: they belong to no namespace.
    const support = json('usage', '--org', 'acme', '--from', '2026-11-26', '--to', '2026-11-27', '--group-by', 'model', '--namespace', 'support')
    expect(support.rows.map((r: Json) => r.group.model_name)).toEqual(['sandbox/echo'])
  })

  it('refuses windows off the hour or backwards, unknown bins and dimensions, bad namespaces and unknown organisations', () => {
    const base = ['usage', '--org', 'acme']
    fails([...base], /--from is required/)
    fails([...base, '--from', '2026-11-26T09:30Z'], /--from must be a whole UTC hour/)
    fails([...base, '--from', '2026-11-26', '--to', '2026-11-26T10:00:01Z'], /--to must be a whole UTC hour/)
    fails([...base, '--from', '2026-11-26', '--to', '2026-11-26'], /--from must be before --to/)
    fails([...base, '--from', '2026-11-26', '--to', '2026-11-25'], /--from must be before --to/)
    fails([...base, '--from', 'yesterday'], /--from must be a date such as 2026-11-26/)
    fails([...base, '--from', '2026-02-30'], /--from must be a date/)
    fails([...base, '--from', '2026-11-26T09:00'], /--from must be a date/)
    fails([...base, '--from', '2026-11-26', '--bin', 'week'], /--bin must be one of hour, day/)
    fails([...base, '--from', '2026-11-26', '--group-by', 'colour'], /--group-by must be one of model, namespace/)
    fails([...base, '--from', '2026-11-26', '--namespace', 'Not A Namespace'], /--namespace/)
    fails(['usage', '--org', 'nope', '--from', '2026-11-26'], /no organisation with id or slug "nope"/)
  })

  it('says so when the window has no entries', () => {
    expect(table('usage', '--org', 'acme', '--from', '2026-11-26', '--bin', 'day')).toBe('usage from 2026-11-26T00:00:00.000Z to 2026-11-26T10:00:00.000Z\nno usage\n')
  })
})

describe('balance history', () => {
  it('lists credits and charges newest first, each with the balance it left, however the page is cut', async () => {
    await credit(acme, '10.00')
    const chat = await newChat(ctx, acme.auth)
    const hello = await say(acme, chat, 'hello')
    await credit(acme, '0.25', 'refund')
    await credit(acme, '-1.5', 'adjustment')
    await credit(other, '99')

    const history = json('balance', 'history', '--org', 'acme')
    expect(history.balance).toBe(ctx.store.balance.balanceOf(acme.orgId))
    expect(history.data).toEqual([
      { id: expect.any(String), entry_type: 'adjustment', amount: '-1.50', balance_after: history.balance, occurred_at: expect.any(String), run_id: null, model_name: null },
      expect.objectContaining({ entry_type: 'refund', amount: '0.25', balance_after: '10.24999265' }),
      expect.objectContaining({ entry_type: 'usage', amount: '-0.00000735', balance_after: '9.99999265', run_id: hello.runId, model_name: 'sandbox/echo' }),
      expect.objectContaining({ entry_type: 'topup', amount: '10.00', balance_after: '10.00' }),
    ])
    expect(history.balance).toBe('8.74999265')

    // A page that does not start at the newest entry still knows the balance each entry left.
    expect(json('balance', 'history', '--org', 'acme', '--limit', '2').data).toEqual(history.data.slice(0, 2))
    const at = (i: number) => history.data[i].occurred_at as string
    expect(json('balance', 'history', '--org', 'acme', '--from', at(2), '--to', at(0)).data).toEqual(history.data.slice(1, 3))

    const lines = table('balance', 'history', '--org', 'acme').trimEnd().split('\n')
    expect(lines[0]).toBe('balance now: 8.74999265 USD')
    expect(lines[1]).toMatch(/^OCCURRED +TYPE +AMOUNT +BALANCE AFTER +RUN +MODEL$/)
    expect(lines[2]).toMatch(/ adjustment +-1\.50 +8\.74999265 +- +-$/)
    expect(lines[4]).toMatch(new RegExp(` usage +-0\\.00000735 +9\\.99999265 +${hello.runId} +sandbox/echo$`))
  })

  it('orders entries made in the same millisecond as they were written', async () => {
    // The clock stands still: three entries share one occurred_at.
    for (const amount of ['1', '2', '3']) ctx.store.balance.add(acme.orgId, 'topup', amount)
    const history = json('balance', 'history', '--org', 'acme')
    expect(history.data.map((e: Json) => [e.amount, e.balance_after])).toEqual([['3.00', '6.00'], ['2.00', '3.00'], ['1.00', '1.00']])
    expect(json('balance', 'history', '--org', 'acme', '--limit', '1').data.map((e: Json) => e.balance_after)).toEqual(['6.00'])
    const middle = json('balance', 'history', '--org', 'acme', '--limit', '2')
    expect(middle.data.map((e: Json) => e.balance_after)).toEqual(['6.00', '3.00'])
  })

  it('says so when there are none; refuses bad ranges, bad limits and unknown organisations', () => {
    expect(table('balance', 'history', '--org', 'acme')).toBe('balance now: 0.00 USD\nno balance entries\n')
    fails(['balance', 'history', '--org', 'acme', '--from', '2026-11-27', '--to', '2026-11-26'], /--from must be before --to/)
    fails(['balance', 'history', '--org', 'acme', '--to', 'soon'], /--to must be a date/)
    fails(['balance', 'history', '--org', 'acme', '--limit', '-1'], /--limit/)
    fails(['balance', 'history', '--org', 'nope'], /no organisation with id or slug "nope"/)
  })
})

describe('help for the operator commands', () => {
  const FLAGS: Record<string, string[]> = {
    'key list': ['--org', '--json'],
    runs: ['--org', '--status', '--limit', '--json'],
    usage: ['--org', '--from', '--to', '--bin', '--group-by', '--namespace', '--json'],
    'balance history': ['--org', '--from', '--to', '--limit', '--json'],
  }

  it('help lists each with its flags; help <command>, <command> --help and -h show that one alone', () => {
    const all = adminHelp(['help'])!
    for (const [command, flags] of Object.entries(FLAGS)) {
      const line = all.split('\n').find((l) => l.startsWith(`  ${command} `))
      expect(line, command).toBeDefined()
      for (const flag of flags) expect(line, `${command} ${flag}`).toContain(flag)
      const one = adminHelp(['help', ...command.split(' ')])!
      expect(one, command).toMatch(new RegExp(`^usage: npm run -s admin -- ${command} --org`))
      expect(one).not.toContain('org create')
      expect(adminHelp([...command.split(' '), '--help'])).toBe(one)
      expect(adminHelp([...command.split(' '), '--org', 'acme', '-h'])).toBe(one)
    }
    expect(adminHelp(['runs', '--org', 'acme'])).toBeNull()
    // Help for a command that does not exist names it (an AdminError: stderr, exit 1), not the whole usage.
    expect(() => adminHelp(['help', 'frobnicate'])).toThrow(/^unknown command "frobnicate"; the commands are /)
  })
})

describe('the admin process', () => {
  it('prints tables by default and JSON with --json; a missing organisation exits 1 with one line, no stack', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'parley-admin-reports-'))
    try {
      const db = openDatabase(join(dataDir, 'parley.db'))
      const store = createStore(db)
      const org = store.organisations.create('Acme', 'acme')
      const key = store.apiKeys.create(org.id, 'ci')
      store.balance.add(org.id, 'topup', '3')
      db.close()

      const keys = await runAdmin(dataDir, ['key', 'list', '--org', 'acme'])
      expect(keys).toMatchObject({ code: 0, stderr: '' })
      expect(keys.stdout).toMatch(new RegExp(`^ID +NAME +CREATED +LAST RUN +STATUS\\n${key.id} +ci +\\S+ +- +active\\n$`))

      const history = await runAdmin(dataDir, ['balance', 'history', '--org', 'acme', '--json'])
      expect(history.code).toBe(0)
      expect(JSON.parse(history.stdout)).toMatchObject({ balance: '3.00', data: [{ entry_type: 'topup', amount: '3.00', balance_after: '3.00' }] })

      const missing = await runAdmin(dataDir, ['runs', '--org', 'nope'])
      expect(missing).toEqual({ code: 1, stdout: '', stderr: 'admin: no organisation with id or slug "nope"\n' })
      const bad = await runAdmin(dataDir, ['usage', '--org', 'acme', '--from', 'monday'])
      expect(bad.code).toBe(1)
      expect(bad.stderr).toMatch(/^admin: --from must be a date such as 2026-11-26 or a time with its zone such as 2026-11-26T09:00Z, got "monday"\n$/)
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
  }, 60_000)
})
