import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'
import { BODY_MAX_DEPTH, findTooDeep, findTooDeepInText, USER_METADATA_MAX_DEPTH } from '../../src/domain/json-depth.ts'
import { countRows, expectError, expectProblem } from '../helpers/http.ts'
import { createTestApp, type TestContext, type TestOrg } from '../helpers/test-app.ts'
import { echo, fundedOrg, newChat } from '../helpers/turns.ts'

/**
 * Issue 22, item 1 (decision 030): a body is parsed only for a route that exists and, on keyed
 * routes, only once the key is checked; nesting past the documented limit is refused by a linear
 * scan of the raw text, before JSON.parse ever sees it. "Not parsed" is observed directly: no call
 * of JSON.parse receives the body (each body carries a marker).
 */

const MARKER = 'parse-marker-5d1c'

let ctx: TestContext
let org: TestOrg
let parse: { mock: { calls: unknown[][] }; mockRestore: () => void }

// One app for the file (building one per test was most of this file's time); each test gets fresh
// organisations and chats of its own.
beforeAll(async () => {
  ctx = await createTestApp({ catalogue: [echo()] })
})
afterAll(async () => {
  await ctx.close()
})
beforeEach(async () => {
  org = fundedOrg(ctx)
  parse = vi.spyOn(JSON, 'parse')
})

afterEach(() => {
  parse.mockRestore()
})

/** Whether JSON.parse was handed the request body (any text carrying the marker). */
const bodyWasParsed = () => parse.mock.calls.some(([text]: unknown[]) => typeof text === 'string' && text.includes(MARKER))

const send = (method: 'POST' | 'PUT', url: string, text: string, headers: Record<string, string> = {}) =>
  ctx.app.inject({ method, url, headers: { 'content-type': 'application/json', ...headers }, payload: text })

const deepObject = (levels: number, leaf = `"${MARKER}"`) => '{"a":'.repeat(levels) + leaf + '}'.repeat(levels)
const deepArray = (levels: number) => `[${'['.repeat(levels - 1)}"${MARKER}"${']'.repeat(levels)}`

describe('a body is parsed only for a route that exists, after its key', () => {
  const bodies = [
    { name: 'malformed JSON', text: `{"x":"${MARKER}",` },
    { name: 'JSON nested far past the limit', text: deepArray(400_000) },
    { name: 'valid JSON', text: `{"x":"${MARKER}"}` },
  ]

  it.each(bodies)('an unknown path answers 404 without parsing $name', async ({ text }) => {
    for (const headers of [{}, org.auth] as Record<string, string>[]) {
      const res = await send('POST', '/api/v1/no-such-route', text, headers)
      expectError(res, 404, 'not_found')
    }
    expect(bodyWasParsed()).toBe(false)
  })

  it.each(bodies)('a known path with another method answers 405 without parsing $name', async ({ text }) => {
    const res = await send('PUT', '/api/v1/version', text)
    expectError(res, 405, 'method_not_allowed')
    expect(res.headers.allow).toBe('GET, HEAD')
    expect(bodyWasParsed()).toBe(false)
  })

  it.each(bodies)('a keyed route without a valid key answers 401 without parsing $name', async ({ text }) => {
    for (const headers of [{}, { authorization: 'Bearer pk_not-a-key' }] as Record<string, string>[]) {
      expectError(await send('POST', '/api/v1/chats', text, headers), 401, 'unauthorized')
    }
    expect(bodyWasParsed()).toBe(false)
  })

  it('with the key, the same route parses its body', async () => {
    const res = await send('POST', '/api/v1/chats', `{"user_metadata":{"m":"${MARKER}"}}`, org.auth)
    expect(res.statusCode, res.body).toBe(201)
    expect(bodyWasParsed()).toBe(true)
  })
})

