import { deflateSync } from 'node:zlib'
import { expect } from 'vitest'

// --- Real files of an exact byte length ---------------------------------------------------------

const CRC_TABLE = (() => {
  const table = new Int32Array(256)
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
    table[n] = c
  }
  return table
})()

function crc32(...buffers: Buffer[]): number {
  let c = -1
  for (const buffer of buffers) for (let i = 0; i < buffer.length; i++) c = CRC_TABLE[(c ^ buffer[i]!) & 0xff]! ^ (c >>> 8)
  return (c ^ -1) >>> 0
}

function pngChunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8)
  head.writeUInt32BE(data.length, 0)
  head.write(type, 4, 'latin1')
  const crc = Buffer.alloc(4)
  crc.writeUInt32BE(crc32(head.subarray(4), data), 0)
  return Buffer.concat([head, data, crc])
}

/**
 * A valid `width`×`height` greyscale PNG of exactly `size` bytes: signature, IHDR, IDAT, a private
 * ancillary chunk (`paDd`, which decoders skip) holding the padding, IEND; every CRC correct.
 */
export function pngOfSize(size: number, width = 64, height = 48): Buffer {
  const ihdr = Buffer.alloc(13)
  ihdr.writeUInt32BE(width, 0)
  ihdr.writeUInt32BE(height, 4)
  ihdr[8] = 8 // bit depth
  ihdr[9] = 0 // greyscale
  // Each scanline: filter byte 0, then a gradient.
  const raw = Buffer.alloc((width + 1) * height)
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) raw[y * (width + 1) + 1 + x] = (x * 4 + y) & 0xff
  const head = Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', ihdr),
    pngChunk('IDAT', deflateSync(raw)),
  ])
  const end = pngChunk('IEND', Buffer.alloc(0))
  const padding = size - head.length - end.length - 12
  if (padding < 0) throw new Error(`a PNG cannot be as small as ${size} bytes`)
  // Not all one byte, so a truncation or shift in storage would show.
  const filler = Buffer.alloc(padding, Buffer.from(Array.from({ length: 251 }, (_, i) => (i * 31) & 0xff)))
  const png = Buffer.concat([head, pngChunk('paDd', filler), end])
  expect(png.length).toBe(size)
  return png
}

/**
 * A valid one-page PDF of exactly `size` bytes: catalog, pages, page, and an unreferenced stream
 * object holding the padding; a correct cross-reference table and startxref.
 */
export function pdfOfSize(size: number): Buffer {
  const build = (padding: number): Buffer => {
    const objects = [
      '<< /Type /Catalog /Pages 2 0 R >>',
      '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
      '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>',
    ]
    const parts: Buffer[] = [Buffer.from('%PDF-1.4\n%\xe2\xe3\xcf\xd3\n', 'latin1')]
    const offsets: number[] = []
    let at = parts[0]!.length
    const push = (b: Buffer) => {
      parts.push(b)
      at += b.length
    }
    objects.forEach((body, i) => {
      offsets.push(at)
      push(Buffer.from(`${i + 1} 0 obj\n${body}\nendobj\n`, 'latin1'))
    })
    offsets.push(at)
    push(Buffer.from(`4 0 obj\n<< /Length ${padding} >>\nstream\n`, 'latin1'))
    push(Buffer.alloc(padding, 0x41))
    push(Buffer.from('\nendstream\nendobj\n', 'latin1'))
    const xrefAt = at
    const xref = ['xref', '0 5', '0000000000 65535 f ', ...offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n `)].join('\n')
    push(Buffer.from(`${xref}\ntrailer\n<< /Size 5 /Root 1 0 R >>\nstartxref\n${xrefAt}\n%%EOF\n`, 'latin1'))
    return Buffer.concat(parts)
  }
  let padding = size - build(0).length
  for (let round = 0; round < 8; round++) {
    const pdf = build(padding)
    if (pdf.length === size) return pdf
    padding += size - pdf.length
  }
  throw new Error(`no PDF of exactly ${size} bytes`)
}

export const fileOf = (mime: string, size: number) => (mime === 'application/pdf' ? pdfOfSize(size) : pngOfSize(size))
