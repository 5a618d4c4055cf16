import { Ajv } from 'ajv'
import { checkSchemaReferences } from './check-schema-references.ts'
import type { ToolDefinition } from './config-types.ts'
import type { DocumentProblem } from './validate-retention-rules.ts'

/** The strictest name rule among the vendors' function-calling APIs, so every bundle can be sent anywhere. */
export const TOOL_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/

// The draft-07 meta-schema, compiled once: checking a schema against it is linear in the schema's
// size, where compiling the schema itself cost milliseconds a tool and seconds for a large one (a
// 750 KB bundle of 15,000 tools held the event loop 7.6 s; issue 11).
const metaSchema = new Ajv({ strict: false, allErrors: true, validateSchema: true })
// Compiled now, as the process starts, not by the first schema checked: compiling the meta-schema
// costs 10–160 ms, which the first publish or turn with tools would otherwise hold the event loop for
// (issue 36, decision 061).
metaSchema.getSchema('http://json-schema.org/draft-07/schema')

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
    // Vendors take draft-07-style schemas; a $schema naming another draft is not a reason to refuse.
    const { $schema: _dialect, ...body } = schema
    if (!metaSchema.validateSchema(body)) {
      problems.push({ pointer: `${at}/input_schema`, message: `is not a valid JSON Schema: ${metaSchema.errorsText(metaSchema.errors, { dataVar: 'schema' })}` })
      return
    }
    problems.push(...checkSchemaReferences(body, `${at}/input_schema`))
  })
  return problems
}

/** docs/guide/turn-options.md: a `response_format` schema is checked as a tool's input_schema is: an object schema, valid, local refs only. */
export function validateResponseSchema(schema: Record<string, unknown>, at: string): DocumentProblem[] {
  if (schema.type !== 'object') return [{ pointer: `${at}/type`, message: 'must be "object": structured output is a JSON object' }]
  const { $schema: _dialect, ...body } = schema
  if (!metaSchema.validateSchema(body)) return [{ pointer: at, message: `is not a valid JSON Schema: ${metaSchema.errorsText(metaSchema.errors, { dataVar: 'schema' })}` }]
  return checkSchemaReferences(body, at)
}
