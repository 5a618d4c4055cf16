import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { INPUT_SCHEMA_MAX_DEPTH, USER_METADATA_MAX_DEPTH } from '../../src/domain/json-depth.ts'
import { TURN_BODY_LIMIT } from '../../src/http/routes/api/v1/chats/responses.ts'
import { configSnapshot, expectError, expectProblem } from '../helpers/config-api.ts'
import { countRows } from '../helpers/http.ts'
import { createTestApp, type TestContext, type TestOrg } from '../helpers/test-app.ts'
import { echo, fundedOrg, newChat, prompt, snapshotRows, streamOf, variantOf } from '../helpers/turns.ts'

/** Issue 11: large attachments and deeply nested JSON answer 4xx in the envelope, never 500. */

const MIB = 1024 * 1024
// A large context window: a PDF of unknown page count is estimated from its bytes.
const BIG = variantOf('sandbox/big-pdf', '5a0e4b7c-3d2f-4e1a-9b8c-7d6e5f4a3b2c', {
  context_window: 10_000_000,
  media: { ...echo().media, user: { mime_types: ['application/pdf'], max_bytes_per_attachment: 20 * MIB, max_attachments_per_request: 10 } },
})

let ctx: TestContext
let org: TestOrg
let chatId: string

// One app for the file (building one per test was most of this file's time); each test gets fresh
// organisations and chats of its own.
beforeAll(async () => {
  ctx = await createTestApp({ catalogue: [echo(), BIG] })
})
afterAll(async () => {
  await ctx.close()
})
beforeEach(async () => {
  org = fundedOrg(ctx)
  chatId = await newChat(ctx, org.auth)
})

/** Everything a rejected request must leave untouched: turn tables, chats and configuration. */
const everything = () => ({ ...snapshotRows(ctx.store), chats: countRows(ctx.store, 'chats'), config: configSnapshot(ctx) })

/** Sends a raw JSON text (a nested value cannot be built by JSON.stringify, which recurses). */
const send = (method: 'POST', url: string, text: string) =>
  ctx.app.inject({ method, url, headers: { ...org.auth, 'content-type': 'application/json' }, payload: text })

const pdfBytes = (size: number) => {
  const bytes = Buffer.alloc(size)
  bytes.write('%PDF-1.4\n')
  for (let i = 16; i < size; i += 997) bytes[i] = (i * 7) & 0xff
  // A whole PDF ends with %%EOF (decision 032).
  bytes.write('\n%%EOF\n', size - 7, 'latin1')
  return bytes
}

const turnWith = (data_base64: string) =>
  ctx.app.inject({
    method: 'POST',
    url: `/api/v1/chats/${chatId}/responses`,
    headers: org.auth,
    payload: { model: 'sandbox/big-pdf', input: [prompt('read this', { media: [{ mime: 'application/pdf', data_base64, filename: 'big.pdf' }] })] },
  })

describe('attachments at the catalogue’s largest limit', () => {
  it('20 MiB fits the turn body limit with its base64 overhead', () => {
    expect(Math.ceil((20 * MIB) / 3) * 4 + 1024).toBeLessThan(TURN_BODY_LIMIT)
  })

  it('a 20 MiB attachment is accepted end to end and stored byte-identically', async () => {
    const bytes = pdfBytes(20 * MIB)
    streamOf(await turnWith(bytes.toString('base64')))
    const stored = ctx.store.db
      .prepare('SELECT b.bytes FROM part_media m JOIN media_blobs b ON b.sha256 = m.sha256 JOIN parts p ON p.ordinal = m.part_ordinal WHERE p.chat_id = ?')
      .all(chatId) as { bytes: Buffer }[]
    expect(stored).toHaveLength(1)
    expect(stored[0]!.bytes.length).toBe(bytes.length)
    expect(Buffer.compare(stored[0]!.bytes, bytes)).toBe(0)
  }, 60_000)

  it('one byte over the model’s limit is 422 unsupported_attachment, nothing written', async () => {
    const before = everything()
    const error = expectError(await turnWith(pdfBytes(20 * MIB + 1).toString('base64')), 422, 'unsupported_attachment')
    expect(JSON.stringify(error.details)).toContain('/input/0/media/0/data_base64')
    expect(everything()).toEqual(before)
  }, 60_000)

  it('bad base64 at 20 MiB is 422 with a pointer, nothing written', async () => {
    const good = pdfBytes(20 * MIB).toString('base64')
    const before = everything()
    for (const bad of [`${good.slice(0, 13_000_000)}-${good.slice(13_000_001)}`, `${good.slice(0, -8)}====AAAA`, `${good} `]) {
      expectProblem(await turnWith(bad), 'body', '/input/0/media/0/data_base64')
    }
    expect(everything()).toEqual(before)
  }, 60_000)
})

