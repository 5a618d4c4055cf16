/**
 * The tasks of the body-work pool (src/http/body-work/body-work.ts), run on its worker threads
 * (started by body-worker-entry.mjs): each reads a whole large body or attachment, or checks a
 * whole large tool bundle, which on the event loop would hold every other request for tens of
 * milliseconds (hundreds for 2,000 tools). Results are plain data,
 * copied back (a copy of 20 MiB of bytes costs the event loop about as much as a memcpy).
 */
import { threadId } from 'node:worker_threads'
import type { ToolDefinition } from '../../domain/config/config-types.ts'
import { decodeAttachment as decode, type AttachmentToDecode } from '../../domain/turns/decode-attachment.ts'
import { parseJsonBytes } from './parse-json-bytes.ts'

export function parseJson(bytes: Uint8Array) {
  return parseJsonBytes(bytes)
}

export function decodeAttachment(input: AttachmentToDecode) {
  return decode(input)
}

// Loaded by the first bundle a thread checks: Ajv and the tokenizer's ranks are not needed to parse a body.
export async function checkToolBundle(definitions: ToolDefinition[]) {
  const { checkToolBundle: check } = await import('../../domain/config/check-tool-bundle.ts')
  return { ...check(definitions), threadId }
}
