import { randomUUID } from 'node:crypto'
import { beforeEach, describe, expect, it } from 'vitest'
import { expectError, expectProblem } from '../../helpers/http.ts'
import { createTestApp, type TestContext, type TestOrg } from '../../helpers/test-app.ts'
import {
  echo,
  fundedOrg,
  getRun,
  history,
  newChat,
  PNG_1X1,
  postTurn,
  prompt,
  sandboxCatalogue,
  snapshotRows,
  turn,
  useSandboxChat,
  variantOf,
} from '../../helpers/turns.ts'

/**
 * POST /api/v1/chats/{chat_id}/responses: what HTTP makes of admission. Each refusal's error class
 * answers its status and envelope (code, message, details), nothing written; warnings reach the
 * stream and the run resource; the body's schema and the route's checks (model, limits, base64,
 * attachments, the 32 MiB body) answer 422/413 with a pointer; attachments read back through history.
 * The admission rules' variants are asserted below HTTP: test/actors/admission.test.ts (against the
 * actor host and the real store) and test/domain/turns/ (the pure rules).
 */

const TEXT_ONLY = variantOf('sandbox/text-only', '9c1d2e3f-3333-4c3c-8d3d-000000000003', {
  media: {
    ...echo().media,
    user: { mime_types: ['text/plain'], max_bytes_per_attachment: 1000, max_attachments_per_request: null },
  },
})

const appOptions = () => ({ catalogue: [...sandboxCatalogue(), TEXT_ONLY] })

// One app for the file, a fresh funded organisation and chat for each test (test/helpers/turns.ts).
// "Nothing is written" compares the whole database before and after, which holds as well in a
// shared one. A test that counts rows absolutely builds its own app.
const sandbox = useSandboxChat(appOptions())
let ctx: TestContext
let org: TestOrg
let chatId: string
beforeEach(() => {
  ;({ ctx, org, chatId } = sandbox)
})

const submit = (body: Record<string, unknown>, chat = chatId, auth = org.auth) => postTurn(ctx, auth, chat, { model: 'sandbox/echo', ...body })

/** Submits a turn that must be refused with `status`/`code` and must write nothing at all. */
async function refused(body: Record<string, unknown>, status: number, code: string, chat = chatId) {
  const before = snapshotRows(ctx.store)
  const balance = ctx.store.balance.balanceOf(org.orgId)
  const res = await submit(body, chat)
  const error = expectError(res, status, code)
  expect(snapshotRows(ctx.store)).toEqual(before)
  expect(ctx.store.balance.balanceOf(org.orgId)).toBe(balance)
  return { res, error }
}

/** A failed run via the sandbox's /fail (HTTP 502). */
async function failedRun(chat = chatId, text = '/fail\nx'): Promise<string> {
  const res = await submit({ input: [prompt(text)] }, chat)
  return (expectError(res, 502, 'upstream_error').details as { run_id: string }).run_id
}

describe('idempotency', () => {
  it('reusing a key is 409 naming the first run in message and details.run_id; the stream is not replayed; nothing is written', async () => {
    const first = await turn(ctx, org.auth, chatId, { input: [prompt('once')], idempotency_key: 'key-1' })
    const { res, error } = await refused({ input: [prompt('once')], idempotency_key: 'key-1' }, 409, 'idempotency_key_reused')
    expect(error.details).toEqual({ run_id: first.runId })
    expect(error.message).toContain(first.runId)
    expect(res.headers['content-type']).toMatch(/^application\/json/)
  })
})

describe('retry_of', () => {
  it('of a succeeded run: 409 retry_not_allowed, nothing written', async () => {
    const ok = await turn(ctx, org.auth, chatId, { input: [prompt('fine')] })
    await refused({ input: [], retry_of: ok.runId }, 409, 'retry_not_allowed')
  })

  it('of a missing run: 404 not_found (another organisation’s run too: test/actors/admission.test.ts)', async () => {
    const { error } = await refused({ input: [], retry_of: randomUUID() }, 404, 'not_found')
    expect(error.message).toMatch(/^run .+ not found$/)
  })

  it('with non-empty input: 422 at /input, nothing written', async () => {
    const failed = await failedRun(chatId, '/flaky\nx')
    const before = snapshotRows(ctx.store)
    const res = await submit({ input: [prompt('extra')], retry_of: failed })
    expectProblem(res, 'body', '/input')
    expect(snapshotRows(ctx.store)).toEqual(before)
    // The failed run is still retryable.
    const t = await turn(ctx, org.auth, chatId, { input: [], retry_of: failed })
    expect(t.frames[0]!.data.run_id).not.toBe(failed)
  })
})

