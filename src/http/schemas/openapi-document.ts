import type { SwaggerOptions } from '@fastify/swagger'
import type { FastifySchema } from 'fastify'
import { Type } from '@sinclair/typebox'
import { ERROR_RESPONSES } from './common.ts'
import { operationDocs, type OperationDoc } from './operation-docs.ts'
import { isFacadePath } from '../openai/openai-error.ts'

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
  parameters?: unknown[]
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

/** The turn route's 429 has a second cause, and its 503 a third (docs/decisions/033-running-run-caps.md). */
const turnRateLimited = {
  ...rateLimited,
  description: `${rateLimited.description} Also, whatever that setting, when the organisation already has MAX_RUNNING_RUNS_PER_ORG (default 64) customer runs \`running\` across its chats: \`details: {reason: "running_runs", limit}\`, \`Retry-After\` in seconds; nothing was written. Wait for a run to finish (or cancel one) and submit again.`,
}

function documentTurnCapacity(operation: Operation): void {
  const unavailable = operation.responses['503'] as Response | undefined
  operation.responses['503'] = {
    ...unavailable,
    description: `${unavailable?.description ?? ''} Also when this node already serves MAX_CONCURRENT_TURNS (default 1024) turns at once: \`details: {reason: "concurrent_turns", limit}\`, answered before the body is read, nothing written; and while it serves SHED_FROM_TURNS (default 32) turns or more with its event loop running SHED_LOOP_DELAY_MS (default 3) late: \`details: {reason: "overloaded", loop_delay_ms}\`. Retry after \`Retry-After\` seconds.`.trim(),
    headers: { ...unavailable?.headers, 'retry-after': { description: 'Seconds to wait before submitting again.', schema: Type.Integer({ minimum: 0 }) } },
    content: unavailable?.content ?? { 'application/json': { schema: { $ref: '#/components/schemas/UnavailableError' } } },
  }
}

/**
 * What any operation may answer before it runs (decision 036): Node's parser and the router refuse
 * some requests whatever their target, in the envelope with a code of their own.
 */
const beforeTheOperation = {
  description:
    'Refused before the operation runs, in the error envelope: 408 `request_timeout` (the request was not received in time), 431 `headers_too_large` (request line and headers over 16 KB). A method the path does not serve is 405 `method_not_allowed` with `Allow`.',
  content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorEnvelope' } } },
}

/** HTTP/1.1 requires Host (RFC 9112 §3.2): checked before any route runs (src/http/plugins/error-handler.ts). */
const missingHost = {
  description: 'An HTTP/1.1 request without a Host header, refused before the operation runs.',
  content: { 'application/json': { schema: { $ref: '#/components/schemas/BadRequestError' } } },
}

/** A route that takes no body still bounds one sent to it (src/http/plugins/bounded-body.ts): 413 past 1 MiB. */
const bodyOverLimit = {
  description: 'This operation takes no body, but one sent to it is still bounded: over 1 MiB it is refused unread.',
  content: { 'application/json': { schema: { $ref: '#/components/schemas/PayloadTooLargeError' } } },
}

/** Every operation that reads a body refuses one declared in a charset other than UTF-8, before it runs (bounded-body.ts, decision 057). */
const foreignCharset = {
  description:
    "The body's Content-Type declares a charset other than UTF-8 (`charset=utf-16`, `charset=latin1`, ...): refused before the body is read, nothing written. Bodies are read as UTF-8 only: send them encoded so, with `charset=utf-8` or no charset. The message names the charset declared.",
  content: { 'application/json': { schema: { $ref: '#/components/schemas/UnsupportedMediaTypeError' } } },
}

const badPathEncoding = {
  description: 'A path parameter that is not valid percent-encoding.',
  content: { 'application/json': { schema: { $ref: '#/components/schemas/BadRequestError' } } },
}

type Response = { description?: string; headers?: Record<string, unknown>; content?: unknown }

const PARLEY_ANSWERS = { rateLimited, badPathEncoding, missingHost, bodyOverLimit, foreignCharset, beforeTheOperation }
const openai = (schema: string, response: Response): Response => ({ ...response, content: { 'application/json': { schema: { $ref: `#/components/schemas/${schema}` } } } })
const OPENAI_ANSWERS = {
  rateLimited: openai('OpenAIError429', rateLimited),
  badPathEncoding: openai('OpenAIError400', badPathEncoding),
  missingHost: openai('OpenAIError400', missingHost),
  bodyOverLimit: openai('OpenAIError413', bodyOverLimit),
  foreignCharset: openai('OpenAIError415', foreignCharset),
  beforeTheOperation: openai('OpenAIError4XX', {
    description: "Refused before the operation runs, in OpenAI's error shape: a method the path does not serve is 405 `method_not_allowed` with `Allow`.",
  }),
}

const TXID_FORMAT = { type: 'string', pattern: '^[0-9a-fA-F]{16}$', example: '00000000002df417' }

/** Read-your-writes across nodes (decision 029): the TXID a keyed read may present. */
const txidParameter = {
  in: 'header',
  name: 'x-parley-txid',
  required: false,
  description:
    'The `x-parley-txid` of an earlier write\'s answer, sent back unchanged (the `parley-txid` cookie does the same; this header wins). On a LiteFS replica the read waits, at most 2 s, until the replica has that write; else 503. Not 16 hexadecimal digits: 400.',
  schema: TXID_FORMAT,
}

