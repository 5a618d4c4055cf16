import fc from 'fast-check'

/**
 * Generators for the OpenAPI fuzz suite (openapi-fuzz.test.ts): values derived from the JSON
 * Schemas of the app's own `/openapi.json`, and the ways a client gets a request wrong.
 */

export type JsonSchema = {
  $ref?: string
  type?: string | string[]
  enum?: unknown[]
  const?: unknown
  properties?: Record<string, JsonSchema>
  required?: string[]
  additionalProperties?: boolean | JsonSchema
  items?: JsonSchema
  minItems?: number
  maxItems?: number
  minLength?: number
  maxLength?: number
  pattern?: string
  format?: string
  minimum?: number
  maximum?: number
  exclusiveMinimum?: number
  exclusiveMaximum?: number
  oneOf?: JsonSchema[]
  anyOf?: JsonSchema[]
  allOf?: JsonSchema[]
}

export type Parameter = { in: 'path' | 'query' | 'header' | 'cookie'; name: string; required?: boolean; schema: JsonSchema }
export type Operation = {
  operationId?: string
  security?: unknown[]
  parameters?: Parameter[]
  requestBody?: { required?: boolean; content: Record<string, { schema: JsonSchema }> }
  responses: Record<string, unknown>
}
export type OpenApiDoc = { paths: Record<string, Record<string, Operation>>; components?: { schemas?: Record<string, JsonSchema> } }

/** Values a generator may draw for fields whose meaning the schema alone does not carry. */
export type Pools = {
  /** Catalogue names of active models. */
  models: string[]
  /** Names that are not: missing, differently cased. */
  badModels: string[]
  /** UUIDs that mean something somewhere: catalogue model ids, runs and versions of both organisations. */
  uuids: string[]
}

const NAMESPACE_PATTERN = '^[a-z0-9_-]{1,64}(/[a-z0-9_-]{1,64})*$'

/** Strings a parser, a database or a log line might choke on. */
export const ODD_STRINGS = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\ud800',
  '\udc00x',
  '\ud83d\ude00',
  '\u202egnp.exe',
  '\u200b\u200d\ufeff',
  'e\u0301\u0301\u0301',
  '\uffff\ufffe',
  '𝕳𝖊𝖑𝖑𝖔',
  '../../etc/passwd',
  '%00',
  '%2e%2e%2f',
  "' OR 1=1 --",
  '"; DROP TABLE chats; --',
  '<script>alert(1)</script>',
  '${process.exit()}',
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'null',
  'undefined',
  'NaN',
  '-1',
  '1e309',
  'true',
  '\r\nSet-Cookie: x=y',
  'A'.repeat(300),
  'ßİıǅ',
  '日本語のテキスト',
  'مرحبا',
]

export const oddString = (): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...ODD_STRINGS) },
    { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
    { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }) },
  )

export const namespaceArb = (): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom('acme', 'acme/support', 'acme/sales', 'beta', 'x_1/y-2') },
    {
      weight: 1,
      arbitrary: fc
        .array(fc.stringMatching(/^[a-z0-9_-]{1,12}$/), { minLength: 1, maxLength: 4 })
        .map((segments) => segments.join('/')),
    },
  )

/** A namespace-like string that breaks the pattern or its limits. */
export const badNamespaceArb = (): fc.Arbitrary<string> =>
  fc.constantFrom('', 'Acme', 'acme/', '/acme', 'acme//x', 'a b', 'acme/Support', 'a'.repeat(65), `${'ab/'.repeat(90)}ab`, 'acme\u0000', 'ümlaut', '..', 'acme/../x')

const PNG_1X1 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=='

export const BAD_BASE64 = [
  '!!!!',
  'abc',
  'ab=c',
  'YWJj\nZGVm',
  'YWJj ZGVm',
  'data:image/png;base64,' + PNG_1X1,
  'YWJjZA',
  'YWJjZA===',
  '-_-_',
  '====',
  '\u00e9\u00e9\u00e9\u00e9',
  PNG_1X1.slice(0, 40),
]