describe('balance', () => {
  it('402 insufficient_balance when the organisation has nothing; nothing is written', async () => {
    const broke = ctx.org()
    const chat = await newChat(ctx, broke.auth)
    const before = snapshotRows(ctx.store)
    const res = await postTurn(ctx, broke.auth, chat, { model: 'sandbox/echo', input: [prompt('free lunch?')] })
    expectError(res, 402, 'insufficient_balance')
    expect(snapshotRows(ctx.store)).toEqual(before)
    expect((await history(ctx, broke.auth, chat)).data).toEqual([])
  })

  it('a warning reaches the response: max_tokens lowered to the model’s ceiling, in the translation_warnings frame and the run’s manifest', async () => {
    const t = await turn(ctx, org.auth, chatId, { input: [prompt('big')], max_tokens: 100_000 })
    const run = await getRun(ctx, org.auth, t.runId)
    expect(run.manifest.max_tokens).toBe(echo().max_output_tokens)
    const warnings = t.of('translation_warnings')[0]!.data.warnings
    expect(warnings).toEqual([
      { code: 'max_tokens_lowered', message: expect.any(String), details: { requested: 100_000, applied: echo().max_output_tokens } },
    ])
    expect(run.manifest.warnings.translation).toEqual(warnings)
  })
})

describe('context and model', () => {
  it('422 context_too_large when the fixed parts exceed the input budget, naming what each takes; nothing is written', async () => {
    // sandbox/echo-8k: input budget floor(8192 × 0.9) = 7372 under the platform default.
    const long = prompt('word '.repeat(8000))
    const { error } = await refused({ model: 'sandbox/echo-8k', input: [long] }, 422, 'context_too_large')
    expect(error.message).toMatch(/input budget is 7372/)
    // 8,000 words: at least their exact 8,000 tokens (a text this long is estimated from samples, with a margin).
    const current = Number(/instructions 0, tools 0, anchor parts 0, the current exchange (\d+)$/.exec(error.message)?.[1])
    expect(current).toBeGreaterThanOrEqual(8000)
    expect(error.details).toMatchObject({ fixed_tokens: { current } })
    expect(error.details).toMatchObject({ input_budget: 7372, fixed_tokens: { instructions: 0, tools: 0, anchors: 0 } })
  })

  it('422 at /model for an unknown or inactive model; nothing is written', async () => {
    for (const model of ['sandbox/nope', 'anthropic/claude-sonnet-4.5']) {
      const before = snapshotRows(ctx.store)
      const res = await submit({ model, input: [prompt('hi')] })
      expectProblem(res, 'body', '/model')
      expect(snapshotRows(ctx.store)).toEqual(before)
    }
  })

  it('422 for more than 128 input items or user_metadata over 1024 bytes; nothing is written', async () => {
    const before = snapshotRows(ctx.store)
    expectProblem(await submit({ input: Array.from({ length: 129 }, (_, i) => prompt(`p${i}`)) }), 'body', '/input')
    expectProblem(await submit({ input: [prompt('hi')], user_metadata: { blob: 'x'.repeat(1100) } }), 'body', '/user_metadata')
    expect(snapshotRows(ctx.store)).toEqual(before)
  })

  it('422 for an empty prompt (no text, no media); nothing is written', async () => {
    const before = snapshotRows(ctx.store)
    expectProblem(await submit({ input: [{ type: 'prompt' }] }), 'body', '/input/0')
    expect(snapshotRows(ctx.store)).toEqual(before)
  })

  it('another organisation’s chat is 404 exactly like a missing chat', async () => {
    const other = fundedOrg(ctx)
    const body = { model: 'sandbox/echo', input: [prompt('hi')] }
    const theirs = await postTurn(ctx, other.auth, chatId, body)
    const missingId = randomUUID()
    const missing = await postTurn(ctx, other.auth, missingId, body)
    expectError(theirs, 404, 'not_found')
    expect(theirs.body.replaceAll(chatId, '<id>')).toBe(missing.body.replaceAll(missingId, '<id>'))
    expect((await history(ctx, org.auth, chatId)).data).toEqual([])
  })
})

