import type { Problem } from './errors.ts'

export const USER_METADATA_MAX_BYTES = 1024

/** UserMetadata is at most 1024 bytes when serialised compactly (docs/guide/chats-and-ledger.md). */
export function checkUserMetadata(value: unknown, pointer: string): Problem | null {
  const bytes = Buffer.byteLength(JSON.stringify(value ?? {}), 'utf8')
  if (bytes <= USER_METADATA_MAX_BYTES) return null
  return { in: 'body', pointer, message: `must be at most ${USER_METADATA_MAX_BYTES} bytes when serialised compactly (got ${bytes})` }
}