const base64Arb = () =>
  fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(PNG_1X1, Buffer.from('hello, world').toString('base64'), Buffer.from('%PDF-1.4\n%%EOF').toString('base64'), '') },
    { weight: 2, arbitrary: fc.constantFrom(...BAD_BASE64) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map((bytes) => Buffer.from(bytes).toString('base64')) },
  )

const mimeArb = () =>
  fc.oneof(
    fc.constantFrom('image/png', 'image/jpeg', 'text/plain', 'application/pdf', 'application/octet-stream', 'image/svg+xml', 'video/mp4'),
    fc.constantFrom('IMAGE/PNG', 'image/png; charset=utf-8', 'image', '*/*', 'text/plain\u0000'),
  )

/** Prompt text: plain text, odd text, and the sandbox's harmless directives (never /slow, /fail or /flaky: those are meant to be slow or 502). */
const promptTextArb = () =>
  fc.oneof(
    { weight: 3, arbitrary: fc.string({ maxLength: 60 }) },
    { weight: 1, arbitrary: oddString() },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        'hello',
        '/think about it\nhi',
        '/tool lookup {"q":"refund"}',
        '/tool a {}\n/tool b {"x":[1,2]}',
        '/refuse',
        '/long 5',
        '/context',
        '/fail-summary\nplease',
        // Directives written wrong.
        '/tool x {bad json',
        '/tool',
        '/tool  {}',
        '/tool \u0000 {}',
        '/tool lookup [1,2]',
        '/long -1',
        '/long abc',
        '/long 1e3',
        '/think',
        '/unknown directive',
      ),
    },
  )

const inputSchemaArb = () =>
  fc.oneof(
    fc.constant({ type: 'object', properties: { q: { type: 'string' } } }),
    fc.constant({ type: 'object' }),
    fc.constant({ type: 'object', properties: { a: { $ref: '#/$defs/a' } }, $defs: { a: { type: 'integer' } } }),
    fc.constant({ type: 'object', properties: { a: { $ref: 'http://example.com/schema' } } }),
    fc.constant({ type: 'string' }),
    fc.constant({ $ref: '#' }),
    fc.constant({}),
    fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }),
  )

const toolNameArb = () =>
  fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom('lookup', 'a', 'b', 'tool_1', 'x'.repeat(64)) },
    { weight: 2, arbitrary: fc.stringMatching(/^[a-zA-Z0-9_-]{1,64}$/) },
    { weight: 1, arbitrary: oddString() },
  )

