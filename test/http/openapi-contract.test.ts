import SwaggerParser from '@apidevtools/swagger-parser'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { STREAM_ERROR_CODES } from '../../src/http/schemas/events.ts'
import { isFacadePath } from '../../src/http/openai/openai-error.ts'
import { responseIdOf } from '../../src/domain/openai/openai-ids.ts'
import { operationDocs } from '../../src/http/schemas/operation-docs.ts'
import { createTestApp, type TestContext, type TestOrg } from '../helpers/test-app.ts'
import { fundedOrg, parseSse, sandboxCatalogue } from '../helpers/turns.ts'

/**
 * `/openapi.json` as a contract a generator can use end to end (issue 13, decision 021): the turn's
 * stream, the error codes, security, servers, and a description and a working example for every
 * operation. That live answers match it is checked by test/helpers/contract-check.ts.
 */

type Schema = Record<string, any>
type Operation = {
  operationId: string
  description?: string
  security?: unknown[]
  requestBody?: { content: Record<string, { schema: Schema; example?: unknown }> }
  responses: Record<string, { description: string; headers?: Record<string, unknown>; content?: Record<string, { schema: Schema; 'x-sse-events'?: Record<string, string> }> }>
  'x-codeSamples'?: Array<{ lang: string; source: string }>
}
type Doc = {
  security: unknown[]
  servers: Array<{ url: string }>
  paths: Record<string, Record<string, Operation>>
  components: { schemas: Record<string, Schema>; securitySchemes: Record<string, Schema> }
}

let ctx: TestContext
let doc: Doc
let org: TestOrg
/** The app over a real socket. */
let base: string
const run = promisify(execFile)

beforeAll(async () => {
  ctx = await createTestApp({ catalogue: sandboxCatalogue() })
  doc = (await ctx.app.inject({ url: '/openapi.json' })).json()
  org = fundedOrg(ctx)
  base = await ctx.app.listen({ port: 0, host: '127.0.0.1' })
})
afterAll(async () => {
  await ctx.close()
})

const operations = () =>
  Object.entries(doc.paths).flatMap(([path, methods]) => Object.entries(methods).map(([method, operation]) => ({ path, method, operation })))
const schemaNamed = (ref: { $ref: string }) => doc.components.schemas[ref.$ref.replace('#/components/schemas/', '')]!

describe('the turn endpoint', () => {
  const turn = () => doc.paths['/api/v1/chats/{chat_id}/responses']!.post!

  it('documents its 200 as text/event-stream: the union of the events\' data, with each event\'s data schema in x-sse-events, and the order rules; with stream: false, application/json (TurnAnswer)', () => {
    const ok = turn().responses['200']!
    expect(Object.keys(ok.content!)).toEqual(['text/event-stream', 'application/json'])
    expect((ok.content!['application/json']!.schema as { $ref: string }).$ref).toBe('#/components/schemas/TurnAnswer')
    expect(ok.description).toMatch(/`run` \(always first\)/)
    const media = ok.content!['text/event-stream']!
    // What a generic SSE client yields per frame is the parsed data (decision 036): no {event, data} wrapper.
    const payload = schemaNamed(media.schema as { $ref: string })
    expect(payload.discriminator).toBeUndefined()
    const events = media['x-sse-events']!
    expect(Object.keys(events).sort()).toEqual(['block_start', 'block_stop', 'compacting', 'config_warnings', 'delta', 'done', 'error', 'run', 'translation_warnings'])
    expect(payload.anyOf.map((branch: { $ref: string }) => branch.$ref).sort()).toEqual(Object.values(events).sort())
    for (const [event, target] of Object.entries(events)) {
      expect(schemaNamed({ $ref: target }).description, event).toBeTruthy()
      expect(payload.description).toContain(`\`${event}\` → ${target.replace('#/components/schemas/', '')}`)
    }
  })

  it('sends only events the document names, each as its schema says (a real stream, parsed)', async () => {
    const chat = (await ctx.app.inject({ method: 'POST', url: '/api/v1/chats', headers: org.auth, payload: {} })).json()
    const res = await ctx.app.inject({
      method: 'POST',
      url: `/api/v1/chats/${chat.id}/responses`,
      headers: org.auth,
      payload: { model: 'sandbox/echo', input: [{ type: 'prompt', text: '/think a little\n/tool lookup {"q":"x"}\nhello' }] },
    })
    expect(res.statusCode).toBe(200)
    const names = parseSse(res.body).map((f) => f.event)
    const documented = Object.keys(turn().responses['200']!.content!['text/event-stream']!['x-sse-events']!)
    for (const name of names) expect(documented).toContain(name)
    expect(names).toEqual(expect.arrayContaining(['run', 'config_warnings', 'translation_warnings', 'block_start', 'delta', 'block_stop', 'done']))
  })

  it('documents every error status as JSON, with the codes it carries', () => {
    for (const [status, response] of Object.entries(turn().responses)) {
      if (status === '200') continue
      expect(Object.keys(response.content!), status).toEqual(['application/json'])
    }
    const codes = (status: string) => schemaNamed(turn().responses[status]!.content!['application/json']!.schema as { $ref: string }).properties.error.properties.code.enum
    expect([...codes('409')].sort()).toEqual(['idempotency_key_reused', 'retry_not_allowed', 'run_in_progress'])
    expect([...codes('422')].sort()).toEqual(['context_too_large', 'unknown_tool_use_id', 'unsupported_attachment', 'validation_failed'])
    expect(codes('402')).toEqual(['insufficient_balance'])
    const error = schemaNamed({ $ref: '#/components/schemas/ErrorEventData' })
    expect(error.properties.code.enum).toEqual([...STREAM_ERROR_CODES])
  })
})

