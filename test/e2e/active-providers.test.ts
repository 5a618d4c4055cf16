import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, test } from 'vitest'
import { NO_MODEL_WARNING } from '../../src/providers/catalogue/active-providers-line.ts'
import { IGNORED_KEY_VARIABLES, keyVariablesOf, VENDOR_KEY_VARIABLES } from '../../src/providers/catalogue/active-providers.ts'
import { inactiveModelHint } from '../../src/providers/catalogue/inactive-model.ts'
import { loadCatalogue } from '../../src/providers/catalogue/load-catalogue.ts'
import { runAdmin, startServer, waitFor, type ServerProcess } from './server-process.ts'
import { postTurn, request } from './turn-client.ts'
import { startReplayServer, type ReplayServer } from './vendor-replay-server.ts'
import { machineCeiling } from '../helpers/machine-timeouts.ts'

/**
 * Issue 23 (docs/guide/vendors.md, decision 035), against the real process: started with one
 * vendor's key and its base URL on a loopback stand-in, the server's start-up line names that
 * vendor with its number of catalogue models, /readyz says the same, and a turn reaches the stand-in.
 * Started in production with no key, it warns at start that no model is active, and /readyz warns too.
 */

/** No vendor key (nor an alias of one) or base URL of the shell running the suite reaches the child: each test sets its own. */
const NO_VENDOR_ENV: Record<string, undefined> = Object.fromEntries([
  ...Object.keys(VENDOR_KEY_VARIABLES).flatMap((vendor) => [...keyVariablesOf(vendor), `${vendor.toUpperCase()}_BASE_URL`].map((name) => [name, undefined])),
  ...Object.keys(IGNORED_KEY_VARIABLES).map((name) => [name, undefined]),
])

const OPENAI_MODELS = loadCatalogue().entries.filter((entry) => entry.provider === 'openai')
const GOOGLE_MODELS = loadCatalogue().entries.filter((entry) => entry.provider === 'google' && entry.status !== 'retired')

const logLines = (text: string) =>
  text
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, any>)