/** A field's value chosen by its name where that name means more than its schema says. */
function byFieldName(name: string, pools: Pools): fc.Arbitrary<unknown> | null {
  switch (name) {
    case 'model':
      return fc.oneof({ weight: 8, arbitrary: fc.constantFrom(...pools.models) }, { weight: 1, arbitrary: fc.constantFrom(...pools.badModels) }, { weight: 1, arbitrary: oddString() })
    case 'mime':
      return mimeArb()
    case 'data_base64':
      return base64Arb()
    case 'text':
      return promptTextArb()
    case 'input_schema':
      return inputSchemaArb()
    case 'name':
      return toolNameArb()
    case 'idempotency_key':
      return fc.oneof(fc.constantFrom('key-1', 'key-2', 'key-3'), fc.string({ minLength: 1, maxLength: 20 }), fc.constant(null))
    case 'retry_of':
      return fc.oneof({ weight: 6, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: uuidArb(pools) })
    case 'tool_use_id':
      return fc.oneof(fc.constantFrom('call_1', 'toolu_0', 'sandbox-call-0'), fc.string({ minLength: 1, maxLength: 20 }))
    case 'tool_name':
      return toolNameArb()
    case 'user_metadata':
      return fc.oneof(
        { weight: 3, arbitrary: fc.constant({}) },
        { weight: 3, arbitrary: fc.dictionary(fc.string({ maxLength: 10 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 4 }).filter((m) => JSON.stringify(m).length <= 1024) },
        { weight: 1, arbitrary: fc.constantFrom({ big: 'x'.repeat(1100) }, { deep: JSON.parse('['.repeat(70) + ']'.repeat(70)) }) },
      )
    default:
      return null
  }
}

const uuidArb = (pools: Pools) => fc.oneof({ weight: 2, arbitrary: fc.constantFrom(...pools.uuids) }, { weight: 1, arbitrary: fc.uuid({ version: 4 }) })

export function resolveRef(doc: OpenApiDoc, schema: JsonSchema): JsonSchema {
  let current = schema
  for (let i = 0; current.$ref !== undefined && i < 16; i++) {
    const name = current.$ref.replace('#/components/schemas/', '')
    const target = doc.components?.schemas?.[name]
    if (!target) throw new Error(`unresolved $ref ${current.$ref}`)
    current = target
  }
  return current
}

/**
 * A value that satisfies `schema` (or nearly: formats and field meanings are drawn from pools that
 * also hold wrong but well-typed values, so handlers see both good and refused input).
 */
export function valueOf(doc: OpenApiDoc, raw: JsonSchema, pools: Pools, depth = 0, fieldName?: string): fc.Arbitrary<unknown> {
  const schema = resolveRef(doc, raw)
  if (fieldName !== undefined) {
    const named = byFieldName(fieldName, pools)
    if (named) return named
    // A turn's input: often prompts alone (a tool result names a pending call only by luck), so that turns run.
    if (fieldName === 'input' && schema.type === 'array') {
      const promptPart = fc.record(
        { type: fc.constant('prompt'), text: promptTextArb(), media: fc.oneof(fc.constant([]), fc.constant([{ mime: 'image/png', data_base64: PNG_1X1 }])) },
        { requiredKeys: ['type', 'text'] },
      )
      // A result for a call the target chat has pending: `@pendingN@` and `@pendingnameN@` are filled in when the request is built.
      const resultPart = fc.nat(3).map((n) => ({ type: 'tool_result', tool_use_id: `@pending${n}@`, tool_name: `@pendingname${n}@`, text: '{"ok":true}' }))
      return fc.oneof(
        { weight: 3, arbitrary: fc.array(promptPart, { minLength: 1, maxLength: 2 }) },
        { weight: 1, arbitrary: fc.tuple(resultPart, fc.option(promptPart, { nil: undefined })).map(([r, p]) => (p ? [r, p] : [r])) },
        { weight: 2, arbitrary: valueOf(doc, raw, pools, depth) },
      )
    }
    // Attachments: mostly none or one that is right, so that turns get past them and run.
    if (fieldName === 'media') {
      return fc.oneof(
        { weight: 4, arbitrary: fc.constant([]) },
        { weight: 2, arbitrary: fc.constant([{ mime: 'image/png', data_base64: PNG_1X1 }]) },
        { weight: 2, arbitrary: valueOf(doc, raw, pools, depth) },
      )
    }
  }
  if (schema.const !== undefined) return fc.constant(schema.const)
  if (schema.enum) return fc.constantFrom(...schema.enum)
  const variants = schema.oneOf ?? schema.anyOf
  if (variants) return fc.oneof(...variants.map((v) => valueOf(doc, v, pools, depth + 1, fieldName)))
  const types = schema.type === undefined ? [] : Array.isArray(schema.type) ? schema.type : [schema.type]
  if (types.length > 1) {
    return fc.oneof(...types.map((t) => valueOf(doc, { ...schema, type: t }, pools, depth, fieldName)))
  }
  switch (types[0]) {
    case 'null':
      return fc.constant(null)
    case 'boolean':
      return fc.boolean()
    case 'integer': {
      const min = schema.minimum ?? -1000
      const max = Math.min(schema.maximum ?? 1000, min + 100_000)
      const bounds = [schema.minimum, schema.maximum].filter((n): n is number => n !== undefined)
      return fc.oneof(fc.integer({ min, max: Math.min(max, min + 50) }), fc.integer({ min, max }), ...(bounds.length > 0 ? [fc.constantFrom(...bounds)] : []))
    }
    case 'number': {
      const min = schema.exclusiveMinimum ?? schema.minimum ?? -1000
      const max = schema.exclusiveMaximum ?? schema.maximum ?? 1000
      return fc.double({ min, max, noNaN: true, noDefaultInfinity: true, minExcluded: schema.exclusiveMinimum !== undefined, maxExcluded: schema.exclusiveMaximum !== undefined })
    }
    case 'string': {
      if (schema.format === 'uuid') return uuidArb(pools)
      if (schema.format === 'date-time') return fc.date({ noInvalidDate: true }).map((d) => d.toISOString())
      if (schema.pattern === NAMESPACE_PATTERN) return namespaceArb()
      if (schema.pattern) return fc.stringMatching(new RegExp(schema.pattern))
      return fc.string({ minLength: schema.minLength ?? 0, maxLength: Math.min(schema.maxLength ?? 40, 40) })
    }
    case 'array': {
      if (depth > 6 || !schema.items) return fc.constant([])
      return fc.array(valueOf(doc, schema.items, pools, depth + 1), { minLength: schema.minItems ?? 0, maxLength: Math.min(schema.maxItems ?? 3, 3) })
    }
    case 'object': {
      if (!schema.properties) {
        return depth > 6 ? fc.constant({}) : fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 })
      }
      const required = new Set(schema.required ?? [])
      const record: Record<string, fc.Arbitrary<unknown>> = {}
      for (const [key, sub] of Object.entries(schema.properties)) record[key] = valueOf(doc, sub, pools, depth + 1, key)
      return fc.record(record, { requiredKeys: [...required] })
    }
    default:
      return fc.jsonValue({ maxDepth: 2 })
  }
}

