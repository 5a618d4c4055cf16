import { describe, expect, it } from 'vitest'
import { API_KEY_PREFIX, bearerToken, generateSecret, hashSecret, sameHash, SESSION_TOKEN_PREFIX } from '../../src/domain/credentials.ts'

describe('bearerToken', () => {
  it('extracts the token of a Bearer header, whatever the scheme’s case', () => {
    expect(bearerToken('Bearer pk_abc')).toBe('pk_abc')
    expect(bearerToken('bearer pk_abc')).toBe('pk_abc')
    expect(bearerToken('BEARER pk_abc')).toBe('pk_abc')
    expect(bearerToken('Bearer   pk_abc  ')).toBe('pk_abc')
  })

  it('gives null for anything else', () => {
    for (const header of [undefined, '', 'Bearer', 'Bearer ', 'Basic pk_abc', 'pk_abc', 'Bearer a b', 'Bearerpk_abc', 'Token pk_abc']) {
      expect(bearerToken(header), String(header)).toBeNull()
    }
  })
})

describe('secrets', () => {
  it('are prefixed and carry 32 random bytes', () => {
    const key = generateSecret(API_KEY_PREFIX)
    expect(key).toMatch(/^pk_[A-Za-z0-9_-]{43}$/)
    expect(Buffer.from(key.slice(3), 'base64url')).toHaveLength(32)
    expect(generateSecret(SESSION_TOKEN_PREFIX)).toMatch(/^cs_/)
    expect(generateSecret(API_KEY_PREFIX)).not.toBe(key)
  })

  it('hash deterministically to 32 bytes and compare by content', () => {
    const a = hashSecret('pk_one')
    expect(a).toHaveLength(32)
    expect(sameHash(a, hashSecret('pk_one'))).toBe(true)
    expect(sameHash(a, hashSecret('pk_two'))).toBe(false)
    expect(sameHash(a, a.subarray(0, 16))).toBe(false)
  })
})
