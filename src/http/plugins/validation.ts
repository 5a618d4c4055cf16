import { Ajv, type ErrorObject } from 'ajv'
import addFormatsModule from 'ajv-formats'
import type { FastifyInstance, FastifyRequest, FastifySchemaCompiler } from 'fastify'
import { ValidationError, type Problem } from '../../domain/errors.ts'
import { findTooDeep } from '../../domain/json-depth.ts'
import { escapeToken } from '../../domain/json-pointer.ts'
import { findIllFormedText } from '../../domain/well-formed-text.ts'
import { afterNextPoll } from '../after-next-poll.ts'

// ajv-formats is CommonJS; its default export arrives wrapped under Node's ESM loader.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ??
  addFormatsModule) as unknown as (ajv: Ajv) => Ajv

function buildAjv(coerceTypes: boolean): Ajv {
  // removeAdditional stays off: a schema with additionalProperties: false must reject, not strip.
  const ajv = new Ajv({
    allErrors: true,
    coerceTypes,
    removeAdditional: false,
    useDefaults: true,
    strict: false,
    discriminator: true,
  })
  return addFormats(ajv)
}

/**
 * JSON bodies are validated strictly (a number is not a string); query strings and path
 * parameters arrive as text, so they are coerced to the schema's types first.
 */
export function installValidators(app: FastifyInstance, sharedSchemas: object[]): void {
  const compile = validatorsFor(sharedSchemas)
  const compiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => compile(httpPart === 'body' ? 'body' : 'text', schema as object)
  app.setValidatorCompiler(compiler)
  app.addHook('preValidation', pollIfLarge)
  // Before schema validation and every handler: nesting limits, checked without recursion, so a
  // body nested thousands of levels is a 422 with a pointer, never a stack overflow (issue 11).
  app.addHook('preValidation', async (request) => {
    const problem = findTooDeep(request.body)
    if (problem) throw new ValidationError([problem])
  })
  app.addHook('preValidation', pollIfLarge)
  // Every string and property name of a body must be well-formed text (no lone surrogate), so what
  // is stored as UTF-8 reads back as sent and limits count what is stored (decision 031).
  app.addHook('preValidation', async (request) => {
    const problems = findIllFormedText(request.body)
    if (problems.length > 0) throw new ValidationError(problems)
  })
  app.addHook('preValidation', pollIfLarge)
}

/** Bodies from this size are scanned, and then schema-validated, each in a turn of the loop of its own. */
export const LARGE_BODY_BYTES = 256 * 1024

/**
 * Between the whole-body steps of a large body (its parse, the depth scan, the text scan, schema
 * validation: 10–20 ms each for 1 MiB, more the first time), the loop polls for I/O, so together they
 * never hold it as one stretch (a 2,000-tool publish, issue 36, decision 061).
 */
async function pollIfLarge(request: FastifyRequest): Promise<void> {
  if (Number(request.headers['content-length']) >= LARGE_BODY_BYTES) await afterNextPoll()
}

type Validate = ReturnType<Ajv['compile']>

// Compiled validators are kept for the process, by their schemas' text: every app built over the
// same schemas (one per test, or per restart of a plugin) reuses them instead of compiling again.
const validatorSets = new Map<string, (part: 'body' | 'text', schema: object) => Validate>()

function validatorsFor(sharedSchemas: object[]): (part: 'body' | 'text', schema: object) => Validate {
  const setKey = JSON.stringify(sharedSchemas)
  let compile = validatorSets.get(setKey)
  if (!compile) {
    const bodyAjv = buildAjv(false)
    const textAjv = buildAjv(true)
    for (const schema of sharedSchemas) {
      bodyAjv.addSchema(schema)
      textAjv.addSchema(schema)
    }
    const compiled = new Map<string, Validate>()
    compile = (part, schema) => {
      const key = `${part}:${JSON.stringify(schema)}`
      let validate = compiled.get(key)
      if (!validate) {
        validate = (part === 'body' ? bodyAjv : textAjv).compile(schema)
        compiled.set(key, validate)
      }
      return validate
    }
    validatorSets.set(setKey, compile)
  }
  return compile
}

type Where = Problem['in']

/** Turns ajv's errors into problems with JSON pointers, dropping the noise anyOf adds. */
export function problemsFromAjv(errors: ErrorObject[], where: Where): Problem[] {
  const problems: Problem[] = []
  for (const error of errors) {
    const problem = problemOf(error, where)
    if (problem && !problems.some((p) => p.pointer === problem.pointer && p.message === problem.message)) {
      problems.push(problem)
    }
  }
  return problems
}

function problemOf(error: ErrorObject, where: Where): Problem | null {
  const path = error.instancePath
  switch (error.keyword) {
    case 'required':
      return { in: where, pointer: `${path}/${escapeToken(String(error.params.missingProperty))}`, message: 'is required' }
    case 'additionalProperties':
      return {
        in: where,
        pointer: `${path}/${escapeToken(String(error.params.additionalProperty))}`,
        message: 'is not a known property',
      }
    case 'discriminator':
      return error.params.error === 'tag'
        ? { in: where, pointer: `${path}/${escapeToken(String(error.params.tag))}`, message: 'is required and must be a string' }
        : { in: where, pointer: `${path}/${escapeToken(String(error.params.tag))}`, message: `must be one of the known kinds, got ${JSON.stringify(error.params.tagValue)}` }
    case 'anyOf':
      return { in: where, pointer: path, message: 'does not match any allowed shape' }
    case 'const':
      return { in: where, pointer: path, message: `must be ${JSON.stringify(error.params.allowedValue)}` }
    case 'enum':
      return { in: where, pointer: path, message: `must be one of ${JSON.stringify(error.params.allowedValues)}` }
    case 'pattern':
      return { in: where, pointer: path, message: `must match the pattern ${String(error.params.pattern)}` }
    default:
      return { in: where, pointer: path, message: error.message ?? `fails ${error.keyword}` }
  }
}