/** JSON values of every type, for putting where another type belongs. */
const anyJson = () =>
  fc.oneof(
    fc.constantFrom(null, true, false, 0, -1, 1.5, 2 ** 53 + 2, -(2 ** 63), 1e308, -1e-308, '', '0', 'true', [], {}, [null], { '': null }),
    oddString(),
    fc.jsonValue({ maxDepth: 2 }),
  )

/**
 * A value nested `depth` levels deep, written only as text by `jsonText`, so neither the
 * generators, JSON.stringify nor fast-check's reporting recurse thousands of levels.
 */
export class Deep {
  constructor(
    readonly depth: number,
    readonly shape: 'array' | 'object',
  ) {}
  text(): string {
    return this.shape === 'array' ? `${'['.repeat(this.depth)}1${']'.repeat(this.depth)}` : `${'{"a":'.repeat(this.depth)}1${'}'.repeat(this.depth)}`
  }
  [fc.toStringMethod](): string {
    return `Deep(${this.depth}, ${this.shape})`
  }
}

/** JSON text of a generated value, Deep values spliced in as text. */
export function jsonText(value: unknown): string {
  const deep: Deep[] = []
  const text = JSON.stringify(value, (_key, v: unknown) => (v instanceof Deep ? `\u0000deep${deep.push(v) - 1}\u0000` : v))
  return deep.length === 0 ? text : text.replace(/"\\u0000deep(\d+)\\u0000"/g, (_m, i: string) => deep[Number(i)]!.text())
}

type Path = Array<string | number>

/** Every location in a JSON value, the root included. */
function locations(value: unknown, path: Path = [], out: Path[] = []): Path[] {
  out.push(path)
  if (value instanceof Deep) return out
  if (Array.isArray(value)) value.forEach((v, i) => locations(v, [...path, i], out))
  else if (value !== null && typeof value === 'object') for (const [k, v] of Object.entries(value)) locations(v, [...path, k], out)
  return out
}

function setAt(root: unknown, path: Path, replace: (old: unknown) => unknown): unknown {
  if (path.length === 0) return replace(root)
  const copy: any = Array.isArray(root) ? [...root] : { ...(root as object) }
  const [head, ...rest] = path
  copy[head as any] = setAt(copy[head as any], rest, replace)
  return copy
}

/** A value close to `base` with one thing wrong. */
export type Mutation =
  | { kind: 'replace'; at: number; with: unknown }
  | { kind: 'delete'; at: number }
  | { kind: 'extra'; at: number; key: string; value: unknown }
  | { kind: 'huge'; at: number; size: number }
  | { kind: 'deep'; at: number; depth: number; shape: 'array' | 'object' }