describe('attachments', () => {
  const png = (filename: string | null = 'dot.png') => ({ mime: 'image/png', data_base64: PNG_1X1.toString('base64'), filename })

  it('an image/png in a prompt is accepted and readable with include=stubs, full and none', async () => {
    const t = await turn(ctx, org.auth, chatId, { input: [prompt('what is this?', { media: [png()] })] })
    expect(t.events.at(-1)).toBe('done')

    const stubs = await history(ctx, org.auth, chatId, '?include=stubs')
    const [withMedia, answer] = stubs.data
    expect(withMedia.part).toEqual({ type: 'prompt', text: 'what is this?' })
    expect(withMedia.media).toEqual([
      { media_id: expect.any(String), mime: 'image/png', byte_len: PNG_1X1.length, filename: 'dot.png', width: 1, height: 1, page_count: null },
    ])
    expect(withMedia.media[0]).not.toHaveProperty('data_base64')
    expect(answer).not.toHaveProperty('media')

    // stubs is the default
    expect((await history(ctx, org.auth, chatId)).data[0].media).toEqual(withMedia.media)

    const full = await history(ctx, org.auth, chatId, '?include=full')
    const fullMedia = full.data[0].media[0]
    expect(fullMedia).toEqual({ ...withMedia.media[0], data_base64: expect.any(String) })
    expect(Buffer.from(fullMedia.data_base64, 'base64').equals(PNG_1X1)).toBe(true)
    expect(fullMedia.data_base64).toBe(PNG_1X1.toString('base64'))

    const none = await history(ctx, org.auth, chatId, '?include=none')
    expect(none.data[0]).not.toHaveProperty('media')
    expect(none.data[0].part).toEqual(withMedia.part)
  })

  it('bytes round-trip byte-identically, and identical bytes are stored once', async () => {
    // Counts every row of the database: an app of its own, where the shared one holds other tests' media.
    const own = await createTestApp(appOptions())
    try {
      const ownOrg = fundedOrg(own)
      const ownChat = await newChat(own, ownOrg.auth)
      // Text attachments must be UTF-8 (decision 032): 4 KiB of varied characters, one to four bytes each.
      const bytes = Buffer.from(Array.from({ length: 1024 }, (_, i) => String.fromCodePoint([0x41, 0xe9, 0x20ac, 0x1f600][i % 4]! + (i % 7))).join(''))
      const media = { mime: 'text/plain', data_base64: bytes.toString('base64') }
      await turn(own, ownOrg.auth, ownChat, { input: [prompt('one', { media: [media] }), prompt('two', { media: [media, png(null)] })] })
      const full = await history(own, ownOrg.auth, ownChat, '?include=full')
      const [one, two] = full.data
      expect(Buffer.from(one.media[0].data_base64, 'base64').equals(bytes)).toBe(true)
      expect(two.media.map((m: { mime: string }) => m.mime)).toEqual(['text/plain', 'image/png'])
      expect(Buffer.from(two.media[0].data_base64, 'base64').equals(bytes)).toBe(true)
      expect(two.media[1].filename).toBeNull()
      expect(snapshotRows(own.store).media_blobs).toBe(2)
      expect(snapshotRows(own.store).part_media).toBe(3)
    } finally {
      await own.close()
    }
  })

  it('an attachment on a tool_result is accepted', async () => {
    const first = await turn(ctx, org.auth, chatId, { input: [prompt('/tool screenshot {}')] })
    const id = first.of('done')[0]!.data.pending_tool_calls[0].tool_use_id
    const t = await turn(ctx, org.auth, chatId, {
      input: [{ type: 'tool_result', tool_use_id: id, tool_name: 'screenshot', text: 'here', media: [png()] }],
    })
    expect(t.events.at(-1)).toBe('done')
    const page = await history(ctx, org.auth, chatId)
    const result = page.data.find((p) => p.part.type === 'tool_result')
    expect(result.media).toHaveLength(1)
    expect(result.media[0].mime).toBe('image/png')
  })

  it('history with include=full clamps limit to 20', async () => {
    ctx.store.parts.append(
      chatId,
      Array.from({ length: 25 }, (_, i) => ({ body: { type: 'prompt' as const, text: `p${i}` } })),
    )
    for (const query of ['?include=full&limit=100', '?include=full']) {
      const page = await history(ctx, org.auth, chatId, query)
      expect(page.data).toHaveLength(20)
      expect(page.has_more).toBe(true)
      expect(page.data.at(-1).part.text).toBe('p24')
    }
    expect((await history(ctx, org.auth, chatId, '?include=stubs&limit=100')).data).toHaveLength(25)
  })

  it('an unsupported MIME type is 422 unsupported_attachment; nothing is written', async () => {
    const zip = { mime: 'application/zip', data_base64: Buffer.from('PK\u0003\u0004').toString('base64') }
    const { error } = await refused({ input: [prompt('unzip', { media: [zip] })] }, 422, 'unsupported_attachment')
    expect(error.message).toContain('application/zip')
  })

  it('a type the selected model cannot take is 422 unsupported_attachment, though another model takes it', async () => {
    await refused({ model: 'sandbox/text-only', input: [prompt('look', { media: [png()] })] }, 422, 'unsupported_attachment')
    const t = await turn(ctx, org.auth, chatId, { input: [prompt('look', { media: [png()] })] })
    expect(t.events.at(-1)).toBe('done')
  })

  it('an attachment over the model’s byte limit is 422 unsupported_attachment', async () => {
    const big = { mime: 'text/plain', data_base64: Buffer.alloc(1001, 97).toString('base64') }
    await refused({ model: 'sandbox/text-only', input: [prompt('read', { media: [big] })] }, 422, 'unsupported_attachment')
  })

  it('a retained attachment the next model cannot take becomes a marker with a warning; the stored bytes stay intact', async () => {
    await turn(ctx, org.auth, chatId, { input: [prompt('a picture', { media: [png()] })] })
    const t = await turn(ctx, org.auth, chatId, { model: 'sandbox/text-only', input: [prompt('and in words?')] })
    expect(t.events.at(-1)).toBe('done')
    const warnings = t.of('translation_warnings')[0]!.data.warnings
    expect(warnings).toEqual([
      expect.objectContaining({ code: 'attachment_replaced_by_marker', message: expect.any(String), details: expect.objectContaining({ mime: 'image/png' }) }),
    ])
    const stored = (await history(ctx, org.auth, chatId, '?include=full')).data[0].media[0]
    expect(Buffer.from(stored.data_base64, 'base64').equals(PNG_1X1)).toBe(true)
  })

  it('a turn body over 1 MiB is accepted (attachments), over 32 MiB is 413 payload_too_large', async () => {
    // A 1×1 PNG padded to 2 MiB: large on the wire, small in tokens.
    const twoMiB = { mime: 'image/png', data_base64: Buffer.concat([PNG_1X1, Buffer.alloc(2 * 1024 * 1024)]).toString('base64') }
    const t = await turn(ctx, org.auth, chatId, { input: [prompt('big file', { media: [twoMiB] })] })
    expect(t.events.at(-1)).toBe('done')
    const before = snapshotRows(ctx.store)
    const huge = { mime: 'text/plain', data_base64: Buffer.alloc(25 * 1024 * 1024, 120).toString('base64') }
    const res = await submit({ input: [prompt('too big', { media: [huge] })] })
    expectError(res, 413, 'payload_too_large')
    expect(snapshotRows(ctx.store)).toEqual(before)
  })

  it('bad base64 is 422 with a pointer to the field; nothing is written', async () => {
    for (const data_base64 of ['not base64!!', `data:image/png;base64,${PNG_1X1.toString('base64')}`, 'abc']) {
      const before = snapshotRows(ctx.store)
      const res = await submit({ input: [prompt('ok'), prompt('img', { media: [png(), { mime: 'image/png', data_base64 }] })] })
      expectProblem(res, 'body', '/input/1/media/1/data_base64')
      expect(snapshotRows(ctx.store)).toEqual(before)
    }
  })
})
