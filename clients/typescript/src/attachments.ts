import type { components } from './schema.ts'

export type SubmittedMedia = components['schemas']['SubmittedMedia']

/**
 * An attachment for a prompt or tool result: the bytes as standard base64 (no data-URI prefix) with
 * their MIME type. The server checks the type against the model's media capabilities and the bytes.
 */
export function attachment(bytes: Uint8Array, mime: string, filename?: string): SubmittedMedia {
  return { mime, data_base64: toBase64(bytes), ...(filename === undefined ? {} : { filename }) }
}

function toBase64(bytes: Uint8Array): string {
  // btoa takes a binary string; built in chunks so a large file does not overflow the call stack.
  let binary = ''
  const CHUNK = 0x8000
  for (let i = 0; i < bytes.length; i += CHUNK) binary += String.fromCharCode(...bytes.subarray(i, i + CHUNK))
  return btoa(binary)
}
