import { Buffer } from 'node:buffer'
import { imageSize } from 'image-size'
import type { Problem } from '../errors.ts'
import { countPdfPages } from './count-pdf-pages.ts'
import { isTextType, type MediaType } from './media-type.ts'

/*
 * docs/decisions/032-attachment-checks.md: an attachment's bytes must be a whole file of the type it
 * declares. Each check is one native scan at most (a TextDecoder, a lastIndexOf, a header read), so
 * a 20 MiB file costs milliseconds.
 */

export type Inspection = {
  width: number | null
  height: number | null
  page_count: number | null
  /** What is wrong with the bytes, at `<pointer>/data_base64`; null when they are whole and fit. */
  problem: Problem | null
}

const utf8 = new TextDecoder('utf-8', { fatal: true })

/** The last 12 bytes of every whole PNG: the empty IEND chunk (length 0, type, CRC). */
const PNG_IEND = Buffer.from([0, 0, 0, 0, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82])
const JPEG_SOS = Buffer.from([0xff, 0xda])
const JPEG_EOI = Buffer.from([0xff, 0xd9])
const PDF_EOF = Buffer.from('%%EOF', 'latin1')
/** Readers look for %%EOF within the last 1024 bytes (ISO 32000 implementation notes). */
const PDF_EOF_WINDOW = 1024

/** Why the file is cut short, or null when its type's end marker is where it belongs. */
function truncation(essence: string, bytes: Buffer): string | null {
  switch (essence) {
    case 'image/png':
      // Nothing may follow IEND in a PNG, but writers do leave trailing bytes; IEND anywhere suffices.
      return bytes.lastIndexOf(PNG_IEND) === -1 ? 'is a truncated PNG: it has no IEND chunk' : null
    case 'image/jpeg': {
      // The entropy-coded data escapes 0xFF, so FF D9 after the last start of scan (FF DA) is the
      // image's own EOI, not an embedded thumbnail's; metadata after it is allowed.
      const eoi = bytes.lastIndexOf(JPEG_EOI)
      return eoi === -1 || eoi < bytes.lastIndexOf(JPEG_SOS) ? 'is a truncated JPEG: its last scan has no EOI marker (FF D9) after it' : null
    }
    case 'application/pdf':
      return bytes.subarray(Math.max(0, bytes.length - PDF_EOF_WINDOW)).indexOf(PDF_EOF) === -1
        ? 'is a truncated PDF: %%EOF is not within its last 1024 bytes'
        : null
    case 'image/webp': {
      // RIFF: 'RIFF', the size of what follows (little-endian), 'WEBP'.
      if (bytes.length < 12) return 'is a truncated WebP: its RIFF header is cut'
      const size = bytes.readUInt32LE(4) + 8
      return bytes.length < size ? `is a truncated WebP: its RIFF header says ${size} bytes, ${bytes.length} arrived` : null
    }
    default:
      return null
  }
}

/**
 * The bytes against their declared type: not empty; text is UTF-8 (ASCII when declared US-ASCII);
 * an image or PDF whole, an image's header readable and each side at most `maxImageSide` pixels.
 * Also measures what the estimate and the history report: width, height, PDF pages.
 */
export function inspectAttachment(pointer: string, type: MediaType, bytes: Buffer, maxImageSide: number): Inspection {
  const inspection: Inspection = { width: null, height: null, page_count: null, problem: null }
  const fail = (message: string): Inspection => ({ ...inspection, problem: { in: 'body', pointer: `${pointer}/data_base64`, message } })
  if (bytes.length === 0) return fail('is empty: an attachment needs at least one byte')
  const { essence } = type
  if (isTextType(essence)) {
    try {
      utf8.decode(bytes)
    } catch {
      return fail(`is not valid UTF-8: ${essence} attachments are taken as UTF-8 text only; convert the file to UTF-8`)
    }
    if (type.parameters.charset?.toLowerCase() === 'us-ascii' && bytes.some((b) => b >= 0x80)) {
      return fail('is declared charset=us-ascii but holds bytes over 0x7F: declare charset=utf-8')
    }
    return inspection
  }
  const cut = truncation(essence, bytes)
  if (cut) return fail(cut)
  if (essence === 'application/pdf') return { ...inspection, page_count: countPdfPages(bytes) }
  if (!essence.startsWith('image/')) return inspection
  let width: number | null = null
  let height: number | null = null
  try {
    const size = imageSize(bytes)
    width = size.width ?? null
    height = size.height ?? null
  } catch {
    // A type image-size cannot read (or a header it cannot parse): see below.
  }
  if (width === null || height === null) {
    // Only types whose headers we read are required to have one we can read.
    return READABLE_IMAGES.has(essence) ? fail(`is not a readable ${essence} image: its header is damaged or cut short`) : inspection
  }
  if (width > maxImageSide || height > maxImageSide) {
    return {
      ...fail(`is ${width}×${height} px; this model takes images of at most ${maxImageSide} px a side: scale it down`),
      width,
      height,
    }
  }
  return { ...inspection, width, height }
}

/** Image types whose dimensions are read from their header, so an unreadable header is refused. */
const READABLE_IMAGES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp'])
