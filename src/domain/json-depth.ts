import type { Problem } from './errors.ts'
import { escapeToken } from './json-pointer.ts'

/**
 * Nesting limits for request bodies, checked without recursion before anything recursive
 * (schema validation, JSON.stringify, JSON Schema compilation) touches the value: V8's
 * JSON.parse is iterative, but those are not, and a few thousand levels overflow the stack.
 *
 * Depth counts containers (objects and arrays): `{}` is 1, `{"a":[1]}` is 2.
 */
/** user_metadata is at most 1024 bytes anyway; 64 levels is far more than any real use. */
export const USER_METADATA_MAX_DEPTH = 64
/** A tool's input_schema: a JSON Schema spends two levels per nested property (`properties` / name). */
export const INPUT_SCHEMA_MAX_DEPTH = 128
/** Any JSON body, counted from its root (covers every other field). */
export const BODY_MAX_DEPTH = 256

type Frame = { value: object; depth: number; limit: number; scope: string; parent: Frame | null; key: string }

function pointerOf(frame: Frame): string {
  const tokens: string[] = []
  for (let f: Frame | null = frame; f && f.parent; f = f.parent) tokens.push(escapeToken(f.key))
  return tokens.length === 0 ? '' : `/${tokens.reverse().join('/')}`
}

/** The limit a child at `key` of `parent` starts, if it is the root of a limited field. */
function scopeOf(parent: Frame, key: string): { limit: number; scope: string } | null {
  // /user_metadata (chat creation, turns)
  if (parent.parent === null && key === 'user_metadata') return { limit: USER_METADATA_MAX_DEPTH, scope: 'user_metadata' }
  // /definitions/N/input_schema (tool bundles) and /tools/N/input_schema (request-level tools)
  if (key === 'input_schema') {
    const list = parent.parent
    if (list && Array.isArray(list.value) && list.parent !== null && list.parent.parent === null && (list.key === 'definitions' || list.key === 'tools')) {
      return { limit: INPUT_SCHEMA_MAX_DEPTH, scope: 'input_schema' }
    }
  }
  return null
}

/**
 * The first value nested deeper than its limit, as a 422 problem pointing at it; null when the
 * body is within every limit. Iterative: a body nested a million levels costs no stack.
 */
export function findTooDeep(body: unknown, where: Problem['in'] = 'body'): Problem | null {
  if (body === null || typeof body !== 'object') return null
  const stack: Frame[] = [{ value: body, depth: 1, limit: BODY_MAX_DEPTH, scope: 'body', parent: null, key: '' }]
  while (stack.length > 0) {
    const frame = stack.pop()!
    if (frame.depth > frame.limit) {
      const what = frame.scope === 'body' ? 'the request body' : frame.scope
      return { in: where, pointer: pointerOf(frame), message: `is nested too deeply: ${what} may nest at most ${frame.limit} levels of objects and arrays` }
    }
    const value = frame.value as Record<string, unknown>
    const keys = Array.isArray(value) ? null : Object.keys(value)
    const count = keys ? keys.length : (value as unknown as unknown[]).length
    for (let i = count - 1; i >= 0; i--) {
      const key = keys ? keys[i]! : String(i)
      const child = value[key]
      if (child === null || typeof child !== 'object') continue
      const scope = scopeOf(frame, key)
      stack.push(
        scope
          ? { value: child, depth: 1, limit: scope.limit, scope: scope.scope, parent: frame, key }
          : { value: child, depth: frame.depth + 1, limit: frame.limit, scope: frame.scope, parent: frame, key },
      )
    }
  }
  return null
}