describe('the active providers at start', () => {
  let server: ServerProcess | undefined
  let replay: ReplayServer | undefined
  let dataDir: string | undefined
  afterEach(async () => {
    await server?.stop()
    await replay?.close()
    if (dataDir) rmSync(dataDir, { recursive: true, force: true })
    server = replay = dataDir = undefined
  })

  test('one vendor key with a loopback base URL: the start-up line names it with its model count, and its turns go there', async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'parley-e2e-active-providers-'))
    replay = await startReplayServer()
    server = await startServer({
      env: {
        ...NO_VENDOR_ENV,
        DATA_DIR: dataDir,
        SANDBOX: 'off',
        OPENAI_API_KEY: 'sk-test-loopback',
        OPENAI_BASE_URL: replay.baseUrl('openai'),
        LOG_LEVEL: 'info',
        LOG_FORMAT: 'json',
      },
      readyPath: '/readyz',
      timeoutMs: 25_000,
    })
    expect(OPENAI_MODELS.length).toBeGreaterThan(0)
    const count = OPENAI_MODELS.length
    const line = await waitFor('the active providers line', () => logLines(server!.stdout()).find((l) => String(l.msg).startsWith('providers active')))
    expect(line).toMatchObject({ level: 30, providers: { openai: count }, models: count, msg: `providers active: openai (${count} models)` })
    expect(logLines(server.stdout()).filter((l) => l.msg === NO_MODEL_WARNING)).toEqual([])

    const ready = await request(server.url, '/readyz')
    expect(ready.status).toBe(200)
    expect(ready.json()).toEqual({ status: 'ready', role: 'primary', providers: { openai: count }, models: count, warnings: [] })
    const catalogue = await request(server.url, '/v1/catalogue')
    expect(catalogue.json().models.map((m: { name: string }) => m.name).sort()).toEqual(OPENAI_MODELS.map((m) => m.name).sort())

    // The base URL is where the vendor's requests go, with the key as the vendor expects it.
    const key = readFileSync(join(dataDir, 'dev-api-key.txt'), 'utf8').trim()
    const chat = await request(server.url, '/api/v1/chats', { method: 'POST', key, body: {} })
    expect(chat.status, chat.text).toBe(201)
    const turn = await postTurn(server.url, key, chat.json().id, { model: 'openai/gpt-5', input: [{ type: 'prompt', text: 'hello' }] })
    if (!turn.ok) throw new Error(`${turn.status} ${turn.text}`)
    expect(await turn.closed).toBe('end')
    expect(turn.frames.map((f) => f.event)).toContain('done')
    const calls = replay.requestsTo('openai')
    expect(calls.map((c) => `${c.method} ${c.path}`)).toEqual(['POST /openai/v1/responses'])
    expect(calls[0]!.headers.authorization).toBe('Bearer sk-test-loopback')
  }, machineCeiling(60_000))

  test('production with no vendor key: the start-up line warns that no model is active, and /readyz says so', async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'parley-e2e-no-providers-'))
    server = await startServer({
      env: { ...NO_VENDOR_ENV, NODE_ENV: 'production', SANDBOX: undefined, DATA_DIR: dataDir, LOG_LEVEL: 'info' },
      readyPath: '/readyz',
      timeoutMs: 25_000,
    })
    const line = await waitFor('the no-model warning', () => logLines(server!.stdout()).find((l) => l.msg === NO_MODEL_WARNING))
    expect(line).toMatchObject({ level: 40, providers: {}, models: 0 })
    expect(logLines(server.stdout()).filter((l) => String(l.msg).startsWith('providers active'))).toEqual([])

    const ready = await request(server.url, '/readyz')
    expect(ready.status).toBe(200)
    expect(ready.json()).toEqual({ status: 'ready', role: 'primary', providers: {}, models: 0, warnings: [NO_MODEL_WARNING] })
    expect((await request(server.url, '/v1/catalogue')).json().models).toEqual([])

    // Issue 38: a first turn there is told that nothing is active and how the sandbox is turned on.
    const org = await runAdmin(dataDir, ['org', 'create', '--name', 'First Run'])
    expect(org.code, org.stderr).toBe(0)
    const created = await runAdmin(dataDir, ['key', 'create', '--org', JSON.parse(org.stdout).id])
    expect(created.code, created.stderr).toBe(0)
    const key = JSON.parse(created.stdout).key as string
    const chat = await request(server.url, '/api/v1/chats', { method: 'POST', key, body: {} })
    expect(chat.status, chat.text).toBe(201)
    const turn = await postTurn(server.url, key, chat.json().id, { model: 'sandbox/echo', input: [{ type: 'prompt', text: 'hello' }] })
    if (turn.ok) throw new Error('a turn on a node with no model was streamed')
    expect(turn.status).toBe(422)
    const hint = inactiveModelHint('sandbox/echo', [])
    expect(hint).toMatch(/^no model is active on this server; the sandbox is off: start the server with SANDBOX=on/)
    expect(turn.json().error).toMatchObject({ code: 'validation_failed', hint })
    const facade = await request(server.url, '/v1/responses', { method: 'POST', key, body: { model: 'sandbox/echo', input: 'hello' } })
    expect(facade.status).toBe(400)
    expect(facade.json().error.message).toContain(hint)
  }, machineCeiling(60_000))

  test('GOOGLE_API_KEY alone turns google on (decision 060): the log names the alias, and its value is the key sent', async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'parley-e2e-google-alias-'))
    replay = await startReplayServer()
    server = await startServer({
      env: {
        ...NO_VENDOR_ENV,
        DATA_DIR: dataDir,
        SANDBOX: 'off',
        GOOGLE_API_KEY: 'AIza-alias-loopback',
        GOOGLE_BASE_URL: replay.baseUrl('google'),
        LOG_LEVEL: 'info',
        LOG_FORMAT: 'json',
      },
      readyPath: '/readyz',
      timeoutMs: 25_000,
    })
    const count = GOOGLE_MODELS.length
    const line = await waitFor('the active providers line', () => logLines(server!.stdout()).find((l) => String(l.msg).startsWith('providers active')))
    expect(line).toMatchObject({ level: 30, providers: { google: count }, models: count })
    const note = await waitFor('the alias line', () => logLines(server!.stdout()).find((l) => String(l.msg).startsWith('google: key read from')))
    expect(note).toMatchObject({ level: 30, provider: 'google', variable: 'GOOGLE_API_KEY', msg: 'google: key read from GOOGLE_API_KEY, an alias of GOOGLE_GENERATIVE_AI_API_KEY' })
    expect(server.stdout()).not.toContain('AIza-alias-loopback')

    const key = readFileSync(join(dataDir, 'dev-api-key.txt'), 'utf8').trim()
    const chat = await request(server.url, '/api/v1/chats', { method: 'POST', key, body: {} })
    expect(chat.status, chat.text).toBe(201)
    const turn = await postTurn(server.url, key, chat.json().id, { model: 'google/gemini-3.8-flash', input: [{ type: 'prompt', text: 'hello' }] })
    if (!turn.ok) throw new Error(`${turn.status} ${turn.text}`)
    expect(await turn.closed).toBe('end')
    const calls = replay.requestsTo('google')
    expect(calls).toHaveLength(1)
    expect(calls[0]!.headers['x-goog-api-key']).toBe('AIza-alias-loopback')
  }, machineCeiling(60_000))
})