export const mutationArb = (): fc.Arbitrary<Mutation> =>
  fc.oneof(
    { weight: 4, arbitrary: fc.record({ kind: fc.constant('replace' as const), at: fc.nat(), with: anyJson() }) },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('delete' as const), at: fc.nat() }) },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant('extra' as const),
        at: fc.nat(),
        key: fc.oneof(fc.constantFrom('__proto__', 'constructor', 'extra', 'id', 'org_id', 'prototype', '', 'a/b', 'a~b', '~1', '/', '\u0000'), fc.string({ maxLength: 10 })),
        value: anyJson(),
      }),
    },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('huge' as const), at: fc.nat(), size: fc.constantFrom(1_000, 70_000, 1_100_000) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('deep' as const), at: fc.nat(), depth: fc.constantFrom(70, 130, 300, 5_000), shape: fc.constantFrom('array' as const, 'object' as const) }) },
  )

export function applyMutation(base: unknown, mutation: Mutation): unknown {
  const all = locations(base)
  const path = all[mutation.at % all.length]!
  switch (mutation.kind) {
    case 'replace':
      return setAt(base, path, () => mutation.with)
    case 'delete': {
      if (path.length === 0) return undefined
      const parentPath = path.slice(0, -1)
      const key = path[path.length - 1]!
      return setAt(base, parentPath, (parent) => {
        if (Array.isArray(parent)) return parent.filter((_, i) => i !== key)
        const { [key as string]: _dropped, ...rest } = parent as Record<string, unknown>
        return rest
      })
    }
    case 'extra': {
      // The object at or above the chosen location gets a key it does not declare.
      const objects = all.filter((p) => {
        const v = p.reduce<any>((acc, k) => acc?.[k], base)
        return v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Deep)
      })
      if (objects.length === 0) return base
      const target = objects[mutation.at % objects.length]!
      return setAt(base, target, (obj) => {
        const copy = { ...(obj as object) } as Record<string, unknown>
        Object.defineProperty(copy, mutation.key, { value: mutation.value, enumerable: true, configurable: true, writable: true })
        return copy
      })
    }
    case 'huge':
      return setAt(base, path, (old) => (typeof old === 'string' || path.length > 0 ? 'x'.repeat(mutation.size) : old))
    case 'deep':
      return setAt(base, path, () => new Deep(mutation.depth, mutation.shape))
  }
}

/** Body text that is not the JSON it claims to be. */
export const malformedJsonArb = (): fc.Arbitrary<string> =>
  fc.oneof(
    fc.constantFrom(
      '',
      ' ',
      '{',
      '}',
      '{"a":}',
      "{'a':1}",
      '{"a":1,}',
      '[1,2',
      'null',
      'true',
      '0',
      '"string"',
      '[]',
      '{"a":1}{"b":2}',
      '{"a":NaN}',
      '{"a":1e400}',
      '{"a":-1e400}',
      '{"a":Infinity}',
      '{"__proto__":{"polluted":true}}',
      '{"constructor":{"prototype":{"polluted":true}}}',
      '{"a":"\\ud800"}',
      '{"a":"\\u0000"}',
      '{"a":1,"a":2}',
      '\ufeff{}',
      '{"a":"unterminated',
      '{"a":"\\x41"}',
      '\u0000',
      '[' + '['.repeat(10_000) + ']'.repeat(10_000) + ']',
      '{"a":' + '{"a":'.repeat(3_000) + '1' + '}'.repeat(3_001),
    ),
    fc.string({ unit: 'binary', maxLength: 40 }),
  )

export const CONTENT_TYPES = [
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/xml',
  'application/json; charset=latin1',
  'application/json; charset=utf-16',
  'application/JSON',
  'application/jsonx',
  'application/json-patch+json',
  'application/vnd.api+json',
  'application/octet-stream',
  '*/*',
  '',
  'json',
  'application/json;;;',
]

/** Credentials a client might send: the organisations' own and a range of wrong ones. */
export type AuthChoice =
  | { kind: 'org'; org: number }
  | { kind: 'none' }
  | { kind: 'header'; value: string }
  | { kind: 'revoked' }
  | { kind: 'queryKey'; org: number }