describe('errors, rate limits and security', () => {
  it('gives every error response of every operation a code enum', () => {
    for (const { path, method, operation } of operations()) {
      for (const [status, response] of Object.entries(operation.responses)) {
        if (Number(status) < 400) continue
        // Statuses answered before any operation runs share the plain envelope; each has a code of its own (decision 036).
        if (status === '4XX') {
          // The OpenAI facade's paths share OpenAI's shape instead (decision 055).
          const shared = isFacadePath(path) ? 'OpenAIError4XX' : 'ErrorEnvelope'
          expect(response.content!['application/json']!.schema, `${method} ${path} 4XX`).toEqual({ $ref: `#/components/schemas/${shared}` })
          continue
        }
        const schema = schemaNamed(response.content!['application/json']!.schema as { $ref: string })
        expect(schema.properties.error.properties.code.enum.length, `${method} ${path} ${status}`).toBeGreaterThan(0)
      }
    }
  })

  it('documents 429 with Retry-After and the rate-limit headers on every keyed operation, and answers so', async () => {
    for (const { path, method, operation } of operations()) {
      const keyed = operation.security === undefined || operation.security.length > 0
      expect(operation.responses['429'] !== undefined, `${method} ${path}`).toBe(keyed)
      if (keyed) expect(Object.keys(operation.responses['429']!.headers!).sort()).toEqual(['retry-after', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'])
    }
    const limited = await createTestApp({ rateLimitPerMinute: 1 })
    try {
      const caller = limited.org()
      await limited.app.inject({ url: '/api/v1/namespaces', headers: caller.auth })
      const res = await limited.app.inject({ url: '/api/v1/namespaces', headers: caller.auth })
      expect(res.statusCode).toBe(429)
      for (const header of ['retry-after', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) expect(res.headers[header], header).toBeDefined()
    } finally {
      await limited.close()
    }
  })

  it('applies a described bearer scheme globally; public operations say security: [] and answer without a key, keyed ones answer 401', async () => {
    expect(doc.security).toEqual([{ apiKey: [] }])
    expect(doc.components.securitySchemes.apiKey).toMatchObject({ type: 'http', scheme: 'bearer' })
    expect(doc.components.securitySchemes.apiKey!.description).toMatch(/Authorization: Bearer/)
    expect(doc.servers.length).toBeGreaterThan(0)
    for (const { path, method, operation } of operations()) {
      const url = path.replace('{name}', 'sandbox/echo').replace(/\{[^}]+\}/g, '01a209db-233b-76f4-aa3f-a118e933b159')
      const res = await ctx.app.inject({ method: method.toUpperCase() as 'GET', url, ...(operation.requestBody ? { payload: {} } : {}) })
      const isPublic = Array.isArray(operation.security) && operation.security.length === 0
      if (isPublic) expect(res.statusCode, `${method} ${path}`).not.toBe(401)
      else expect(res.statusCode, `${method} ${path}`).toBe(401)
    }
  })

  it('is a valid OpenAPI 3.1 document', async () => {
    await expect(SwaggerParser.validate(structuredClone(doc) as never)).resolves.toBeTruthy()
  })
})

describe('descriptions and examples', () => {
  it('describes every operation and gives it a curl sample; request bodies carry an example', () => {
    for (const { path, method, operation } of operations()) {
      const name = `${method.toUpperCase()} ${path}`
      expect(operation.description?.length ?? 0, name).toBeGreaterThan(20)
      expect(operation['x-codeSamples']?.[0]?.source, name).toMatch(/^curl /)
      if (operation.requestBody) expect(operation.requestBody.content['application/json']!.example, name).toBeDefined()
    }
    expect(Object.keys(operationDocs).sort()).toEqual(operations().map((o) => o.operation.operationId).sort())
  })

  it('the turn sample names a real model', () => {
    const example = doc.paths['/api/v1/chats/{chat_id}/responses']!.post!.requestBody!.content['application/json']!.example as { model: string }
    expect(sandboxCatalogue().map((m) => m.name)).toContain(example.model)
  })

  /** A funded organisation with a chat per call, a finished run and a version of each configuration kind: what the examples' variables name. */
  async function exampleFixture() {
    const caller = fundedOrg(ctx)
    const newChat = async () => (await ctx.app.inject({ method: 'POST', url: '/api/v1/chats', headers: caller.auth, payload: { namespace: 'acme/support' } })).json().id as string
    const turn = await ctx.app.inject({ method: 'POST', url: `/api/v1/chats/${await newChat()}/responses`, headers: caller.auth, payload: { model: 'sandbox/echo', input: [{ type: 'prompt', text: 'hi' }] } })
    const runId = parseSse(turn.body)[0]!.data.run_id as string
    const versionOf = new Map<string, string>()
    for (const kind of ['instructions', 'tools', 'retention', 'budgets']) {
      const example = operations().find((o) => o.path === `/api/v1/config/${kind}` && o.method === 'post')!.operation.requestBody!.content['application/json']!.example
      const res = await ctx.app.inject({ method: 'POST', url: `/api/v1/config/${kind}`, headers: caller.auth, payload: example as object })
      const body = res.json()
      versionOf.set(kind, (Array.isArray(body) ? body[0] : body).id)
    }
    /** A conversation of the facade with one item, and that item's id (a fresh one each: one example deletes it). */
    const newConversation = async () => {
      const conversation = (await ctx.app.inject({ method: 'POST', url: '/v1/conversations', headers: caller.auth, payload: { items: [{ role: 'user', content: 'hi' }] } })).json().id as string
      const items = (await ctx.app.inject({ url: `/v1/conversations/${conversation}/items`, headers: caller.auth })).json().data as { id: string }[]
      return { CONVERSATION_ID: conversation, ITEM_ID: items[0]!.id }
    }
    /** The values of the variables for one operation's example (a fresh chat each: one example deletes it). */
    const variablesFor = async (path: string) => ({
      CHAT_ID: await newChat(),
      RUN_ID: runId,
      RESPONSE_ID: responseIdOf(runId),
      ...(await newConversation()),
      VERSION_ID: versionOf.get(/^\/api\/v1\/config\/([a-z]+)\//.exec(path)?.[1] ?? '') ?? '',
    })
    return { caller, variablesFor }
  }

  it('every example works: each answers 2xx on a fresh organisation', async () => {
    const { caller, variablesFor } = await exampleFixture()
    const failures: string[] = []
    for (const { path, method, operation } of operations()) {
      const example = operationDocs[operation.operationId]!.example
      const values = await variablesFor(path)
      const url = path.replace(/\{([^}]+)\}/g, (_, name: string) => {
        const value = example.params?.[name] ?? `$${name.toUpperCase()}`
        return value.startsWith('$') ? values[value.slice(1) as keyof typeof values] : value
      })
      const query = example.query ? `?${new URLSearchParams(example.query).toString()}` : ''
      const res = await ctx.app.inject({
        method: method.toUpperCase() as 'GET',
        url: `${url}${query}`,
        headers: operation.security?.length === 0 ? {} : caller.auth,
        ...(example.body === undefined ? {} : { payload: example.body as object }),
      })
      if (res.statusCode >= 300) failures.push(`${method.toUpperCase()} ${url}${query}: ${res.statusCode} ${res.body.slice(0, 200)}`)
    }
    expect(failures).toEqual([])
  })

  it('every curl sample works as written, run by sh against a real server', async () => {
    const { caller, variablesFor } = await exampleFixture()
    const failures: string[] = []
    for (const { path, method, operation } of operations()) {
      const sample = operation['x-codeSamples']![0]!.source
      const env = { ...process.env, API: base, KEY: caller.key, ...(await variablesFor(path)) }
      const { stdout } = await run('sh', ['-c', `${sample} -o /dev/null -w '%{http_code}'`], { env })
      if (!/^2\d\d$/.test(stdout)) failures.push(`${method.toUpperCase()} ${path}: ${stdout}\n${sample}`)
    }
    expect(failures).toEqual([])
  })
})

describe('the API reference', () => {
  it('/docs serves the reference page, and /docs/openapi.json and /docs/openapi.yaml the document', async () => {
    const page = await fetch(`${base}/docs`)
    expect(page.status).toBe(200)
    expect(page.headers.get('content-type')).toMatch(/^text\/html/)
    expect(await page.text()).toMatch(/openapi\.json/)
    const json = await fetch(`${base}/docs/openapi.json`)
    expect(json.status).toBe(200)
    expect(await json.json()).toEqual(doc)
    const yaml = await fetch(`${base}/docs/openapi.yaml`)
    expect(yaml.status).toBe(200)
    const text = await yaml.text()
    expect(text).toMatch(/^openapi: 3\.1\.0/m)
    expect(text).toMatch(/createResponse/)
  })
})
