/**
 * The inline files of a vendor request, as the replay double's vendor sees them: every base64 payload
 * with its MIME type, wherever the wire format puts it. Read by walking the whole body rather than one
 * path per format, because the six formats put a file in three shapes only:
 *   - a data URL (`data:<mime>;base64,<data>`): OpenAI and xAI `input_image.image_url` and
 *     `input_file.file_data`, chat-completions `image_url` (Mistral);
 *   - `{ media_type, data }` under a `source` of type base64: Anthropic `image` and `document`;
 *   - `{ mimeType, data }` under `inlineData`: Gemini.
 * Files sent by reference (a URL, a file id) carry no bytes here and are not counted.
 */

export type InlineFile = { mimeType: string; bytes: Buffer }

const DATA_URL = /^data:([\w.+/-]+);base64,/

/** Every inline file of `body`, in document order. */
export function inlineFiles(body: unknown): InlineFile[] {
  const files: InlineFile[] = []
  const walk = (value: unknown): void => {
    if (typeof value === 'string') {
      const m = DATA_URL.exec(value)
      if (m) files.push({ mimeType: m[1]!.toLowerCase(), bytes: Buffer.from(value.slice(m[0].length), 'base64') })
      return
    }
    if (Array.isArray(value)) {
      for (const item of value) walk(item)
      return
    }
    if (value === null || typeof value !== 'object') return
    const o = value as Record<string, unknown>
    const mime = typeof o.media_type === 'string' ? o.media_type : typeof o.mimeType === 'string' ? o.mimeType : null
    // Anthropic's plain-text document source is `{ type: 'text', media_type: 'text/plain', data: '<text>' }`: not base64.
    if (mime !== null && typeof o.data === 'string' && o.type !== 'text') {
      files.push({ mimeType: mime.toLowerCase(), bytes: Buffer.from(o.data, 'base64') })
      return
    }
    for (const v of Object.values(o)) walk(v)
  }
  walk(body)
  return files
}

/**
 * An image's width and height from its header: PNG (IHDR), GIF (logical screen), JPEG (the first
 * start-of-frame marker), WebP (VP8X, VP8 or VP8L). Null when the bytes are none of these, or cut short.
 */
export function imageSize(bytes: Buffer): { width: number; height: number } | null {
  if (bytes.length >= 24 && bytes.readUInt32BE(0) === 0x89504e47 && bytes.toString('latin1', 12, 16) === 'IHDR') {
    return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) }
  }
  if (bytes.length >= 10 && bytes.toString('latin1', 0, 3) === 'GIF') return { width: bytes.readUInt16LE(6), height: bytes.readUInt16LE(8) }
  if (bytes.length >= 30 && bytes.toString('latin1', 0, 4) === 'RIFF' && bytes.toString('latin1', 8, 12) === 'WEBP') {
    const chunk = bytes.toString('latin1', 12, 16)
    if (chunk === 'VP8X') return { width: 1 + bytes.readUIntLE(24, 3), height: 1 + bytes.readUIntLE(27, 3) }
    if (chunk === 'VP8 ') return { width: bytes.readUInt16LE(26) & 0x3fff, height: bytes.readUInt16LE(28) & 0x3fff }
    if (chunk === 'VP8L') {
      const b = bytes.readUInt32LE(21)
      return { width: 1 + (b & 0x3fff), height: 1 + ((b >>> 14) & 0x3fff) }
    }
    return null
  }
  if (bytes.length >= 4 && bytes[0] === 0xff && bytes[1] === 0xd8) {
    let at = 2
    while (at + 9 < bytes.length) {
      if (bytes[at] !== 0xff) return null
      const marker = bytes[at + 1]!
      // SOF0–SOF15 carry the frame size, except DHT (C4), JPG (C8) and DAC (CC).
      if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
        return { height: bytes.readUInt16BE(at + 5), width: bytes.readUInt16BE(at + 7) }
      }
      at += 2 + bytes.readUInt16BE(at + 2)
    }
  }
  return null
}

/** A PDF's page count: its `/Type /Page` objects (not `/Pages`, the tree's inner nodes); at least 1. */
export function pdfPageCount(bytes: Buffer): number {
  const pages = bytes.toString('latin1').match(/\/Type\s*\/Page(?![a-z])/g)
  return Math.max(1, pages?.length ?? 0)
}
