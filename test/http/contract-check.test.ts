import { spawn } from 'node:child_process'
import { createServer } from 'node:http'
import { existsSync, readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { checkLogFiles, emptyReport, newLogFile, RECORDER_PATH, setLogDocument, watchInProcess } from '../helpers/contract-check.ts'
import { contractValidatorFor, forceClosedObjects, type RecordedResponse } from '../helpers/contract-validator.ts'
import { createTestApp, type TestContext } from '../helpers/test-app.ts'
import { REPO_ROOT, waitFor } from '../e2e/server-process.ts'

/**
 * The contract check (issue 13) must be able to fail: each wrong answer below, and each right one,
 * goes through the same validator the test helpers run on every live response.
 */

let ctx: TestContext
let documentText: string

beforeAll(async () => {
  ctx = await createTestApp()
  documentText = (await ctx.app.inject({ url: '/openapi.json' })).body
})
afterAll(async () => {
  await ctx.close()
})

const CHAT = '01a209db-233b-76f4-aa3f-a118e933b159'
const RUN = '01a209db-2362-77f7-9e08-1b3c4803220b'
const chatSummary = {
  id: CHAT,
  namespace: 'acme/support',
  title: null,
  description: null,
  user_metadata: {},
  created_at: '2026-11-23T19:00:00.000Z',
  updated_at: '2026-11-23T19:00:00.000Z',
  length: 0,
}
const json = (method: string, url: string, status: number, body: unknown): RecordedResponse => ({
  method,
  url,
  status,
  contentType: 'application/json; charset=utf-8',
  body: JSON.stringify(body),
  complete: true,
})
const frame = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`
const stream = (frames: string, complete = true): RecordedResponse => ({
  method: 'POST',
  url: `/api/v1/chats/${CHAT}/responses`,
  status: 200,
  contentType: 'text/event-stream; charset=utf-8',
  body: frames,
  complete,
})
const opening = frame('run', { chat_id: CHAT, run_id: RUN, closed_tool_calls: [] }) + frame('config_warnings', { warnings: [] }) + frame('translation_warnings', { warnings: [] })
const done = {
  compaction: null,
  cost: '0.0001',
  cost_currency: 'USD',
  model_served: 'echo',
  pending_tool_calls: [],
  provider_response_id: null,
  server_tools: null,
  stop_reason: 'end_turn',
  usage: { input_tokens: 3, output_tokens: 2, reasoning_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0 },
}
const check = (response: RecordedResponse) => contractValidatorFor(documentText).check(response).mismatches

describe('the contract validator', () => {
  it('accepts answers that match the document', () => {
    expect(check(json('GET', `/api/v1/chats/${CHAT}`, 200, chatSummary))).toEqual([])
    expect(check(json('GET', `/api/v1/chats/${CHAT}`, 404, { error: { code: 'not_found', message: 'no chat' } }))).toEqual([])
    expect(check({ ...json('DELETE', `/api/v1/chats/${CHAT}`, 204, ''), body: '', contentType: null })).toEqual([])
    expect(check(json('GET', '/v1/catalogue/sandbox/echo-1m', 404, { error: { code: 'not_found', message: 'no model' } }))).toEqual([])
    const turn = stream(opening + frame('block_start', { kind: 'text' }) + frame('delta', { kind: 'text', text: 'hi' }) + frame('block_stop', {}) + ': heartbeat\n\n' + frame('done', done))
    expect(contractValidatorFor(documentText).check(turn)).toEqual({ mismatches: [], frames: 7, matched: true })
  })

  it('reports a property the document does not name (additionalProperties: false is forced)', () => {
    const [mismatch] = check(json('GET', `/api/v1/chats/${CHAT}`, 200, { ...chatSummary, secret: 'x' }))
    expect(mismatch).toMatch(/GET \/api\/v1\/chats\/.* -> 200: the body does not match .*additionalProperty":"secret"/)
  })

  it('reports a missing field and a wrong type', () => {
    const { length: _length, ...withoutLength } = chatSummary
    expect(check(json('GET', `/api/v1/chats/${CHAT}`, 200, withoutLength))[0]).toMatch(/missingProperty":"length"/)
    expect(check(json('GET', `/api/v1/chats/${CHAT}`, 200, { ...chatSummary, length: '0' }))[0]).toMatch(/\/length must be integer/)
  })

  it('reports an error code the operation does not answer with that status, and an undocumented status', () => {
    expect(check(json('GET', `/api/v1/chats/${CHAT}`, 404, { error: { code: 'gone', message: 'x' } }))[0]).toMatch(/\/error\/code must be equal to one of the allowed values .*not_found/)
    expect(check(json('GET', `/api/v1/chats/${CHAT}`, 409, { error: { code: 'run_in_progress', message: 'x' } }))[0]).toMatch(/status 409 is not documented/)
  })

  it("takes an operation's 4XX for the statuses answered before any operation runs only (decision 036)", () => {
    expect(check(json('GET', '/healthz', 408, { error: { code: 'request_timeout', message: 'x' } }))).toEqual([])
    expect(check(json('GET', '/healthz', 431, { error: { message: 'x' } }))[0]).toMatch(/the body does not match .*4XX.*missingProperty":"code"/)
    expect(check(json('GET', '/api/v1/chats', 404, { error: { code: 'not_found', message: 'x' } }))[0]).toMatch(/status 404 is not documented for GET \/api\/v1\/chats/)
  })

  it('reports a content type the status does not document, and a body on a 204', () => {
    expect(check({ ...json('POST', `/api/v1/chats/${CHAT}/responses`, 422, { error: { code: 'validation_failed', message: 'x' } }), contentType: 'text/event-stream' })[0]).toMatch(
      /content type text\/event-stream is not documented \(documented: application\/json\)/,
    )
    expect(check({ ...json('DELETE', `/api/v1/chats/${CHAT}`, 204, {}), contentType: null })[0]).toMatch(/documented without a body/)
  })

  it("reports an SSE frame whose data does not match its event's schema, and an unknown event", () => {
    const wrongDelta = check(stream(opening + frame('block_start', { kind: 'text' }) + frame('delta', { kind: 'text', text: 1 }) + frame('done', done)))
    expect(wrongDelta).toHaveLength(1)
    expect(wrongDelta[0]).toMatch(/frame 5 \(delta\) does not match #\/components\/schemas\/DeltaEventData: \/text must be string/)
    // Data valid for another event is still checked against its own event's schema (x-sse-events).
    expect(check(stream(opening + frame('config_warnings', { kind: 'text', text: 'hi' })))[0]).toMatch(/frame 4 \(config_warnings\) does not match #\/components\/schemas\/ConfigWarningsEventData/)
    expect(check(stream(opening + frame('done', { ...done, pending_tool_calls: [{ tool_name: 'a', tool_use_id: 'b', created_at: 'now' }] })))[0]).toMatch(
      /frame 4 \(done\).*additionalProperty":"created_at"/,
    )
    expect(check(stream(opening + frame('progress', { percent: 5 })))[0]).toMatch(/frame 4 \(progress\) event "progress" is not one of x-sse-events/)
    expect(check(stream(opening + 'event: done\ndata: {not json\n\n'))[0]).toMatch(/frame 4 \(done\): data is not JSON/)
  })

  it('checks only the whole frames of a dropped stream', () => {
    const cut = opening + frame('block_start', { kind: 'text' }) + 'event: delta\ndata: {"kind":"te'
    expect(contractValidatorFor(documentText).check(stream(cut, false))).toEqual({ mismatches: [], frames: 4, matched: true })
  })

  it('holds errors outside any operation to the envelope, and reports a success outside the document', () => {
    expect(check(json('GET', '/nowhere', 404, { error: { code: 'not_found', message: 'x' } }))).toEqual([])
    expect(check(json('GET', '/nowhere', 404, { message: 'x' }))[0]).toMatch(/the error body does not match/)
    expect(check(json('GET', '/nowhere', 200, {}))[0]).toMatch(/no operation of the document serves GET \/nowhere/)
    expect(check(json('PATCH', '/api/v1/chats', 405, { error: { code: 'method_not_allowed', message: 'x' } }))).toEqual([])
  })

  it('closes object schemas that list properties, and leaves records and examples alone', () => {
    const closed = forceClosedObjects({
      type: 'object',
      properties: { properties: { type: 'object', properties: { a: { type: 'string' } } }, meta: { type: 'object', patternProperties: { '^.*$': {} } } },
      example: { properties: { x: 1 } },
    }) as Record<string, any>
    expect(closed.additionalProperties).toBe(false)
    expect(closed.properties.properties.additionalProperties).toBe(false)
    expect(closed.properties.meta.additionalProperties).toBeUndefined()
    expect(closed.example).toEqual({ properties: { x: 1 } })
    expect('additionalProperties' in closed.properties).toBe(false)
  })
})

describe('the hooks', () => {
  it("reports a wrong answer of an in-process app's inject", async () => {
    const report = emptyReport()
    const wrong = { statusCode: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ version: '1' }), raw: { req: { method: 'GET', url: '/api/v1/version' } } }
    const app = { inject: async () => wrong, swagger: () => JSON.parse(documentText) }
    watchInProcess(app as never, report)
    await (app.inject as (options: unknown) => Promise<unknown>)({ url: '/api/v1/version' })
    expect(report.checked).toBe(1)
    expect(report.mismatches[0]).toMatch(/GET \/api\/v1\/version -> 200: the body does not match .*missingProperty":"commit"/)
  })

  it("reports a wrong answer sent over an in-process app's socket", async () => {
    const report = emptyReport()
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' }).end('{"version":"1","commit":"c"}')
    })
    watchInProcess({ inject: () => undefined, swagger: () => JSON.parse(documentText), server } as never, report)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    try {
      const { port } = server.address() as { port: number }
      await (await fetch(`http://127.0.0.1:${port}/api/v1/version`)).text()
      await waitFor('the response checked', () => report.checked === 1)
    } finally {
      server.close()
    }
    expect(report.mismatches).toHaveLength(1)
    expect(report.mismatches[0]).toMatch(/over a socket: GET \/api\/v1\/version -> 200: the body does not match .*missingProperty":"api_version"/)
  })

  it('records every response of a server process and reports the wrong ones', async () => {
    // A stand-in server, loaded with the same recorder as the e2e servers, that answers two wrong bodies and one right one.
    const server = `
      import { createServer } from 'node:http'
      const sse = 'event: run\\ndata: {"chat_id":"${CHAT}","run_id":"${RUN}","closed_tool_calls":[],"extra":1}\\n\\n'
      createServer((req, res) => {
        if (req.url === '/api/v1/version') return res.writeHead(200, { 'content-type': 'application/json' }).end('{"version":"1","commit":"c","api_version":"v1","extra":true}')
        if (req.url === '/api/v1') return res.writeHead(200, { 'content-type': 'application/json' }).end('{"version":"1","commit":"c","api_version":"v1"}')
        res.writeHead(200, { 'content-type': 'text/event-stream' }); res.write(sse); res.end()
      }).listen(0, '127.0.0.1', function () { process.send(this.address().port) })`
    const log = newLogFile()
    const child = spawn(process.execPath, ['--import', 'tsx', '--import', RECORDER_PATH, '--input-type=module', '-e', server], {
      cwd: REPO_ROOT,
      env: { ...process.env, PARLEY_CONTRACT_LOG: log },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    try {
      const port = await new Promise<number>((resolve, reject) => {
        child.once('message', (message) => resolve(Number(message)))
        child.once('exit', (code) => reject(new Error(`the stand-in server exited with ${code}`)))
      })
      for (const [method, path] of [['GET', '/api/v1/version'], ['GET', '/api/v1'], ['POST', `/api/v1/chats/${CHAT}/responses`]] as const) {
        await (await fetch(`http://127.0.0.1:${port}${path}`, { method })).text()
      }
      // A response is logged when its connection is done with it, a moment after the client has it all.
      await waitFor('three logged responses', () => existsSync(log) && readFileSync(log, 'utf8').trim().split('\n').length === 3)
    } finally {
      child.kill('SIGKILL')
    }
    expect(readFileSync(log, 'utf8').trim().split('\n')).toHaveLength(3)
    setLogDocument(log, documentText)
    const report = checkLogFiles(emptyReport())
    expect(report.checked).toBe(3)
    expect(report.frames).toBe(1)
    expect(report.mismatches, report.mismatches.join("\n")).toHaveLength(2)
    expect(report.mismatches[0]).toMatch(/GET \/api\/v1\/version -> 200: the body does not match .*additionalProperty":"extra"/)
    expect(report.mismatches[1]).toMatch(/frame 1 \(run\) does not match #\/components\/schemas\/RunEventData: .*additionalProperty":"extra"/)
  })
})