const deep = (levels: number, leaf = '1') => '{"a":'.repeat(levels) + leaf + '}'.repeat(levels)
const deepPointer = (prefix: string, limit: number) => prefix + '/a'.repeat(limit)
const TURN = (extra: string) => `{"model":"sandbox/echo","input":[{"type":"prompt","text":"hi"}],${extra}}`
const tool = (schema: string) => `{"name":"t","description":"d","input_schema":${schema}}`
const schemaAround = (inner: string) => `{"type":"object","properties":{"x":${inner}}}`

describe('nesting depth limits (issue 11)', () => {
  const cases = [
    { name: 'chat creation user_metadata', url: () => '/api/v1/chats', text: `{"user_metadata":${deep(4000)}}`, pointer: deepPointer('/user_metadata', USER_METADATA_MAX_DEPTH) },
    {
      name: 'chat creation user_metadata (arrays)',
      url: () => '/api/v1/chats',
      text: `{"user_metadata":{"a":${'['.repeat(4000)}${']'.repeat(4000)}}}`,
      pointer: '/user_metadata/a' + '/0'.repeat(USER_METADATA_MAX_DEPTH - 1),
    },
    { name: 'turn user_metadata', url: () => `/api/v1/chats/${chatId}/responses`, text: TURN(`"user_metadata":${deep(4000)}`), pointer: deepPointer('/user_metadata', USER_METADATA_MAX_DEPTH) },
    {
      name: 'turn request-level tool input_schema',
      url: () => `/api/v1/chats/${chatId}/responses`,
      text: TURN(`"tools":[${tool(schemaAround(deep(3000, '{}')))}]`),
      pointer: deepPointer('/tools/0/input_schema/properties/x', INPUT_SCHEMA_MAX_DEPTH - 2),
    },
    {
      name: 'tool bundle publishing input_schema',
      url: () => '/api/v1/config/tools',
      text: `{"mode":"append","definitions":[${tool(schemaAround('{}'))},${tool(schemaAround(deep(3000, '{}')))}]}`,
      pointer: deepPointer('/definitions/1/input_schema/properties/x', INPUT_SCHEMA_MAX_DEPTH - 2),
    },
    { name: 'any other body', url: () => '/api/v1/config/budgets', text: deep(100_000), pointer: deepPointer('', 256) },
  ]

  it.each(cases)('$name: 422 with a pointer to the too-deep value, nothing written', async ({ url, text, pointer }) => {
    const before = everything()
    const problems = expectProblem(await send('POST', url(), text), 'body', pointer)
    expect(problems).toHaveLength(1)
    expect(everything()).toEqual(before)
  })

  it('values at the limits are accepted', async () => {
    let res = await send('POST', '/api/v1/chats', `{"user_metadata":${deep(USER_METADATA_MAX_DEPTH)}}`)
    expect(res.statusCode, res.body).toBe(201)
    // input_schema, properties, x: three levels, then the rest of the allowance.
    const schema = schemaAround(deep(INPUT_SCHEMA_MAX_DEPTH - 3, '{}'))
    res = await send('POST', '/api/v1/config/tools', `{"mode":"append","definitions":[${tool(schema)}]}`)
    expect(res.statusCode, res.body).toBe(200)
    streamOf(await send('POST', `/api/v1/chats/${chatId}/responses`, TURN(`"user_metadata":${deep(USER_METADATA_MAX_DEPTH)},"tools":[${tool(schema)}]`)))
  })
})
