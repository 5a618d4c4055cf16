import { randomUUID } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { openDatabase } from '../../src/store/database.ts'
import { createStore } from '../../src/store/index.ts'
import { runAdmin, startServer, waitFor, type CliResult, type ServerProcess } from './server-process.ts'
import { machineCeiling } from '../helpers/machine-timeouts.ts'

/**
 * One end-to-end pass over the real process: `node src/main.ts` on a fresh DATA_DIR,
 * driven over HTTP and through the admin CLI while it runs (decisions §1–2). The tests share state
 * and run in order.
 */
describe('the real server process with the admin CLI', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-e2e-'))
  const keyFile = join(dataDir, 'dev-api-key.txt')
  let server: ServerProcess | undefined
  let devKey = ''

  const http = async (path: string, init: RequestInit & { key?: string; cookie?: string } = {}) => {
    const headers = new Headers(init.headers)
    if (init.key) headers.set('authorization', `Bearer ${init.key}`)
    if (init.cookie) headers.set('cookie', init.cookie)
    if (typeof init.body === 'string') headers.set('content-type', 'application/json')
    const response = await fetch(`${server!.url}${path}`, { ...init, headers, signal: AbortSignal.timeout(5_000) })
    const text = await response.text()
    return { status: response.status, headers: response.headers, text, json: () => JSON.parse(text) }
  }

  /** A successful command prints exactly one JSON object on stdout and nothing on stderr. */
  const admin = async (...args: string[]) => {
    const result = await runAdmin(dataDir, args)
    expect(result, `admin ${args.join(' ')}`).toMatchObject({ code: 0, stderr: '' })
    expect(result.stdout.endsWith('\n')).toBe(true)
    expect(result.stdout.trim().split('\n')).toHaveLength(1)
    return JSON.parse(result.stdout) as Record<string, unknown>
  }

  const expectCliFailure = (result: CliResult, message: RegExp) => {
    expect(result.code).not.toBe(0)
    expect(result.code).not.toBeNull()
    expect(result.stdout).toBe('')
    expect(result.stderr).toMatch(message)
  }

  // Generous bounds: the machine running the suite may be busy; no test asserts on time.
  const START_TIMEOUT_MS = 25_000

  beforeAll(async () => {
    server = await startServer({ env: { DATA_DIR: dataDir }, timeoutMs: START_TIMEOUT_MS })
  })

  afterAll(async () => {
    await server?.stop()
    rmSync(dataDir, { recursive: true, force: true })
  })

  // Shared across the ordered tests below.
  const devChats: string[] = []
  let acme = { id: '', keyId: '', key: '' }

  test('the first start creates organisation dev: its key is in DATA_DIR/dev-api-key.txt and on stdout', async () => {
    // The key file is written before the server listens, so it exists as soon as GET / answers.
    expect(existsSync(keyFile)).toBe(true)
    devKey = readFileSync(keyFile, 'utf8').trim()
    expect(devKey).toMatch(/^pk_[A-Za-z0-9_-]{43,}$/)
    const stdout = await waitFor('the key on stdout', () => server!.stdout().includes(devKey) && server!.stdout())
    expect(stdout).toContain('Created organisation "dev"')
    expect(stdout).toContain(keyFile)
    expect(stdout).toContain(`${server!.url}/api/v1/chats`)

    const discovery = await http('/')
    expect(discovery.status).toBe(200)
    expect(discovery.json()).toMatchObject({ service: 'parley', openapi: '/openapi.json' })
  })

  test('without a key, or with an unknown key, the API answers 401', async () => {
    for (const key of [undefined, `pk_${'x'.repeat(43)}`]) {
      const response = await http('/api/v1/chats', key === undefined ? {} : { key })
      expect(response.status).toBe(401)
      expect(response.json().error.code).toBe('unauthorized')
    }
  })

  test('chats are created, listed, read and their history paged over HTTP', async () => {
    const first = await http('/api/v1/chats', {
      method: 'POST',
      key: devKey,
      body: JSON.stringify({ title: 'first', namespace: 'e2e/support', user_metadata: { ticket: 7 } }),
    })
    expect(first.status).toBe(201)
    expect(first.json()).toMatchObject({ title: 'first', namespace: 'e2e/support', user_metadata: { ticket: 7 } })
    // A POST without a body creates an empty chat too.
    const second = await http('/api/v1/chats', { method: 'POST', key: devKey })
    expect(second.status).toBe(201)
    expect(second.json()).toMatchObject({ title: null, namespace: null, user_metadata: {} })
    devChats.push(first.json().id, second.json().id)

    const list = await http('/api/v1/chats', { key: devKey })
    expect(list.status).toBe(200)
    expect(list.json()).toMatchObject({ first_id: devChats[1], last_id: devChats[0], has_more: false })
    expect(list.json().data.map((c: { id: string }) => c.id)).toEqual([devChats[1], devChats[0]])
    const scoped = await http('/api/v1/chats?namespace=e2e', { key: devKey })
    expect(scoped.json().data.map((c: { id: string }) => c.id)).toEqual([devChats[0]])

    const got = await http(`/api/v1/chats/${devChats[0]}`, { key: devKey })
    expect(got.status).toBe(200)
    expect(got.json()).toMatchObject({ id: devChats[0], title: 'first', length: 0 })

    const empty = await http(`/api/v1/chats/${devChats[0]}/history`, { key: devKey })
    expect(empty.status).toBe(200)
    expect(empty.json()).toEqual({ data: [], first_ordinal: null, last_ordinal: null, has_more: false })

    // Parts written by another connection to the same database (as turns will) are served at once.
    const db = openDatabase(join(dataDir, 'parley.db'))
    try {
      createStore(db).parts.append(devChats[0]!, [
        { body: { type: 'prompt', text: 'one' } },
        { body: { type: 'message', text: 'two' } },
        { body: { type: 'prompt', text: 'three' } },
      ])
    } finally {
      db.close()
    }
    const newest = await http(`/api/v1/chats/${devChats[0]}/history?limit=2`, { key: devKey })
    expect(newest.status).toBe(200)
    const page = newest.json()
    expect(page.data.map((p: { part: { text: string } }) => p.part.text)).toEqual(['two', 'three'])
    expect(page.data.map((p: { role: string }) => p.role)).toEqual(['assistant', 'user'])
    expect(page.has_more).toBe(true)
    const older = await http(`/api/v1/chats/${devChats[0]}/history?limit=2&before_ordinal=${page.first_ordinal}`, { key: devKey })
    expect(older.json()).toMatchObject({ has_more: false })
    expect(older.json().data.map((p: { part: { text: string } }) => p.part.text)).toEqual(['one'])
    expect((await http(`/api/v1/chats/${devChats[0]}`, { key: devKey })).json().length).toBe(3)
  })

  test('org create and key create: the new key works and sees none of dev’s chats', async () => {
    const org = await admin('org', 'create', '--name', 'Acme E2E')
    expect(Object.keys(org).sort()).toEqual(['id', 'name', 'slug'])
    expect(org).toMatchObject({ name: 'Acme E2E', slug: 'acme-e2e' })
    const key = await admin('key', 'create', '--org', org.id as string, '--name', 'e2e')
    expect(Object.keys(key).sort()).toEqual(['id', 'key'])
    expect(key.key).toMatch(/^pk_/)
    acme = { id: org.id as string, keyId: key.id as string, key: key.key as string }

    const list = await http('/api/v1/chats', { key: acme.key })
    expect(list.status).toBe(200)
    expect(list.json()).toEqual({ data: [], first_id: null, last_id: null, has_more: false })
    const own = await http('/api/v1/chats', { method: 'POST', key: acme.key, body: '{"title":"acme"}' })
    expect(own.status).toBe(201)
    expect((await http('/api/v1/chats', { key: acme.key })).json().data.map((c: { id: string }) => c.id)).toEqual([
      own.json().id,
    ])
    // Dev still sees only its own two chats.
    expect((await http('/api/v1/chats', { key: devKey })).json().data).toHaveLength(2)
  }, machineCeiling(60_000))

  test('another organisation’s chat answers exactly like a missing one', async () => {
    const foreignId = devChats[0]!
    const missingId = randomUUID()
    for (const suffix of ['', '/history']) {
      const foreign = await http(`/api/v1/chats/${foreignId}${suffix}`, { key: acme.key })
      const missing = await http(`/api/v1/chats/${missingId}${suffix}`, { key: acme.key })
      expect(foreign.status).toBe(404)
      expect(missing.status).toBe(404)
      expect(foreign.json().error.code).toBe('not_found')
      expect(foreign.headers.get('content-type')).toBe(missing.headers.get('content-type'))
      // The message may name the id: the same body, for the same id.
      expect(foreign.text).toBe(missing.text.replaceAll(missingId, foreignId))
    }
    // And the owner still reads it.
    expect((await http(`/api/v1/chats/${foreignId}`, { key: devKey })).status).toBe(200)
  })

  test('key revoke: the revoked key then gets 401, other keys keep working', async () => {
    const revoked = await admin('key', 'revoke', '--id', acme.keyId)
    expect(revoked).toMatchObject({ id: acme.keyId })
    expect(Number.isNaN(Date.parse(revoked.revoked_at as string))).toBe(false)
    const response = await http('/api/v1/chats', { key: acme.key })
    expect(response.status).toBe(401)
    expect(response.json().error.code).toBe('unauthorized')
    expect((await http('/api/v1/chats', { key: devKey })).status).toBe(200)
  })

  test('update publish: the update appears in GET /api/v1/updates', async () => {
    const update = await admin(
      'update', 'publish', '--kind', 'release', '--title', 'E2E release', '--body', 'It works.', '--important', '--version', '1.2.3',
    )
    expect(update).toMatchObject({ kind: 'release', title: 'E2E release', body: 'It works.', important: true, version: '1.2.3' })
    const updates = await http('/api/v1/updates')
    expect(updates.status).toBe(200)
    expect(updates.json()).toContainEqual(expect.objectContaining({ id: update.id, title: 'E2E release', important: true }))
  })

  test('balance add prints the entry and the new balance', async () => {
    const first = await admin('balance', 'add', '--org', acme.id, '--amount', '12.50')
    expect(first).toMatchObject({ entry: { org_id: acme.id, entry_type: 'topup', currency: 'USD' }, balance: '12.50' })
    const second = await admin('balance', 'add', '--org', acme.id, '--amount=-2.25', '--type', 'adjustment')
    expect(second).toMatchObject({ entry: { entry_type: 'adjustment' }, balance: '10.25' })
  }, machineCeiling(60_000))

  test('session create + org set-markup: the console_session cookie prices the catalogue for the organisation', async () => {
    const session = await admin('session', 'create', '--org', acme.id)
    expect(session.token).toEqual(expect.any(String))
    const cookie = `console_session=${session.token as string}`
    // No markup of its own yet: the platform's prices.
    expect((await http('/v1/catalogue', { cookie })).json().organisation_specific).toBe(false)

    const org = await admin('org', 'set-markup', '--org', acme.id, '--percent', '7.5')
    expect(org).toMatchObject({ id: acme.id, markup_percent: '7.5' })
    const priced = await http('/v1/catalogue', { cookie })
    expect(priced.status).toBe(200)
    expect(priced.json()).toMatchObject({ organisation_specific: true, markup_percent: '7.5' })
    // Anonymous and invalid sessions are not organisation-specific.
    expect((await http('/v1/catalogue')).json().organisation_specific).toBe(false)
    expect((await http('/v1/catalogue', { cookie: 'console_session=bogus' })).json().organisation_specific).toBe(false)
  }, machineCeiling(60_000))

  test('a failing CLI command exits non-zero with a message on stderr and nothing on stdout', async () => {
    expectCliFailure(await runAdmin(dataDir, ['key', 'create', '--org', randomUUID()]), /no organisation/)
    expectCliFailure(await runAdmin(dataDir, ['org', 'create', '--name', 'Acme E2E']), /exists/)
    expectCliFailure(await runAdmin(dataDir, ['frobnicate', 'everything']), /unknown command/)
  }, machineCeiling(60_000))

  test('a restart on the same DATA_DIR keeps the data and does not create a second dev organisation', async () => {
    const before = statSync(keyFile).mtimeMs
    const chatsBefore = (await http('/api/v1/chats', { key: devKey })).json()
    await server!.stop()
    server = await startServer({ env: { DATA_DIR: dataDir }, timeoutMs: START_TIMEOUT_MS })

    expect(server.stdout()).not.toMatch(/pk_|Created organisation/)
    expect(readFileSync(keyFile, 'utf8').trim()).toBe(devKey)
    expect(statSync(keyFile).mtimeMs).toBe(before)

    expect(await http('/api/v1/chats', { key: devKey })).toMatchObject({ status: 200 })
    expect((await http('/api/v1/chats', { key: devKey })).json()).toEqual(chatsBefore)
    expect((await http(`/api/v1/chats/${devChats[0]}/history`, { key: devKey })).json().data).toHaveLength(3)
    expect((await http('/api/v1/chats', { key: acme.key })).status).toBe(401)
    expect((await http('/api/v1/updates')).json()).toHaveLength(1)

    const db = openDatabase(join(dataDir, 'parley.db'))
    try {
      expect(createStore(db).organisations.count()).toBe(2)
    } finally {
      db.close()
    }
  }, machineCeiling(60_000))
})
