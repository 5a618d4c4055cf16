import { describe, expect, it } from 'vitest'
import type { CatalogueEntry } from '../../../src/domain/catalogue/catalogue-entry.ts'
import { checkAttachments, sniffMime, type AttachmentToCheck } from '../../../src/domain/turns/check-attachments.ts'

const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64')
const JPEG = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46])
const GIF = Buffer.from('GIF89a\x01\x00\x01\x00', 'latin1')
const WEBP = Buffer.concat([Buffer.from('RIFF'), Buffer.from([0x1a, 0, 0, 0]), Buffer.from('WEBPVP8 ')])
const PDF = Buffer.from('%PDF-1.7\n%\xe2\xe3\xcf\xd3\n', 'latin1')

const policy = { mime_types: ['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'application/pdf', 'text/plain'], max_bytes_per_attachment: 10_000_000, max_attachments_per_request: 10 }
const model = { name: 'test/model', media: { user: policy, tool_result: policy, assistant: policy } } as unknown as Pick<CatalogueEntry, 'name' | 'media'>
const attachment = (mime: string, bytes: Uint8Array): AttachmentToCheck => ({ pointer: '/input/0/media/0', carrier: 'user_message', mime, byteLength: bytes.length, leadingBytes: bytes })

describe('sniffMime', () => {
  it('knows PNG, JPEG, GIF, WebP and PDF by their first bytes, and nothing else', () => {
    expect(sniffMime(PNG)).toBe('image/png')
    expect(sniffMime(JPEG)).toBe('image/jpeg')
    expect(sniffMime(GIF)).toBe('image/gif')
    expect(sniffMime(WEBP)).toBe('image/webp')
    expect(sniffMime(PDF)).toBe('application/pdf')
    expect(sniffMime(Buffer.concat([Buffer.from('junk before the header\n'), PDF]))).toBe('application/pdf')
    expect(sniffMime(Buffer.from('hello, world'))).toBeNull()
    expect(sniffMime(Buffer.alloc(0))).toBeNull()
    expect(sniffMime(PNG.subarray(0, 7))).toBeNull()
  })
})

describe('checkAttachments against the bytes', () => {
  it('accepts each type with its own bytes, the declared type in any case', () => {
    for (const [mime, bytes] of [['image/png', PNG], ['IMAGE/PNG', PNG], ['image/jpeg', JPEG], ['image/gif', GIF], ['image/webp', WEBP], ['application/pdf', PDF]] as const) {
      expect(checkAttachments([attachment(mime, bytes)], model), mime).toEqual([])
    }
  })

  it('refuses PNG bytes declared image/jpeg, naming what they are, at the part\'s mime', () => {
    expect(checkAttachments([attachment('image/jpeg', PNG)], model)).toEqual([
      { in: 'body', pointer: '/input/0/media/0/mime', message: 'is declared image/jpeg but its bytes are PNG (image/png): declare the type the bytes are' },
    ])
  })

  it('refuses bytes of no known type under a type with a signature', () => {
    const [problem] = checkAttachments([attachment('application/pdf', Buffer.from('not a pdf at all'))], model)
    expect(problem).toEqual({ in: 'body', pointer: '/input/0/media/0/mime', message: 'is declared application/pdf but its bytes do not start as a PDF file does' })
  })

  it('takes a type without a signature as declared', () => {
    expect(checkAttachments([attachment('text/plain', PNG)], model)).toEqual([])
  })
})
