import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import { createParser } from 'eventsource-parser'
import { isFacadePath } from '../../src/http/openai/openai-error.ts'

/**
 * Checks live responses against `/openapi.json` (issue 13, decision 021): the status must be one
 * the operation lists, the content type one that status documents, and the body (each SSE frame's
 * `{event, data}` for a stream) must validate against its schema with `additionalProperties: false`
 * forced onto every object schema that lists properties, so a field the document does not name is
 * a mismatch too. Validators are compiled once per document text and per response schema.
 */

export type RecordedResponse = {
  method: string
  /** Path and query as requested. */
  url: string
  status: number
  contentType: string | null
  body: string
  /** False when the connection closed before the response ended (a dropped stream): only whole frames are checked. */
  complete: boolean
}

export type ContractReport = { checked: number; frames: number; unmatched: number; mismatches: string[] }

type Json = Record<string, unknown>
type MediaType = { schema?: unknown; 'x-sse-events'?: Record<string, string> }
type Operation = { responses?: Record<string, { content?: Record<string, MediaType> }> }
type Document = { paths: Record<string, Record<string, Operation>>; components?: { schemas?: Record<string, unknown> } }

/**
 * Statuses Node or the router answer for any path before an operation runs, in the error envelope.
 * The document covers them with each operation's `4XX` (decision 036); a range key matches these
 * only, so a status an operation does not list by number is still a mismatch.
 */
const EDGE_STATUSES = new Set([405, 408, 431])
/** Served beside the API and hidden from the document: the document itself and its reference. */
const UNDOCUMENTED = [/^\/openapi\.json$/, /^\/docs(\/.*)?$/]

const SCHEMA_MAPS = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas']
const SCHEMA_LISTS = ['allOf', 'anyOf', 'oneOf', 'prefixItems']
const SCHEMA_SLOTS = ['items', 'additionalProperties', 'not', 'if', 'then', 'else', 'contains', 'propertyNames', 'unevaluatedProperties', 'unevaluatedItems']

/**
 * A copy of a schema in which every object schema that lists its properties has
 * `additionalProperties: false` unless it says otherwise. Only subschemas are visited: an `example`,
 * `enum` or `const` value is data and stays as it is.
 */
export function forceClosedObjects(schema: unknown): unknown {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return schema
  const out: Json = { ...(schema as Json) }
  for (const key of SCHEMA_MAPS) {
    const map = out[key]
    if (typeof map === 'object' && map !== null) out[key] = Object.fromEntries(Object.entries(map).map(([name, sub]) => [name, forceClosedObjects(sub)]))
  }
  for (const key of SCHEMA_LISTS) if (Array.isArray(out[key])) out[key] = (out[key] as unknown[]).map(forceClosedObjects)
  for (const key of SCHEMA_SLOTS) if (key in out) out[key] = forceClosedObjects(out[key])
  // Ajv refuses a discriminator's `mapping`; it finds each variant's tag itself.
  if (typeof out.discriminator === 'object' && out.discriminator !== null && 'mapping' in out.discriminator) {
    const { mapping: _mapping, ...discriminator } = out.discriminator as Json
    out.discriminator = discriminator
  }
  if (typeof out.properties === 'object' && out.properties !== null && !('patternProperties' in out) && !('additionalProperties' in out) && !('unevaluatedProperties' in out)) {
    out.additionalProperties = false
  }
  return out
}

/** The document with every schema closed: the components' and each response's. */
function closeDocument(document: Document): Document {
  const schemas = Object.fromEntries(Object.entries(document.components?.schemas ?? {}).map(([name, schema]) => [name, forceClosedObjects(schema)]))
  const paths: Document['paths'] = {}
  for (const [path, methods] of Object.entries(document.paths)) {
    paths[path] = {}
    for (const [method, operation] of Object.entries(methods)) {
      const responses = Object.fromEntries(
        Object.entries(operation.responses ?? {}).map(([status, response]) => [
          status,
          response.content
            ? { ...response, content: Object.fromEntries(Object.entries(response.content).map(([media, m]) => [media, { ...m, schema: forceClosedObjects(m.schema) }])) }
            : response,
        ]),
      )
      paths[path][method] = { ...operation, responses }
    }
  }
  return { ...document, components: { ...document.components, schemas }, paths }
}

