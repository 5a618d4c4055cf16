import { Ajv } from 'ajv'
import type { ToolDefinition } from './config-types.ts'
import type { DocumentProblem } from './validate-retention-rules.ts'

/** The strictest name rule among the vendors' function-calling APIs, so every bundle can be sent anywhere. */
export const TOOL_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/

// addUsedSchema off: bundles may reuse an $id without colliding across compiles.
// inlineRefs off: to decide whether a $ref target can be inlined, Ajv walks it visiting every array
// twice per level, 2^depth for nested arrays (a $ref to `[[[…]]]` 40 deep never returns, and
// blocks the event loop). Compiled separately, refs validate the same.
const schemaChecker = new Ajv({ strict: false, allErrors: true, validateSchema: true, addUsedSchema: false, inlineRefs: false })

/** Base URI given to a schema without its own $id; only local (`#…`) references reach the compiler. */
const LOCAL_ROOT_ID = 'urn:parley:tool-input-schema'

const escapeToken = (token: string) => token.replace(/~/g, '~0').replace(/\//g, '~1')

// Keywords whose values are instance data, not schemas: a "$ref" inside them is just data.
const DATA_KEYWORDS = new Set(['default', 'const', 'enum', 'examples', 'example'])

// Keywords whose values map names to schemas: there a key called "default" names a property.
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'])

function externalRefs(node: unknown, pointer: string, found: string[], keysAreNames = false): string[] {
  if (Array.isArray(node)) {
    node.forEach((child, i) => externalRefs(child, `${pointer}/${i}`, found))
  } else if (node !== null && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if (keysAreNames) {
        externalRefs(value, `${pointer}/${escapeToken(key)}`, found)
        continue
      }
      const at = `${pointer}/${escapeToken(key)}`
      // "" and "#…" point into the schema itself; anything else needs a document we will not fetch.
      if (key === '$ref' && typeof value === 'string' && value !== '' && !value.startsWith('#')) found.push(at)
      else if (!DATA_KEYWORDS.has(key)) externalRefs(value, at, found, SCHEMA_MAPS.has(key))
    }
  }
  return found
}

/** Names unique and sendable; each input_schema a valid JSON Schema of an object with local refs only. */
export function validateToolBundle(definitions: ToolDefinition[], base = '/definitions'): DocumentProblem[] {
  const problems: DocumentProblem[] = []
  const firstByName = new Map<string, number>()
  definitions.forEach((definition, i) => {
    const at = `${base}/${i}`
    if (!TOOL_NAME_PATTERN.test(definition.name)) {
      problems.push({ pointer: `${at}/name`, message: `must match ${TOOL_NAME_PATTERN.source}` })
    }
    const first = firstByName.get(definition.name)
    if (first === undefined) firstByName.set(definition.name, i)
    else problems.push({ pointer: `${at}/name`, message: `duplicates the name of ${base}/${first}` })

    const schema = definition.input_schema
    if (schema.type !== 'object') {
      problems.push({ pointer: `${at}/input_schema/type`, message: 'must be "object": a tool takes an arguments object' })
    }
    const refs = externalRefs(schema, `${at}/input_schema`, [])
    for (const pointer of refs) problems.push({ pointer, message: 'external schema references are not supported' })
    if (refs.length > 0) return
    try {
      // Vendors take draft-07-style schemas; a $schema naming another draft is not a reason to refuse.
      const { $schema: _dialect, ...body } = schema
      // Without an $id the root is unregistered (addUsedSchema off), so a recursive `$ref: "#"` would not resolve.
      schemaChecker.compile({ $id: LOCAL_ROOT_ID, ...body })
    } catch (error) {
      problems.push({ pointer: `${at}/input_schema`, message: `is not a valid JSON Schema: ${(error as Error).message}` })
    }
  })
  return problems
}