describe('nesting past the limit is refused before JSON.parse', () => {
  it(`a 16 MB body nested past ${BODY_MAX_DEPTH} levels on the turn route: 422 at its pointer, never parsed, nothing written`, async () => {
    const chatId = await newChat(ctx, org.auth)
    const before = { parts: countRows(ctx.store, 'parts') }
    const text = deepArray(8 * 1024 * 1024)
    expect(text.length).toBeGreaterThan(16_000_000)
    const problems = expectProblem(await send('POST', `/api/v1/chats/${chatId}/responses`, text, org.auth), 'body', '/0'.repeat(BODY_MAX_DEPTH))
    expect(problems).toHaveLength(1)
    expect(problems[0]!.message).toMatch(/at most 256 levels/)
    expect(bodyWasParsed()).toBe(false)
    expect({ parts: countRows(ctx.store, 'parts') }).toEqual(before)
  })

  it('a 1 MB nested body on chat creation: 422, never parsed', async () => {
    const chats = countRows(ctx.store, 'chats')
    expectProblem(await send('POST', '/api/v1/chats', deepArray(500_000), org.auth), 'body', '/0'.repeat(BODY_MAX_DEPTH))
    expect(bodyWasParsed()).toBe(false)
    expect(countRows(ctx.store, 'chats')).toBe(chats)
  })

  it('a narrower limit inside the body (user_metadata) keeps its own pointer, still never parsed', async () => {
    const res = await send('POST', '/api/v1/chats', `{"title":"t","user_metadata":${deepObject(4000)}}`, org.auth)
    expectProblem(res, 'body', '/user_metadata' + '/a'.repeat(USER_METADATA_MAX_DEPTH))
    expect(bodyWasParsed()).toBe(false)
  })

  it('brackets inside strings, escaped quotes and backslashes do not count as nesting', async () => {
    const tricky = `[{"k\\"[":"\\\\"}, "${'['.repeat(300)}\\"${'{'.repeat(300)}\\\\", "${MARKER}"]`
    const res = await send('POST', '/api/v1/chats', `{"user_metadata":{"s":${JSON.stringify(tricky)}}}`, org.auth)
    expect(res.statusCode, res.body).toBe(201)
    expect(bodyWasParsed()).toBe(true)
  })

  it('a body at the limit is parsed, and the narrower limits are checked after parsing as before', async () => {
    // 256 levels from the root is not too deep for the body; it is for user_metadata (64).
    const atLimit = `{"user_metadata":${deepObject(BODY_MAX_DEPTH - 1)}}`
    expectProblem(await send('POST', '/api/v1/chats', atLimit, org.auth), 'body', '/user_metadata' + '/a'.repeat(USER_METADATA_MAX_DEPTH))
    expect(bodyWasParsed()).toBe(true)
  })
})

describe('findTooDeepInText agrees with findTooDeep on the parsed value', () => {
  const tool = (schema: string) => `{"name":"t","description":"d","input_schema":${schema}}`
  const cases: Record<string, string> = {
    'objects': deepObject(300, '1'),
    'arrays': '['.repeat(300) + ']'.repeat(300),
    'the second sibling': `[[1,2],{"x":[3]},${'['.repeat(300)}${']'.repeat(300)}]`,
    'escaped keys': `{"a/b":{"c~d":{"e\\"f":{"g\\\\":${deepObject(300, '1')}}}}}`,
    'a unicode-escaped key': `{"\\u0041\\u00e9":${deepObject(300, '1')}}`,
    'user_metadata': `{"model":"m","user_metadata":${deepObject(300, '1')}}`,
    'user_metadata not at the root': `{"x":{"user_metadata":${deepObject(300, '1')}}}`,
    'tools input_schema': `{"tools":[${tool('{}')},${tool(deepObject(300, '{}'))}]}`,
    'definitions input_schema': `{"mode":"append","definitions":[${tool(deepObject(300, '[]'))}]}`,
    'input_schema elsewhere': `{"x":[${tool(deepObject(300, '{}'))}]}`,
    'strings with brackets before the depth': `{"s":"]]]]}}}}\\"]]]","t":${deepObject(300, '"{[\\\\"')}}`,
    'whitespace everywhere': ` { "a" : [ 1 , ${'[ '.repeat(300)}${' ]'.repeat(300)} ] } `,
  }

  it.each(Object.entries(cases))('%s', (_name, text) => {
    const expected = findTooDeep(JSON.parse(text))
    expect(expected).not.toBeNull()
    expect(findTooDeepInText(Buffer.from(text))).toEqual(expected)
  })

  it('null within the limit, whatever strings hold', () => {
    expect(findTooDeepInText(Buffer.from(`{"a":"${'['.repeat(1000)}","b":${deepObject(BODY_MAX_DEPTH - 1, '2')}}`))).toBeNull()
    expect(findTooDeepInText(Buffer.from('not json at all {{{'))).toBeNull()
  })
})
