import { beforeEach, describe, expect, it } from 'vitest'
import { expectError } from '../helpers/http.ts'
import { GIF_16, JPEG_16, PDF_1, PNG_3X2, pngClaiming, WEBP_16 } from '../helpers/media-fixtures.ts'
import type { TestContext, TestOrg } from '../helpers/test-app.ts'
import { postTurn, prompt, snapshotRows, turn, useSandboxChat } from '../helpers/turns.ts'

/**
 * Issue 22 item 5: attachments are what they say they are (docs/decisions/032-attachment-checks.md).
 * Each of these was accepted by sandbox/echo before.
 */

type Problem = { in: string; pointer: string; message: string }

// One app for the file, a fresh funded organisation and chat for each test (test/helpers/turns.ts).
const sandbox = useSandboxChat()
let ctx: TestContext
let org: TestOrg
let chatId: string
beforeEach(() => {
  ;({ ctx, org, chatId } = sandbox)
})

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64')
const attach = (mime: string, bytes: Uint8Array | string) => ({ mime, data_base64: typeof bytes === 'string' ? bytes : b64(bytes) })

/** Sends a caption and then the attachment (at /input/1/media/0); expects 422 unsupported_attachment and nothing written. */
async function refused(media: { mime: string; data_base64: string }): Promise<Problem[]> {
  const before = snapshotRows(ctx.store)
  const res = await postTurn(ctx, org.auth, chatId, { model: 'sandbox/echo', input: [prompt('a caption'), prompt('look', { media: [media] })] })
  const error = expectError(res, 422, 'unsupported_attachment') as { details: { problems: Problem[] } }
  expect(snapshotRows(ctx.store)).toEqual(before)
  return error.details.problems
}

async function storedMime(media: { mime: string; data_base64: string }): Promise<string> {
  const t = await turn(ctx, org.auth, chatId, { input: [prompt('look', { media: [media] })] })
  expect(t.of('done')).toHaveLength(1)
  const page = (await ctx.app.inject({ method: 'GET', url: `/api/v1/chats/${chatId}/history?include=stubs`, headers: org.auth })).json()
  const parts = page.data.filter((p: { part: { type: string } }) => p.part.type === 'prompt')
  return parts[parts.length - 1].media[0].mime
}

describe('the declared type must be what the bytes are', () => {
  it('PNG bytes declared text/plain: 422 at the mime, naming PNG', async () => {
    const problems = await refused(attach('text/plain', PNG_3X2))
    expect(problems).toEqual([{ in: 'body', pointer: '/input/1/media/0/mime', message: expect.stringContaining('PNG (image/png)') }])
  })

  it('text declared text/plain must be UTF-8: invalid bytes answer 422 at the data', async () => {
    const problems = await refused(attach('text/plain', Buffer.from([0x68, 0x69, 0xff, 0xfe, 0x0a])))
    expect(problems).toEqual([{ in: 'body', pointer: '/input/1/media/0/data_base64', message: expect.stringContaining('UTF-8') }])
  })

  it('a lone surrogate encoded as UTF-8 (CESU) is not UTF-8 either', async () => {
    await refused(attach('text/plain', Buffer.from([0x61, 0xed, 0xa0, 0x80])))
  })

  it('JPEG bytes declared image/png', async () => {
    const problems = await refused(attach('image/png', JPEG_16))
    expect(problems[0]).toMatchObject({ pointer: '/input/1/media/0/mime', message: expect.stringContaining('JPEG') })
  })
})

