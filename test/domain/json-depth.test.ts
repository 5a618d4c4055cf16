import { describe, expect, it } from 'vitest'
import { BODY_MAX_DEPTH, findTooDeep, INPUT_SCHEMA_MAX_DEPTH, USER_METADATA_MAX_DEPTH } from '../../src/domain/json-depth.ts'

/** `levels` nested objects `{"a":{"a":…}}` around `leaf`. */
const nest = (levels: number, leaf: unknown = 1, key = 'a'): unknown => {
  let value: unknown = leaf
  for (let i = 0; i < levels; i++) value = { [key]: value }
  return value
}
const pointer = (prefix: string, tokens: number, token = 'a') => prefix + `/${token}`.repeat(tokens)

describe('findTooDeep', () => {
  it('passes scalars, empty containers and shallow bodies', () => {
    expect(findTooDeep(undefined)).toBeNull()
    expect(findTooDeep(null)).toBeNull()
    expect(findTooDeep('x')).toBeNull()
    expect(findTooDeep({})).toBeNull()
    expect(findTooDeep([[], {}, { a: [1, 2, { b: null }] }])).toBeNull()
  })

  it(`user_metadata: ${USER_METADATA_MAX_DEPTH} levels pass, one more points at the too-deep value`, () => {
    expect(findTooDeep({ user_metadata: nest(USER_METADATA_MAX_DEPTH) })).toBeNull()
    const problem = findTooDeep({ user_metadata: nest(USER_METADATA_MAX_DEPTH + 1) })
    expect(problem).toEqual({ in: 'body', pointer: pointer('/user_metadata', USER_METADATA_MAX_DEPTH), message: expect.stringMatching(/user_metadata may nest at most 64/) })
    // Arrays count as levels too.
    let arrays: unknown = []
    for (let i = 0; i < USER_METADATA_MAX_DEPTH; i++) arrays = [arrays]
    expect(findTooDeep({ user_metadata: arrays })?.pointer).toBe(pointer('/user_metadata', USER_METADATA_MAX_DEPTH, '0'))
  })

  it('user_metadata is only limited at the top level', () => {
    expect(findTooDeep({ x: { user_metadata: nest(USER_METADATA_MAX_DEPTH + 10) } })).toBeNull()
  })

  it(`input_schema under /definitions/N and /tools/N: ${INPUT_SCHEMA_MAX_DEPTH} levels pass, one more does not`, () => {
    for (const list of ['definitions', 'tools']) {
      const ok = { [list]: [{ name: 'a' }, { name: 'b', input_schema: nest(INPUT_SCHEMA_MAX_DEPTH) }] }
      expect(findTooDeep(ok)).toBeNull()
      const deep = { [list]: [{ name: 'a' }, { name: 'b', input_schema: nest(INPUT_SCHEMA_MAX_DEPTH + 1) }] }
      expect(findTooDeep(deep)?.pointer).toBe(pointer(`/${list}/1/input_schema`, INPUT_SCHEMA_MAX_DEPTH))
    }
  })

  it(`any other body: ${BODY_MAX_DEPTH} levels from the root`, () => {
    expect(findTooDeep(nest(BODY_MAX_DEPTH))).toBeNull()
    expect(findTooDeep(nest(BODY_MAX_DEPTH + 1))?.pointer).toBe(pointer('', BODY_MAX_DEPTH))
    // An input_schema somewhere else is not specially limited: the body's limit applies.
    expect(findTooDeep({ x: [{ input_schema: nest(INPUT_SCHEMA_MAX_DEPTH + 5) }] })).toBeNull()
  })

  it('escapes pointer tokens (RFC 6901)', () => {
    expect(findTooDeep({ user_metadata: nest(USER_METADATA_MAX_DEPTH + 1, 1, 'a/~b') })?.pointer).toBe(pointer('/user_metadata', USER_METADATA_MAX_DEPTH, 'a~1~0b'))
  })

  it('walks a million levels without recursion', () => {
    const text = '{"user_metadata":' + '['.repeat(1_000_000) + ']'.repeat(1_000_000) + '}'
    expect(findTooDeep(JSON.parse(text))?.pointer).toBe(pointer('/user_metadata', USER_METADATA_MAX_DEPTH, '0'))
    expect(findTooDeep(JSON.parse('['.repeat(1_000_000) + ']'.repeat(1_000_000)))?.pointer).toBe(pointer('', BODY_MAX_DEPTH, '0'))
  })

  it('reports the first too-deep value in document order', () => {
    const body = { user_metadata: { first: nest(USER_METADATA_MAX_DEPTH), second: nest(USER_METADATA_MAX_DEPTH) } }
    expect(findTooDeep(body)?.pointer).toBe(pointer('/user_metadata/first', USER_METADATA_MAX_DEPTH - 1))
  })
})
