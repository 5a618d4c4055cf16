import type { SwaggerOptions } from '@fastify/swagger'
import type { FastifySchema } from 'fastify'
import { Type } from '@sinclair/typebox'
import { ERROR_RESPONSES } from './common.ts'
import { operationDocs, type OperationDoc } from './operation-docs.ts'

/**
 * How `/openapi.json` is made (decision 021): the routes' schemas, plus what only the document
 * needs: the described bearer scheme applied globally, `servers`, the 429 of the rate-limited
 * operations, and a description and a working example for every operation (operation-docs.ts).
 */

const SECURITY_SCHEME = {
  type: 'http',
  scheme: 'bearer',
  description:
    'An API key of your organisation, sent as `Authorization: Bearer <API_KEY>`. On the first start of an empty development server the key of the `dev` organisation is printed and written to `DATA_DIR/dev-api-key.txt`; `npm run admin -- key create --org <slug>` makes more. Operations marked with no security are public.',
} as const

const TAGS = [
  { name: 'public', description: 'Discovery, version, platform updates and health: no API key.' },
  { name: 'catalogue', description: 'The models the service offers, with prices: no API key.' },
  { name: 'chats', description: 'Chats, their ledgers of parts, and turns streamed as server-sent events.' },
  { name: 'runs', description: 'One model call each: inspect, cancel.' },
  { name: 'configuration', description: 'Versioned instructions, tools, retention and context budgets per namespace.' },
  { name: 'namespaces', description: 'The namespaces your chats use.' },
  { name: 'usage', description: 'Tokens and spend over time.' },
]

export function openapiOptions(version: string): SwaggerOptions {
  const options: SwaggerOptions = {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Parley Conversation API',
        version,
        description: [
          'Chats as ledgers of parts, turns streamed as server-sent events, versioned configuration, catalogue and usage.',
          'Every error is JSON, `{"error": {"code", "message", "details"?, "hint"?}}`; each operation lists the codes it answers per status.',
          'With the sandbox provider (on unless NODE_ENV=production) the model `sandbox/echo` answers offline, steered by prompt lines starting with `/` (`/think`, `/tool NAME {json}`, `/fail`, ...).',
        ].join(' '),
      },
      servers: [
        { url: '/', description: 'The server that serves this document' },
        { url: 'http://127.0.0.1:8080', description: 'A local server started with `npm start`' },
      ],
      components: { securitySchemes: { apiKey: SECURITY_SCHEME } },
      security: [{ apiKey: [] }],
      tags: TAGS,
    },
    transform: transformRoute,
    transformObject: (documentObject) =>
      'openapiObject' in documentObject ? (completeDocument(documentObject.openapiObject as OpenApiDocument) as never) : documentObject.swaggerObject,
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => String(json.$id ?? `def-${i}`) },
  }
  return options
}

type RouteSchema = FastifySchema & { security?: unknown[]; params?: unknown }

/** Per route, before conversion: wildcard paths get their parameter name, and routes that name no security are public. */
function transformRoute({ schema, url }: { schema: FastifySchema; url: string }) {
  const route = schema as RouteSchema | undefined
  const withSecurity: RouteSchema = { ...route, security: route?.security ?? [] }
  // Model names contain slashes, so the route is a wildcard; document it as the {name} it is.
  if (!url.endsWith('/*')) return { schema: withSecurity, url }
  const { params: _wildcard, ...rest } = withSecurity
  const params = { type: 'object', required: ['name'], properties: { name: { type: 'string', description: 'Public model name; may contain slashes, e.g. `sandbox/echo`.' } } }
  return { schema: { ...rest, params } as never, url: `${url.slice(0, -2)}/:name` }
}

type Operation = {
  operationId?: string
  description?: string
  security?: unknown[]
  requestBody?: { content: Record<string, { example?: unknown; schema?: unknown }> }
  responses: Record<string, unknown>
  [extension: `x-${string}`]: unknown
}
type OpenApiDocument = { paths?: Record<string, Record<string, Operation>>; components?: { schemas?: Record<string, unknown> } }

const RATE_LIMIT_HEADERS = {
  'retry-after': { description: 'Seconds until the window frees a request.', schema: Type.Integer({ minimum: 0 }) },
  'x-ratelimit-limit': { description: 'Requests a minute allowed per API key.', schema: Type.Integer({ minimum: 0 }) },
  'x-ratelimit-remaining': { description: 'Requests left in the current window.', schema: Type.Integer({ minimum: 0 }) },
  'x-ratelimit-reset': { description: 'Seconds until the window resets.', schema: Type.Integer({ minimum: 0 }) },
}

const rateLimited = {
  description: `${ERROR_RESPONSES[429].description} Only when the server is started with RATE_LIMIT_PER_MINUTE.`,
  headers: RATE_LIMIT_HEADERS,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/RateLimitedError' } } },
}

const badPathEncoding = {
  description: 'A path parameter that is not valid percent-encoding.',
  content: { 'application/json': { schema: { $ref: '#/components/schemas/BadRequestError' } } },
}

/** The whole document, once built: what each operation needs beyond its route's schema. */
function completeDocument(document: OpenApiDocument): OpenApiDocument {
  for (const [path, methods] of Object.entries(document.paths ?? {})) {
    for (const [method, operation] of Object.entries(methods)) {
      // Operations behind an API key are the rate-limited ones (decision 011).
      if (operation.security === undefined || operation.security.length > 0) operation.responses['429'] = rateLimited
      // A path whose parameter is not valid percent-encoding (`%ZZ`) is refused by the router, 400, before
      // any route runs: every operation with a path parameter can answer it (the fuzz suite sends it).
      if (path.includes('{') && operation.responses['400'] === undefined) operation.responses['400'] = badPathEncoding
      const doc = operation.operationId ? operationDocs[operation.operationId] : undefined
      if (doc) applyDoc(operation, doc, method, path)
    }
  }
  return document
}

function applyDoc(operation: Operation, doc: OperationDoc, method: string, path: string): void {
  operation.description ??= doc.description
  const json = operation.requestBody?.content['application/json']
  if (json && doc.example.body !== undefined) json.example = doc.example.body
  operation['x-codeSamples'] = [{ lang: 'shell', label: 'curl', source: curlOf(method, path, doc, operation.security?.length !== 0) }]
}

/** A curl command for the example, with `$API`, `$KEY` and the path's ids as shell variables. */
export function curlOf(method: string, path: string, doc: OperationDoc, keyed: boolean): string {
  const url = path.replace(/\{([^}]+)\}/g, (_, name: string) => doc.example.params?.[name] ?? `$${name.toUpperCase()}`)
  const query = doc.example.query ? `?${new URLSearchParams(doc.example.query).toString()}` : ''
  const lines = [`curl -s${doc.example.stream ? 'N' : ''}${method === 'get' ? '' : ` -X ${method.toUpperCase()}`} "$API${url}${query}"`]
  if (keyed) lines.push(`-H "Authorization: Bearer $KEY"`)
  if (doc.example.body !== undefined) lines.push(`-H 'content-type: application/json'`, `-d '${JSON.stringify(doc.example.body)}'`)
  return lines.join(' \\\n  ')
}
