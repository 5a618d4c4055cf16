import { Buffer } from 'node:buffer'
import { createHash } from 'node:crypto'
import { decodeBase64Strict, sniffAttachment, type Sniffed } from './check-attachments.ts'
import { inspectAttachment, type Inspection } from './inspect-attachment.ts'
import { parseMediaType } from './media-type.ts'

/** One submitted attachment, as `decodeAttachment` takes it (plain data: it may cross to a worker thread). */
export type AttachmentToDecode = { data_base64: string; mime: string; pointer: string; maxImageSide: number }

/** What an attachment's bytes are: everything that reads all of them, done once. */
export type DecodedAttachment = {
  /** The bytes; null when `data_base64` is not standard base64 (then nothing else was looked at). */
  bytes: Buffer | null
  /** What the bytes are by their magic numbers (file-type, then our signatures). */
  sniffed: Sniffed | null
  /** The bytes against the declared type; null when the type does not parse (refused at /mime). */
  inspection: Inspection | null
  /** The blob's key in the store (src/store/parts.ts). */
  sha256: string | null
}

/**
 * Decodes one attachment and reads its bytes through: strict base64, sniffing, the checks of
 * `inspectAttachment`, the digest the store keys blobs by. Every step is linear in the size, so a
 * large attachment is handed whole to a worker thread (src/http/body-work.ts) and costs the event
 * loop nothing; a small one is decoded in place.
 */
export async function decodeAttachment(input: AttachmentToDecode): Promise<DecodedAttachment> {
  const bytes = decodeBase64Strict(input.data_base64)
  if (!bytes) return { bytes: null, sniffed: null, inspection: null, sha256: null }
  const type = parseMediaType(input.mime)
  return {
    bytes,
    sniffed: await sniffAttachment(bytes),
    inspection: type ? inspectAttachment(input.pointer, type, bytes, input.maxImageSide) : null,
    sha256: createHash('sha256').update(bytes).digest('hex'),
  }
}

/** A decoded attachment as it arrives from another thread: its bytes are then a plain Uint8Array. */
export function asDecodedAttachment(received: Omit<DecodedAttachment, 'bytes'> & { bytes: Uint8Array | null }): DecodedAttachment {
  const { bytes } = received
  return { ...received, bytes: bytes === null || Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) }
}
