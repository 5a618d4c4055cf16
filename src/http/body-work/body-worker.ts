/**
 * The tasks of the body-work pool (src/http/body-work/body-work.ts), run on its worker threads
 * (started by body-worker-entry.mjs): each reads a whole large body or attachment, which on the
 * event loop would hold every other request for tens of milliseconds. Results are plain data,
 * copied back (a copy of 20 MiB of bytes costs the event loop about as much as a memcpy).
 */
import { decodeAttachment as decode, type AttachmentToDecode } from '../../domain/turns/decode-attachment.ts'
import { parseJsonBytes } from './parse-json-bytes.ts'

export function parseJson(bytes: Uint8Array) {
  return parseJsonBytes(bytes)
}

export function decodeAttachment(input: AttachmentToDecode) {
  return decode(input)
}
