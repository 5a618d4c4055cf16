import { describe, expect, it } from 'vitest'
import { maxImageSide, PLATFORM_MAX_IMAGE_SIDE } from '../../../src/domain/turns/image-limits.ts'
import { inspectAttachment } from '../../../src/domain/turns/inspect-attachment.ts'
import { parseMediaType } from '../../../src/domain/turns/media-type.ts'
import { sniffAttachment } from '../../../src/domain/turns/check-attachments.ts'
import { GIF_16, JPEG_16, PDF_1, PNG_3X2, pngClaiming, WEBP_16 } from '../../helpers/media-fixtures.ts'

/** Issue 22 item 5 (docs/decisions/032-attachment-checks.md). */

describe('parseMediaType', () => {
  it('lower-cases the essence and parameter names, unquotes values', () => {
    expect(parseMediaType('TEXT/Plain')).toEqual({ essence: 'text/plain', parameters: {} })
    expect(parseMediaType('text/plain;charset=UTF-8')).toEqual({ essence: 'text/plain', parameters: { charset: 'UTF-8' } })
    expect(parseMediaType('text/plain ; Charset="utf-8" ;format=flowed')).toEqual({ essence: 'text/plain', parameters: { charset: 'utf-8', format: 'flowed' } })
    expect(parseMediaType('image/svg+xml')).toEqual({ essence: 'image/svg+xml', parameters: {} })
    expect(parseMediaType('text/plain; name="a \\"b\\";c"')!.parameters.name).toBe('a "b";c')
  })

  it('refuses what is not a media type', () => {
    for (const bad of ['', 'image', 'image/', '/png', 'image png', 'image/png;', 'image/png; charset', 'image/png; =x', 'text/plain; charset="utf-8', 'image/png x', 'imäge/png']) {
      expect(parseMediaType(bad), bad).toBeNull()
    }
  })
})

describe('sniffAttachment (file-type, then the PDF signature after junk)', () => {
  it('names each type the catalogue takes, and nothing for text', async () => {
    expect(await sniffAttachment(PNG_3X2)).toEqual({ mime: 'image/png', name: 'PNG' })
    expect(await sniffAttachment(JPEG_16)).toEqual({ mime: 'image/jpeg', name: 'JPEG' })
    expect((await sniffAttachment(WEBP_16))!.mime).toBe('image/webp')
    expect((await sniffAttachment(GIF_16))!.mime).toBe('image/gif')
    expect((await sniffAttachment(PDF_1))!.mime).toBe('application/pdf')
    expect((await sniffAttachment(Buffer.concat([Buffer.from('junk\n'), PDF_1])))!.mime).toBe('application/pdf')
    expect(await sniffAttachment(Buffer.from('plain words\n'))).toBeNull()
    expect(await sniffAttachment(Buffer.alloc(0))).toBeNull()
  })
})

describe('inspectAttachment', () => {
  const inspect = (mime: string, bytes: Buffer, side = 8000) => inspectAttachment('/input/0/media/0', parseMediaType(mime)!, bytes, side)

  it('measures whole files', () => {
    expect(inspect('image/png', PNG_3X2)).toEqual({ width: 3, height: 2, page_count: null, problem: null })
    expect(inspect('image/jpeg', JPEG_16).problem).toBeNull()
    expect(inspect('image/webp', WEBP_16).problem).toBeNull()
    expect(inspect('image/gif', GIF_16).problem).toBeNull()
    expect(inspect('application/pdf', PDF_1)).toEqual({ width: null, height: null, page_count: 1, problem: null })
    expect(inspect('text/plain', Buffer.from('ok ✓'))).toEqual({ width: null, height: null, page_count: null, problem: null })
  })

  it('a PNG with trailing bytes after IEND and a JPEG with metadata after EOI are whole', () => {
    expect(inspect('image/png', Buffer.concat([PNG_3X2, Buffer.from('trailer')])).problem).toBeNull()
    expect(inspect('image/jpeg', Buffer.concat([JPEG_16, Buffer.from([0, 0, 0])])).problem).toBeNull()
  })

  it('a JPEG whose only EOI comes before its last scan is cut', () => {
    const sos = JPEG_16.lastIndexOf(Buffer.from([0xff, 0xda]))
    const cut = Buffer.concat([JPEG_16.subarray(0, sos), Buffer.from([0xff, 0xd9]), JPEG_16.subarray(sos, JPEG_16.length - 2)])
    expect(inspect('image/jpeg', cut).problem?.message).toContain('EOI')
  })

  it('every problem points at the data', () => {
    for (const [mime, bytes] of [
      ['image/png', Buffer.alloc(0)],
      ['text/plain', Buffer.from([0xc3])],
      ['image/png', PNG_3X2.subarray(0, 30)],
      ['image/png', pngClaiming(8001, 1)],
      ['application/pdf', Buffer.from('%PDF-1.4\n')],
      ['image/webp', WEBP_16.subarray(0, 11)],
    ] as const) {
      expect(inspect(mime, bytes).problem, mime).toMatchObject({ in: 'body', pointer: '/input/0/media/0/data_base64' })
    }
  })

  it('a PDF whose %%EOF lies more than 1024 bytes before its end is cut', () => {
    expect(inspect('application/pdf', Buffer.concat([PDF_1, Buffer.alloc(2000, 0x20)])).problem?.message).toContain('%%EOF')
  })
})

describe('maxImageSide', () => {
  it('takes each vendor’s documented maximum, else the platform ceiling', () => {
    expect(maxImageSide('anthropic')).toBe(8000)
    expect(maxImageSide('sandbox')).toBe(8000)
    expect(maxImageSide('openai')).toBe(PLATFORM_MAX_IMAGE_SIDE)
  })
})