/** Where and what, with the offending property or allowed values (Ajv's own text omits them). */
function describeErrors(validate: ValidateFunction): string {
  return (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? ''} ${JSON.stringify(e.params)}`).join('; ')
}

/** The path as the router matches it: percent-decoded where it decodes, without a trailing slash (ignoreTrailingSlash). */
function routedPath(url: string): string {
  const raw = url.split('?')[0] ?? ''
  let path: string
  try {
    path = decodeURI(raw)
  } catch {
    path = raw
  }
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path
}

const escapePointer = (token: string) => token.replace(/~/g, '~0').replace(/\//g, '~1')

export type ContractValidator = { check: (response: RecordedResponse) => { mismatches: string[]; frames: number; matched: boolean } }

const validators = new Map<string, ContractValidator>()

/** The validator of one document, made once per document text. */
export function contractValidatorFor(documentText: string): ContractValidator {
  let validator = validators.get(documentText)
  if (!validator) {
    validator = createContractValidator(JSON.parse(documentText) as Document)
    validators.set(documentText, validator)
  }
  return validator
}

function createContractValidator(rawDocument: Document): ContractValidator {
  const document = closeDocument(rawDocument)
  const ajv = new Ajv2020({ strict: false, discriminator: true, allErrors: false, validateFormats: true })
  addFormats.default(ajv)
  ajv.addSchema(document as never, 'contract')
  const compiled = new Map<string, ValidateFunction>()
  const validatorAt = (pointer: string) => {
    let validate = compiled.get(pointer)
    if (!validate) {
      validate = ajv.compile({ $ref: `contract#${pointer}` })
      compiled.set(pointer, validate)
    }
    return validate
  }
  /** The error shape a path answers in: OpenAI's on the facade's paths (decision 055), Parley's envelope elsewhere. */
  const envelopeOf = (path: string) => validatorAt(isFacadePath(path) ? '/components/schemas/OpenAIError4XX' : '/components/schemas/ErrorEnvelope')

  // Literal paths first, so /v1/catalogue/models.md is not taken for /v1/catalogue/{name}.
  const routes = Object.keys(document.paths)
    .map((template) => ({
      template,
      params: (template.match(/\{/g) ?? []).length,
      // Model names contain slashes: {name} takes the rest of the path.
      pattern: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{name\}/g, '.+').replace(/\{[^}]+\}/g, '[^/]+')}$`),
    }))
    .sort((a, b) => a.params - b.params)

  function check(response: RecordedResponse): { mismatches: string[]; frames: number; matched: boolean } {
    const path = routedPath(response.url)
    const method = response.method.toLowerCase()
    const where = `${response.method} ${response.url.slice(0, 120)} -> ${response.status}`
    const mismatches: string[] = []
    const media = (response.contentType ?? '').split(';')[0]!.trim().toLowerCase()
    const route = routes.find((r) => r.pattern.test(path))
    const operation = route ? document.paths[route.template]![method] : undefined

    const validateJson = (pointer: string | null, validate: ValidateFunction, what: string) => {
      let value: unknown
      try {
        value = JSON.parse(response.body)
      } catch {
        mismatches.push(`${where}: ${what} is not JSON: ${response.body.slice(0, 200)}`)
        return
      }
      if (!validate(value)) mismatches.push(`${where}: ${what} does not match ${pointer ?? 'the schema'}: ${describeErrors(validate)}; body ${response.body.slice(0, 300)}`)
    }

    if (method === 'head' || !response.complete && media !== 'text/event-stream') {
      return { mismatches, frames: 0, matched: operation !== undefined }
    }
    if (!operation) {
      // Not an operation of the document: errors are still in the envelope; the hidden routes are not checked.
      if (response.status >= 400) {
        if (media !== 'application/json') mismatches.push(`${where}: an error answered as ${media || 'no content type'}`)
        else validateJson(null, envelopeOf(path), 'the error body')
      } else if (!UNDOCUMENTED.some((p) => p.test(path))) {
        mismatches.push(`${where}: no operation of the document serves ${response.method} ${path}`)
      }
      return { mismatches, frames: 0, matched: false }
    }

    const responses = operation.responses ?? {}
    const status = String(response.status)
    const key = [status, ...(EDGE_STATUSES.has(response.status) ? [`${status[0]}XX`, 'default'] : [])].find((k) => k in responses)
    const documented = key === undefined ? undefined : responses[key]
    if (!documented) {
      if (EDGE_STATUSES.has(response.status) && media === 'application/json') validateJson(null, envelopeOf(path), 'the error body')
      else mismatches.push(`${where}: status ${status} is not documented for ${method.toUpperCase()} ${route!.template} (documented: ${Object.keys(responses).join(', ')})`)
      return { mismatches, frames: 0, matched: true }
    }
    const content = documented.content
    if (!content) {
      if (response.body.length > 0) mismatches.push(`${where}: documented without a body, answered ${response.body.length} bytes`)
      return { mismatches, frames: 0, matched: true }
    }
    if (!(media in content)) {
      mismatches.push(`${where}: content type ${media || '(none)'} is not documented (documented: ${Object.keys(content).join(', ')})`)
      return { mismatches, frames: 0, matched: true }
    }
    const pointer = `/paths/${escapePointer(route!.template)}/${method}/responses/${key}/content/${escapePointer(media)}/schema`
    if (media === 'application/json') {
      validateJson(pointer, validatorAt(pointer), 'the body')
      return { mismatches, frames: 0, matched: true }
    }
    if (media === 'text/event-stream') {
      // The event's name picks its data's schema (`x-sse-events`, decision 036); without that map, the schema is of `{event, data}`.
      const events = content[media]!['x-sse-events']
      const validateFrame = events
        ? (event: string, data: unknown) => {
            const target = events[event]
            if (target === undefined) return `event "${event}" is not one of x-sse-events (${Object.keys(events).join(', ')})`
            const validate = validatorAt(target.replace(/^#/, ''))
            return validate(data) ? null : `does not match ${target}: ${describeErrors(validate)}`
          }
        : (event: string, data: unknown) => {
            const validate = validatorAt(pointer)
            return validate({ event, data }) ? null : `does not match the event schema: ${describeErrors(validate)}`
          }
      const frames = checkFrames(response, validateFrame, (problem) => mismatches.push(`${where}: ${problem}`))
      return { mismatches, frames, matched: true }
    }
    // text/plain, text/markdown: a string; the content type is what can be wrong.
    return { mismatches, frames: 0, matched: true }
  }

  return { check }
}

/** Each whole frame of an event stream, its data parsed, checked by `validateFrame` (null when it matches, else the problem). */
function checkFrames(response: RecordedResponse, validateFrame: (event: string, data: unknown) => string | null, report: (problem: string) => void): number {
  let frames = 0
  const parser = createParser({
    onEvent(message) {
      frames++
      // OpenAI's Chat Completions end their stream with this sentinel, not JSON (decision 063).
      if (message.data === '[DONE]') return
      let data: unknown
      try {
        data = JSON.parse(message.data)
      } catch {
        report(`frame ${frames} (${message.event}): data is not JSON: ${message.data.slice(0, 200)}`)
        return
      }
      const event = message.event ?? 'message'
      const problem = validateFrame(event, data)
      if (problem !== null) report(`frame ${frames} (${event}) ${problem}; data ${message.data.slice(0, 300)}`)
    },
  })
  // A dropped stream's last frame may be cut: only frames ended by their blank line are parsed.
  const body = response.complete ? response.body : response.body.slice(0, response.body.lastIndexOf('\n\n') + 2)
  parser.feed(body)
  return frames
}