export const authArb = (orgs: number): fc.Arbitrary<AuthChoice> =>
  fc.oneof(
    { weight: 20, arbitrary: fc.integer({ min: 0, max: orgs - 1 }).map((org) => ({ kind: 'org' as const, org })) },
    { weight: 1, arbitrary: fc.constant({ kind: 'none' as const }) },
    { weight: 1, arbitrary: fc.constant({ kind: 'revoked' as const }) },
    { weight: 1, arbitrary: fc.integer({ min: 0, max: orgs - 1 }).map((org) => ({ kind: 'queryKey' as const, org })) },
    {
      weight: 2,
      arbitrary: fc
        .oneof(
          fc.constantFrom('Bearer', 'Bearer ', 'Bearer  ', 'Basic dXNlcjpwYXNz', 'bearer pk_live_x', 'Token abc', 'Bearer null', 'Bearer ' + 'A'.repeat(4_000)),
          fc.string({ maxLength: 60 }).map((s) => `Bearer ${s}`),
          fc.string({ unit: 'binary-ascii', maxLength: 60 }),
        )
        .map((value) => ({ kind: 'header' as const, value })),
    },
  )

/** A path parameter: a real id of the caller's or of another organisation, a missing or odd one. */
export type IdChoice =
  | { kind: 'own'; index: number }
  | { kind: 'foreign'; index: number }
  | { kind: 'missing'; uuid: string }
  | { kind: 'deleted' }
  | { kind: 'raw'; value: string; encode: boolean }

export const idArb = (): fc.Arbitrary<IdChoice> =>
  fc.oneof(
    { weight: 10, arbitrary: fc.nat(20).map((index) => ({ kind: 'own' as const, index })) },
    { weight: 4, arbitrary: fc.nat(20).map((index) => ({ kind: 'foreign' as const, index })) },
    { weight: 2, arbitrary: fc.uuid({ version: 4 }).map((uuid) => ({ kind: 'missing' as const, uuid })) },
    { weight: 1, arbitrary: fc.constant({ kind: 'deleted' as const }) },
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant('raw' as const),
        value: fc.oneof(
          oddString(),
          fc.constantFrom(
            '00000000-0000-0000-0000-000000000000',
            'FFFFFFFF-FFFF-4FFF-BFFF-FFFFFFFFFFFF',
            '{00000000-0000-4000-8000-000000000000}',
            '0000000000004000800000000000000',
            '1',
            '-1',
            '0x10',
            'null',
            '.',
            '..',
            '%',
            '%25',
            '%ZZ',
            'a;b=c',
            'a?b',
            'a#b',
            'x'.repeat(101),
            'x'.repeat(99),
          ),
          fc.uuid().map((u) => u.toUpperCase()),
          fc.uuid().map((u) => ` ${u}`),
          fc.uuid().map((u) => `${u}%00`),
        ),
        encode: fc.boolean(),
      }),
    },
  )

/** Query strings built from the operation's parameters, right and wrong. */
export type QueryChoice = Array<[string, string]>

export function queryArb(doc: OpenApiDoc, params: Parameter[], pools: Pools): fc.Arbitrary<QueryChoice> {
  const valid = params.map((p) =>
    fc.option(valueOf(doc, p.schema, pools, 0).map((v) => [p.name, String(v)] as [string, string]), { nil: undefined, freq: p.required ? 10 : 2 }),
  )
  const validQuery = fc.tuple(...valid).map((entries) => entries.filter((e): e is [string, string] => e !== undefined))
  const names = [...params.map((p) => p.name), 'unknown', '__proto__', 'constructor[prototype][x]', 'limit[]', 'api_key', '']
  const badValue = fc.oneof(
    oddString(),
    badNamespaceArb(),
    fc.constantFrom('-1', '0', '101', '1.5', '1e3', '9007199254740993', '99999999999999999999999', '0x1f', ' 1', 'abc', 'stubs,full', ''),
    fc.uuid(),
  )
  const badEntry = fc.tuple(fc.constantFrom(...names), badValue)
  return fc.oneof(
    { weight: 3, arbitrary: validQuery },
    { weight: 3, arbitrary: fc.tuple(validQuery, fc.array(badEntry, { minLength: 1, maxLength: 3 })).map(([a, b]) => [...a, ...b]) },
    // The same parameter twice.
    { weight: 1, arbitrary: validQuery.map((q) => (q.length > 0 ? [...q, q[0]!] : q)) },
  )
}

/** Which body to send and how. */
export type BodyChoice =
  | { kind: 'none' }
  | { kind: 'valid'; value: unknown; contentType?: string }
  | { kind: 'mutated'; value: unknown }
  | { kind: 'raw'; text: string; contentType: string }

