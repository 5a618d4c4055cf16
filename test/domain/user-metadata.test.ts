import { describe, expect, it } from 'vitest'
import { checkUserMetadata, USER_METADATA_MAX_BYTES } from '../../src/domain/user-metadata.ts'

describe('checkUserMetadata', () => {
  it('accepts up to 1024 bytes of compact JSON', () => {
    expect(USER_METADATA_MAX_BYTES).toBe(1024)
    const exact = { a: 'x'.repeat(1016) }
    expect(Buffer.byteLength(JSON.stringify(exact))).toBe(1024)
    expect(checkUserMetadata(exact, '/user_metadata')).toBeNull()
    expect(checkUserMetadata({}, '/user_metadata')).toBeNull()
    expect(checkUserMetadata(undefined, '/user_metadata')).toBeNull()
  })

  it('rejects 1025 bytes with a problem at the given pointer', () => {
    const problem = checkUserMetadata({ a: 'x'.repeat(1017) }, '/user_metadata')
    expect(problem).toEqual({ in: 'body', pointer: '/user_metadata', message: expect.stringContaining('1024') })
  })

  it('counts UTF-8 bytes, not characters', () => {
    const value = { a: 'é'.repeat(509) } // 8 + 1018 bytes, 517 characters
    expect(JSON.stringify(value).length).toBeLessThan(1024)
    expect(checkUserMetadata(value, '/m')).not.toBeNull()
  })

  it('measures compact serialisation, not pretty-printed', () => {
    const nested = { a: { b: { c: 'x'.repeat(990) } } }
    expect(Buffer.byteLength(JSON.stringify(nested))).toBeLessThanOrEqual(1024)
    expect(Buffer.byteLength(JSON.stringify(nested, null, 2))).toBeGreaterThan(1024)
    expect(checkUserMetadata(nested, '/m')).toBeNull()
  })
})
