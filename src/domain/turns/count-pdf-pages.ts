import { Buffer } from 'node:buffer'

const PAGE = Buffer.from('/Page', 'latin1')
const TYPE = Buffer.from('/Type', 'latin1')
/** PDF whitespace (ISO 32000 §7.2.2): NUL, tab, LF, FF, CR, space. */
const isWhitespace = (byte: number) => byte === 0 || byte === 9 || byte === 10 || byte === 12 || byte === 13 || byte === 32
/** A byte that would continue a PDF name (`/Pages`, `/PageLabels`): anything but whitespace and delimiters. */
const continuesName = (byte: number | undefined) => byte !== undefined && !isWhitespace(byte) && !'()<>[]{}/%'.includes(String.fromCharCode(byte))

/**
 * Pages of a PDF, for its token estimate and `page_count`: the page objects (`/Type /Page`) found
 * in its bytes, in one native scan. Null when none is visible, as when the page objects sit in
 * compressed object streams; the estimate then guesses from the size.
 */
export function countPdfPages(bytes: Uint8Array): number | null {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  let pages = 0
  for (let at = buffer.indexOf(PAGE); at !== -1; at = buffer.indexOf(PAGE, at + PAGE.length)) {
    if (continuesName(buffer[at + PAGE.length])) continue
    let before = at - 1
    while (before >= 0 && isWhitespace(buffer[before]!)) before--
    const typeStart = before - TYPE.length + 1
    if (typeStart >= 0 && buffer.subarray(typeStart, before + 1).equals(TYPE)) pages++
  }
  return pages > 0 ? pages : null
}