export function bodyArb(doc: OpenApiDoc, op: Operation, pools: Pools): fc.Arbitrary<BodyChoice> {
  const schema = op.requestBody?.content['application/json']?.schema
  const junk = fc.oneof(
    malformedJsonArb().map((text) => ({ kind: 'raw' as const, text, contentType: 'application/json' })),
    fc.tuple(fc.constantFrom(...CONTENT_TYPES), fc.oneof(fc.constant('{}'), fc.constant('a=1&b=2'), fc.string({ maxLength: 30 }))).map(([contentType, text]) => ({ kind: 'raw' as const, text, contentType })),
    anyJson().map((value) => ({ kind: 'mutated' as const, value })),
  )
  if (!schema) {
    // An operation without a body: mostly none, sometimes one it does not expect.
    return fc.oneof({ weight: 6, arbitrary: fc.constant({ kind: 'none' as const }) }, { weight: 1, arbitrary: junk })
  }
  const valid = valueOf(doc, schema, pools)
  return fc.oneof(
    { weight: 8, arbitrary: valid.map((value) => ({ kind: 'valid' as const, value })) },
    { weight: 5, arbitrary: fc.tuple(valid, fc.array(mutationArb(), { minLength: 1, maxLength: 2 })).map(([v, ms]) => ({ kind: 'mutated' as const, value: ms.reduce(applyMutation, v) })) },
    { weight: 1, arbitrary: fc.constant({ kind: 'none' as const }) },
    { weight: 2, arbitrary: junk },
    { weight: 1, arbitrary: fc.tuple(valid, fc.constantFrom(...CONTENT_TYPES)).map(([value, contentType]) => ({ kind: 'valid' as const, value, contentType })) },
  )
}

/** Text appended to the query string as is: bad percent-encoding and odd separators. */
export const RAW_QUERY = ['%', '%ZZ', '%E0%A4%A', '%C0%AF', '%FF%FE', '&&&', '=', '==x', 'a[b]=c', 'a=1;b=2', 'limit=1&limit', '?', '#frag', 'a=%00', 'namespace=%2e%2e']

/** Extra headers a client might send. */
export const ODD_HEADERS: Array<Record<string, string>> = [
  { 'content-encoding': 'gzip' },
  { 'content-encoding': 'br, identity' },
  { accept: 'text/html' },
  { accept: 'application/xml' },
  { 'accept-encoding': 'gzip' },
  { 'x-http-method-override': 'DELETE' },
  { 'x-forwarded-for': '::1, 127.0.0.1' },
  { 'idempotency-key': 'key-1' },
  { cookie: 'console_session=nonsense' },
  { origin: 'https://evil.example' },
  { expect: '100-continue' },
]

export type FuzzRequest = {
  method: string
  auth: AuthChoice
  ids: Record<string, IdChoice>
  query: QueryChoice
  rawQuery: string | null
  headers: Record<string, string>
  body: BodyChoice
}

const METHODS = ['GET', 'POST', 'DELETE', 'PUT', 'PATCH']

export function requestArb(doc: OpenApiDoc, method: string, op: Operation, orgs: number, pools: Pools): fc.Arbitrary<FuzzRequest> {
  const params = op.parameters ?? []
  const pathParams = params.filter((p) => p.in === 'path')
  const ids: Record<string, fc.Arbitrary<IdChoice>> = {}
  for (const p of pathParams) ids[p.name] = idArb()
  return fc.record({
    method: fc.oneof({ weight: 15, arbitrary: fc.constant(method.toUpperCase()) }, { weight: 1, arbitrary: fc.constantFrom(...METHODS) }),
    auth: authArb(orgs),
    ids: fc.record(ids),
    query: queryArb(
      doc,
      params.filter((p) => p.in === 'query'),
      pools,
    ),
    rawQuery: fc.oneof({ weight: 10, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.constantFrom(...RAW_QUERY) }),
    headers: fc.oneof({ weight: 8, arbitrary: fc.constant({}) }, { weight: 1, arbitrary: fc.constantFrom(...ODD_HEADERS) }),
    body: bodyArb(doc, op, pools),
  })
}
