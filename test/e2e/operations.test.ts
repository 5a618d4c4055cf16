import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, test } from 'vitest'
import { freePort, REPO_ROOT, runAdmin, startServer, waitFor, type ServerProcess } from './server-process.ts'
import { postTurn, request } from './turn-client.ts'
import { machineCeiling } from '../helpers/machine-timeouts.ts'

/**
 * Issue 13, the operator's first hour against the real process: a first start that fails after
 * creating the dev organisation (its port taken) owes the banner, which the next start prints with
 * the organisation's id; JSON logs carry a line per settled run and the error code of each failure;
 * LOG_FORMAT=pretty is for people; startup says whether inspection is on and whether its relay answers.
 * The tests share one DATA_DIR and run in order.
 */
describe('operating the real server process', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-ops-'))
  const keyFile = join(dataDir, 'dev-api-key.txt')
  let server: ServerProcess | undefined
  let blocker: Server | undefined

  afterAll(async () => {
    await server?.stop()
    blocker?.close()
    rmSync(dataDir, { recursive: true, force: true })
  })

  const logLines = (text: string) =>
    text
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, any>)

  test('a first start whose port is taken exits 1 after creating the dev organisation, printing no key', async () => {
    const port = await freePort()
    blocker = createServer()
    await new Promise<void>((resolve) => blocker!.listen(port, '127.0.0.1', resolve))
    const env: NodeJS.ProcessEnv = { ...process.env, HOST: '127.0.0.1', PORT: String(port), DATA_DIR: dataDir, LOG_FORMAT: 'json' }
    delete env.NODE_ENV
    const child = spawn(process.execPath, ['src/main.ts'], { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk))
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
    blocker.close()
    expect(code).toBe(1)
    expect(existsSync(keyFile)).toBe(true)
    const key = readFileSync(keyFile, 'utf8').trim()
    expect(out).not.toContain(key)
    expect(out).not.toContain('Created organisation')
    const failure = logLines(out).find((line) => line.level === 50)!
    expect(failure.msg).toBe(`cannot listen on 127.0.0.1:${port}`)
    expect(failure.err.code).toBe('EADDRINUSE')
  }, machineCeiling(60_000))

  test('the next start prints the banner it owes: the key and the organisation id', async () => {
    server = await startServer({ env: { DATA_DIR: dataDir, LOG_LEVEL: 'info', LOG_FORMAT: 'json' }, timeoutMs: 25_000 })
    const key = readFileSync(keyFile, 'utf8').trim()
    const stdout = await waitFor('the banner', () => server!.stdout().includes(key) && server!.stdout())
    const shown = await runAdmin(dataDir, ['org', 'show', 'dev'])
    expect(shown.code).toBe(0)
    const org = JSON.parse(shown.stdout)
    expect(stdout).toContain(`Created organisation "dev" (id ${org.id})`)
    expect(org.balance).toBe('10.00')
    // The key shown works.
    expect((await request(server.url, '/api/v1/chats', { key })).status).toBe(200)
  }, machineCeiling(60_000))

  test('inspection off is said at startup', () => {
    expect(logLines(server!.stdout()).some((line) => line.level === 30 && line.msg === 'inspection off (STATELY_INSPECT unset)')).toBe(true)
  })

  test('one info line per settled run, and the error code on each failed request', async () => {
    const key = readFileSync(keyFile, 'utf8').trim()
    const chat = (await request(server!.url, '/api/v1/chats', { method: 'POST', key, body: {} })).json()
    const turn = await postTurn(server!.url, key, chat.id, { model: 'sandbox/echo', input: [{ type: 'prompt', text: 'hello there' }] })
    if (!turn.ok) throw new Error(turn.text)
    expect(await turn.closed).toBe('end')
    const runId = turn.frames[0]!.data.run_id
    const done = turn.frames.find((f) => f.event === 'done')!.data
    const line = await waitFor('the run settled line', () => logLines(server!.stdout()).find((l) => l.msg === 'run settled' && l.run_id === runId))
    expect(line).toMatchObject({
      level: 30,
      run_id: runId,
      chat_id: chat.id,
      model: 'sandbox/echo',
      status: 'succeeded',
      stop_reason: 'end_turn',
      input_tokens: done.usage.input_tokens,
      output_tokens: done.usage.output_tokens,
      cost: done.cost,
    })
    expect(line.latency_ms).toBeGreaterThanOrEqual(0)
    expect(logLines(server!.stdout()).filter((l) => l.msg === 'run settled' && l.run_id === runId)).toHaveLength(1)

    const missing = await request(server!.url, '/api/v1/chats/7d9b3c2a-1e4f-4a6b-8c0d-9e8f7a6b5c4d', { key })
    expect(missing.status).toBe(404)
    const requestId = missing.headers.get('x-request-id')
    const completed = await waitFor('the 404 line', () => logLines(server!.stdout()).find((l) => l.reqId === requestId && l.msg === 'request completed'))
    expect(completed.error_code).toBe('not_found')
  }, machineCeiling(60_000))

  test('a later start owes nothing; pretty logs warn that the inspector relay does not answer', async () => {
    await server!.stop()
    const relayPort = await freePort()
    server = await startServer({
      env: { DATA_DIR: dataDir, LOG_LEVEL: 'info', LOG_FORMAT: 'pretty', STATELY_INSPECT: `ws://127.0.0.1:${relayPort}` },
      timeoutMs: 25_000,
    })
    const stdout = await waitFor('the inspection warning', () => /WARN.*inspector relay does not answer/.test(server!.stdout()) && server!.stdout())
    expect(stdout).not.toContain('Created organisation')
    expect(stdout).not.toContain(readFileSync(keyFile, 'utf8').trim())
    expect(stdout).toContain(`ws://127.0.0.1:${relayPort}`)
    // Lines for people, not JSON objects.
    expect(stdout.split('\n').filter((l) => l.startsWith('{'))).toEqual([])
  }, machineCeiling(60_000))
})
