import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'

/**
 * API keys and console session tokens are 32 random bytes (docs/decisions/003-identity-and-money-storage.md).
 * Only their SHA-256 is stored: the secrets have full entropy, so a slow hash adds nothing.
 */
export const API_KEY_PREFIX = 'pk_'
export const SESSION_TOKEN_PREFIX = 'cs_'

export function generateSecret(prefix: string): string {
  return prefix + randomBytes(32).toString('base64url')
}

export function hashSecret(secret: string): Buffer {
  return createHash('sha256').update(secret, 'utf8').digest()
}

export function sameHash(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b)
}

/** Extracts the token of `Authorization: Bearer <token>`; anything else is no credential. */
export function bearerToken(header: string | undefined): string | null {
  if (!header) return null
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header)
  return match?.[1] ?? null
}
