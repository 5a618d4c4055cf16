import SwaggerParser from '@apidevtools/swagger-parser'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestContext } from '../helpers/test-app.ts'

type Operation = {
  operationId?: string
  security?: unknown[]
  parameters?: Array<{ in: string; name: string; required?: boolean }>
  requestBody?: { content: Record<string, { schema: unknown }> }
  responses: Record<string, unknown>
}
type OpenApiDoc = { openapi: string; paths: Record<string, Record<string, Operation>>; components?: { schemas?: Record<string, unknown> } }

/**
 * Every implemented route, as the OpenAPI document must name it, with the statuses spec §4 lists for it
 * (and 400 for a malformed body on chat creation; keyed routes also list 429, decision 021; keyed
 * reads list 400 for a malformed `x-parley-txid` header, decision 029). Decision 036: every operation
 * lists 400 (an HTTP/1.1 request without Host) and `4XX` (the envelope of 405, 408 and 431, answered
 * before any operation runs), and every operation other than a GET lists 413 (a body over 1 MiB) and
 * 415 (a body declared in a charset other than UTF-8, decision 057).
 */
const ROUTES: Array<{ method: string; path: string; keyed: boolean; statuses: string[] }> = [
  { method: 'get', path: '/', keyed: false, statuses: ['200', '400'] },
  { method: 'get', path: '/llms.txt', keyed: false, statuses: ['200', '400'] },
  { method: 'get', path: '/api/v1', keyed: false, statuses: ['200', '400'] },
  { method: 'get', path: '/api/v1/version', keyed: false, statuses: ['200', '400'] },
  { method: 'get', path: '/api/v1/updates', keyed: false, statuses: ['200', '400', '500'] },
  { method: 'get', path: '/v1/catalogue', keyed: false, statuses: ['200', '400', '404', '500', '503'] },
  { method: 'get', path: '/v1/catalogue/{name}', keyed: false, statuses: ['200', '400', '404', '500', '503'] },
  { method: 'get', path: '/v1/catalogue/models.md', keyed: false, statuses: ['200', '400', '404', '500', '503'] },
  { method: 'get', path: '/api/v1/chats', keyed: true, statuses: ['200', '400', '401', '422', '500', '503'] },
  { method: 'post', path: '/api/v1/chats', keyed: true, statuses: ['201', '400', '401', '413', '415', '422', '500', '503'] },
  { method: 'get', path: '/api/v1/chats/{chat_id}', keyed: true, statuses: ['200', '400', '401', '404', '422', '500', '503'] },
  { method: 'delete', path: '/api/v1/chats/{chat_id}', keyed: true, statuses: ['204', '400', '401', '404', '413', '415', '422', '500', '503'] },
  { method: 'get', path: '/api/v1/chats/{chat_id}/history', keyed: true, statuses: ['200', '400', '401', '404', '422', '500', '503'] },
  { method: 'get', path: '/api/v1/namespaces', keyed: true, statuses: ['200', '400', '401', '422', '500', '503'] },
  { method: 'get', path: '/api/v1/models', keyed: true, statuses: ['200', '400', '401', '422', '500', '503'] },
]

let ctx: TestContext
let doc: OpenApiDoc

beforeAll(async () => {
  ctx = await createTestApp()
  const res = await ctx.app.inject({ url: '/openapi.json' })
  expect(res.statusCode).toBe(200)
  expect(res.headers['content-type']).toMatch(/^application\/json/)
  doc = res.json()
})
afterAll(async () => {
  await ctx.close()
})

const operation = (path: string, method: string) => doc.paths[path]?.[method]

describe('/openapi.json', () => {
  it('validates as an OpenAPI 3.x document', async () => {
    expect(doc.openapi).toMatch(/^3\.\d+\.\d+$/)
    await expect(SwaggerParser.validate(structuredClone(doc) as never)).resolves.toBeTruthy()
  })

  it('names every implemented route, with its statuses', () => {
    for (const route of ROUTES) {
      const op = operation(route.path, route.method)
      expect(op, `${route.method.toUpperCase()} ${route.path}`).toBeDefined()
      const statuses = [...route.statuses, ...(route.keyed ? ['429'] : []), '4XX']
      expect(Object.keys(op!.responses).sort(), `${route.method.toUpperCase()} ${route.path}`).toEqual([...statuses].sort())
    }
  })

  it('documents only routes the app serves', () => {
    for (const [path, methods] of Object.entries(doc.paths)) {
      // The model routes (the catalogue's, and OpenAI's Models API) are wildcards (names contain slashes), documented as {name}.
      const url = path === '/v1/catalogue/{name}' || path === '/v1/models/{name}' ? path.replace('{name}', '*') : path.replace(/\{([^}]+)\}/g, ':$1')
      for (const method of Object.keys(methods)) {
        expect(ctx.app.hasRoute({ method: method.toUpperCase() as 'GET', url }), `${method.toUpperCase()} ${path}`).toBe(true)
      }
    }
  })

  it('marks keyed operations with the bearer scheme and public ones without', () => {
    for (const route of ROUTES) {
      const op = operation(route.path, route.method)!
      const keyed = Array.isArray(op.security) && op.security.length > 0
      expect(keyed, `${route.method.toUpperCase()} ${route.path}`).toBe(route.keyed)
    }
  })

  it('gives every operation a unique operationId', () => {
    const ids = ROUTES.map((r) => operation(r.path, r.method)!.operationId)
    expect(ids.every((id) => typeof id === 'string' && id.length > 0)).toBe(true)
    expect(new Set(ids).size).toBe(ids.length)
  })

  it('documents the catalogue model name and chat ids as required path parameters', () => {
    const model = operation('/v1/catalogue/{name}', 'get')!
    expect(model.parameters).toContainEqual(expect.objectContaining({ in: 'path', name: 'name', required: true }))
    expect(model.parameters!.some((p) => p.name === '*')).toBe(false)
    for (const method of ['get', 'delete']) {
      expect(operation('/api/v1/chats/{chat_id}', method)!.parameters).toContainEqual(
        expect.objectContaining({ in: 'path', name: 'chat_id', required: true }),
      )
    }
  })

  it('documents the query parameters of the list operations', () => {
    const names = (path: string) => operation(path, 'get')!.parameters!.filter((p) => p.in === 'query').map((p) => p.name).sort()
    expect(names('/api/v1/chats')).toEqual(['after_id', 'before_id', 'limit', 'namespace'])
    expect(names('/api/v1/chats/{chat_id}/history')).toEqual(['after_ordinal', 'before_ordinal', 'include', 'limit'])
  })

  it('documents the chat creation body, which rejects unknown properties', async () => {
    const dereferenced = (await SwaggerParser.dereference(structuredClone(doc) as never)) as unknown as OpenApiDoc
    const body = dereferenced.paths['/api/v1/chats']!.post!.requestBody!.content['application/json']!.schema as {
      additionalProperties?: boolean
      properties: Record<string, unknown>
    }
    expect(Object.keys(body.properties).sort()).toEqual(['description', 'namespace', 'title', 'user_metadata'])
    expect(body.additionalProperties).toBe(false)
  })
})
