import { Buffer } from 'node:buffer'
import { afterAll, describe, expect, it } from 'vitest'
import { createBodyWork, OFFLOAD_BASE64_CHARS, OFFLOAD_JSON_BYTES } from '../../../src/http/body-work/body-work.ts'
import { decodeAttachment } from '../../../src/domain/turns/decode-attachment.ts'
import { BodyWorkBusyError, retryAfterOf } from '../../../src/domain/errors.ts'
import { nestedArrays, pdfOf, pngOf } from '../../helpers/hostile-requests.ts'

/**
 * The body-work pool (docs/decisions/034-body-work-off-the-event-loop.md): large bodies and
 * attachments are read on worker threads and come back exactly as the in-place path reads them.
 * That the event loop stays free is measured in bench/stall.ts, not here.
 */
const work = createBodyWork({ threads: 1 })
afterAll(() => work.close())

const big = (value: unknown) => {
  const text = JSON.stringify(value)
  expect(text.length).toBeGreaterThanOrEqual(OFFLOAD_JSON_BYTES)
  return Buffer.from(text)
}

describe('parseJson', () => {
  it('parses a large body on a worker to the same value', async () => {
    const value = { model: 'sandbox/echo', input: [{ type: 'prompt', text: 'é'.repeat(OFFLOAD_JSON_BYTES) }], user_metadata: { a: [1, 2, { b: null }] } }
    expect(await work.parseJson(big(value))).toEqual({ kind: 'value', value })
  })

  it('refuses nesting past the limit at its pointer before parsing, large or small', async () => {
    for (const bytes of [nestedArrays(2 * OFFLOAD_JSON_BYTES), nestedArrays(600)]) {
      const parsed = await work.parseJson(bytes)
      expect(parsed).toMatchObject({ kind: 'too_deep', problem: { in: 'body', pointer: expect.stringMatching(/^\/0\/0/) } })
    }
  })

  it('says why a large body is not JSON, and refuses __proto__ as Fastify does', async () => {
    const cut = big({ text: 'x'.repeat(OFFLOAD_JSON_BYTES) }).subarray(0, OFFLOAD_JSON_BYTES + 10)
    expect(await work.parseJson(Buffer.from(cut))).toMatchObject({ kind: 'invalid', message: expect.any(String) })
    const poisoned = Buffer.from(`{"pad":"${'x'.repeat(OFFLOAD_JSON_BYTES)}","__proto__":{"admin":true}}`)
    expect(await work.parseJson(poisoned)).toMatchObject({ kind: 'invalid', message: expect.stringMatching(/prototype/i) })
  })
})

describe('bounded', () => {
  it('past the tasks that may wait, a body is refused with a 503 that says when to come back, not queued', async () => {
    const narrow = createBodyWork({ threads: 1, maxQueued: 1 })
    try {
      const body = big({ text: 'x'.repeat(4 * OFFLOAD_JSON_BYTES) })
      const results = await Promise.allSettled(Array.from({ length: 6 }, () => narrow.parseJson(Buffer.from(body))))
      const refused = results.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason)
      expect(refused.length).toBeGreaterThan(0)
      for (const error of refused) {
        expect(error).toBeInstanceOf(BodyWorkBusyError)
        expect(retryAfterOf(error)).toBe(1)
      }
      expect(results.filter((r) => r.status === 'fulfilled').length).toBeGreaterThan(0)
    } finally {
      await narrow.close()
    }
  })
})

describe('decodeAttachment', () => {
  const input = (bytes: Buffer, mime: string) => ({ data_base64: bytes.toString('base64'), mime, pointer: '/input/0/media/0', maxImageSide: 8000 })

  it('a large attachment decoded on a worker is what the in-place decoding finds: bytes, type, checks, digest', async () => {
    for (const [bytes, mime] of [
      [pdfOf(OFFLOAD_BASE64_CHARS), 'application/pdf'],
      [pngOf(OFFLOAD_BASE64_CHARS, 9000), 'image/png'],
      [Buffer.from('plain text '.repeat(OFFLOAD_BASE64_CHARS / 8)), 'text/plain'],
    ] as const) {
      const offloaded = await work.decodeAttachment(input(bytes, mime))
      const inPlace = await decodeAttachment(input(bytes, mime))
      expect(Buffer.isBuffer(offloaded.bytes)).toBe(true)
      expect(offloaded.bytes!.equals(bytes)).toBe(true)
      expect({ ...offloaded, bytes: null }).toEqual({ ...inPlace, bytes: null })
    }
    // The 9000 px PNG is refused by its checks, wherever they ran.
    expect((await work.decodeAttachment(input(pngOf(OFFLOAD_BASE64_CHARS, 9000), 'image/png'))).inspection?.problem?.message).toMatch(/9000×9000/)
  })

  it('bad base64 decodes to nothing', async () => {
    const bad = { data_base64: `${'A'.repeat(OFFLOAD_BASE64_CHARS)}*===`, mime: 'text/plain', pointer: '/x', maxImageSide: 8000 }
    expect(await work.decodeAttachment(bad)).toEqual({ bytes: null, sniffed: null, inspection: null, sha256: null })
  })
})