/** What a write's answer says of the position it left the database at (with LiteFS only). */
const TXID_HEADERS = {
  'x-parley-txid': {
    description:
      "With LiteFS: the primary's replication position (TXID) once this write is in the database; send it back on a read as `x-parley-txid` to read your write on any node. A turn's stream carries its admission's TXID here and the final one as a trailer of the same name.",
    schema: TXID_FORMAT,
  },
  'set-cookie': {
    description: 'With LiteFS: `parley-txid=<TXID>; Max-Age=300; Path=/; HttpOnly; SameSite=Lax`, the same TXID as a cookie, which a read presents like the header.',
    schema: { type: 'string' },
  },
}

/** Keyed reads present a TXID: a malformed header is a 400, a replica that does not catch up in time a 503 with Retry-After. */
function documentReadYourWrites(operation: Operation): void {
  operation.parameters = [...(operation.parameters ?? []), txidParameter]
  const badRequest = operation.responses['400'] as Response | undefined
  operation.responses['400'] = badRequest
    ? { ...badRequest, description: `${badRequest.description ?? ''} Or a malformed \`x-parley-txid\` header.`.trim() }
    : { description: 'A malformed `x-parley-txid` header (16 hexadecimal digits).', content: { 'application/json': { schema: { $ref: '#/components/schemas/BadRequestError' } } } }
  const unavailable = operation.responses['503'] as Response | undefined
  operation.responses['503'] = {
    ...unavailable,
    description: `${unavailable?.description ?? ''} Also a LiteFS replica that did not reach the read's \`x-parley-txid\` within 2 s: retry after \`Retry-After\` seconds.`.trim(),
    headers: { ...unavailable?.headers, 'retry-after': { description: 'Seconds to wait before reading again (a replica catching up).', schema: Type.Integer({ minimum: 0 }) } },
    content: unavailable?.content ?? { 'application/json': { schema: { $ref: '#/components/schemas/UnavailableError' } } },
  }
}

function documentWritePosition(operation: Operation): void {
  for (const [status, response] of Object.entries(operation.responses)) {
    if (/^2\d\d$/.test(status)) (response as Response).headers = { ...(response as Response).headers, ...TXID_HEADERS }
  }
}

type Schema = { oneOf?: Array<{ $ref?: string }>; discriminator?: { propertyName: string; mapping?: Record<string, string> }; properties?: Record<string, { const?: unknown; enum?: unknown[] }> }

/**
 * A discriminator's `mapping`, from the tag each named variant holds (decision 036). Without one,
 * OpenAPI takes a variant's component name for its tag value (openapi-typescript typed `kind` as
 * `"TextBlockStart"`). Only the document gets it: Ajv, which validates requests, refuses `mapping`.
 */
function mapDiscriminators(schemas: Record<string, Schema>): void {
  for (const schema of Object.values(schemas)) {
    const tag = schema.discriminator?.propertyName
    if (tag === undefined || !schema.oneOf) continue
    const mapping: Record<string, string> = {}
    for (const { $ref } of schema.oneOf) {
      const variant = $ref?.startsWith('#/components/schemas/') ? schemas[$ref.slice('#/components/schemas/'.length)] : undefined
      const property = variant?.properties?.[tag]
      const values = property?.const !== undefined ? [property.const] : (property?.enum ?? [])
      if (values.length === 0) throw new Error(`a variant of a union tagged by "${tag}" is not a named schema with that tag: ${$ref}`)
      for (const value of values) mapping[String(value)] = $ref!
    }
    schema.discriminator = { propertyName: tag, mapping }
  }
}

/** The whole document, once built: what each operation needs beyond its route's schema. */
function completeDocument(document: OpenApiDocument): OpenApiDocument {
  mapDiscriminators((document.components?.schemas ?? {}) as Record<string, Schema>)
  for (const [path, methods] of Object.entries(document.paths ?? {})) {
    for (const [method, operation] of Object.entries(methods)) {
      const keyed = operation.security === undefined || operation.security.length > 0
      if (keyed && method === 'get') documentReadYourWrites(operation)
      if (keyed && method !== 'get') documentWritePosition(operation)
      // The OpenAI facade answers the same refusals in OpenAI's shape (decision 055).
      const answers = isFacadePath(path) ? OPENAI_ANSWERS : PARLEY_ANSWERS
      // Operations behind an API key are the rate-limited ones (decision 011).
      if (keyed) operation.responses['429'] = operation.operationId === 'createResponse' ? turnRateLimited : answers.rateLimited
      if (operation.operationId === 'createResponse') documentTurnCapacity(operation)
      // A path whose parameter is not valid percent-encoding (`%ZZ`) is refused by the router, 400, before
      // any route runs: every operation with a path parameter can answer it (the fuzz suite sends it).
      if (path.includes('{') && operation.responses['400'] === undefined) operation.responses['400'] = answers.badPathEncoding
      operation.responses['400'] ??= answers.missingHost
      if (method !== 'get') operation.responses['413'] ??= answers.bodyOverLimit
      if (method !== 'get') operation.responses['415'] ??= answers.foreignCharset
      operation.responses['4XX'] ??= answers.beforeTheOperation
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