describe('an empty or truncated file', () => {
  it('an empty data_base64', async () => {
    const problems = await refused({ mime: 'image/png', data_base64: '' })
    expect(problems).toEqual([{ in: 'body', pointer: '/input/1/media/0/data_base64', message: expect.stringContaining('empty') }])
  })

  it('an empty text file', async () => {
    await refused({ mime: 'text/plain', data_base64: '' })
  })

  it('a PNG without its IEND chunk', async () => {
    const problems = await refused(attach('image/png', PNG_3X2.subarray(0, PNG_3X2.length - 12)))
    expect(problems).toEqual([{ in: 'body', pointer: '/input/1/media/0/data_base64', message: expect.stringContaining('IEND') }])
  })

  it('a PNG cut inside its header', async () => {
    await refused(attach('image/png', PNG_3X2.subarray(0, 20)))
  })

  it('a JPEG without its EOI marker', async () => {
    const problems = await refused(attach('image/jpeg', JPEG_16.subarray(0, JPEG_16.length - 40)))
    expect(problems[0]).toMatchObject({ pointer: '/input/1/media/0/data_base64', message: expect.stringContaining('EOI') })
  })

  it('a PDF without %%EOF', async () => {
    const problems = await refused(attach('application/pdf', PDF_1.subarray(0, PDF_1.length - 7)))
    expect(problems[0]).toMatchObject({ pointer: '/input/1/media/0/data_base64', message: expect.stringContaining('%%EOF') })
  })

  it('a WebP shorter than its RIFF header says', async () => {
    await refused(attach('image/webp', WEBP_16.subarray(0, WEBP_16.length - 10)))
  })
})

describe('image dimensions', () => {
  it('a PNG that claims 100000×100000 px: 422 at the data, naming the limit', async () => {
    const problems = await refused(attach('image/png', pngClaiming(100_000, 100_000)))
    expect(problems).toEqual([{ in: 'body', pointer: '/input/1/media/0/data_base64', message: expect.stringContaining('8000') }])
  })

  it('one side over the limit is enough; the limit itself is accepted', async () => {
    await refused(attach('image/png', pngClaiming(8001, 10)))
    expect(await storedMime(attach('image/png', pngClaiming(8000, 10)))).toBe('image/png')
  })
})

describe('MIME types compare case-insensitively, with parameters parsed', () => {
  it('TEXT/PLAIN is text/plain, stored as such', async () => {
    expect(await storedMime(attach('TEXT/PLAIN', Buffer.from('hello')))).toBe('text/plain')
  })

  it('text/plain; charset=utf-8 is accepted and stored as text/plain', async () => {
    expect(await storedMime(attach('text/plain; charset=utf-8', Buffer.from('héllo')))).toBe('text/plain')
    expect(await storedMime(attach('Text/Plain;Charset="UTF-8"', Buffer.from('hello')))).toBe('text/plain')
    expect(await storedMime(attach('text/plain; charset=us-ascii', Buffer.from('hello')))).toBe('text/plain')
  })

  it('a charset other than UTF-8 or US-ASCII is refused at the mime', async () => {
    const problems = await refused(attach('text/plain; charset=iso-8859-1', Buffer.from('caf\xe9', 'latin1')))
    expect(problems).toEqual([{ in: 'body', pointer: '/input/1/media/0/mime', message: expect.stringContaining('UTF-8') }])
  })

  it('US-ASCII text must be ASCII', async () => {
    const problems = await refused(attach('text/plain; charset=us-ascii', Buffer.from('héllo')))
    expect(problems[0]!.pointer).toBe('/input/1/media/0/data_base64')
  })

  it('a type that is not a MIME type is refused at the mime', async () => {
    for (const mime of ['image png', 'image/', 'image/png;', 'image/png; charset', 'text/plain; charset="utf-8']) {
      const problems = await refused(attach(mime, mime.startsWith('text') ? Buffer.from('x') : PNG_3X2))
      expect(problems[0]!.pointer, mime).toBe('/input/1/media/0/mime')
    }
  })

  it('IMAGE/PNG with a parameter is image/png', async () => {
    expect(await storedMime(attach('IMAGE/PNG; name=x', PNG_3X2))).toBe('image/png')
  })
})

describe('complete files of every type are accepted', () => {
  it('JPEG, WebP, GIF, PDF and text', async () => {
    expect(await storedMime(attach('image/jpeg', JPEG_16))).toBe('image/jpeg')
    expect(await storedMime(attach('image/webp', WEBP_16))).toBe('image/webp')
    expect(await storedMime(attach('image/gif', GIF_16))).toBe('image/gif')
    expect(await storedMime(attach('application/pdf', PDF_1))).toBe('application/pdf')
    expect(await storedMime(attach('text/plain', Buffer.from('plain text ✓\n')))).toBe('text/plain')
  })
})
