import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { decodeBase64Strict } from '../../../src/domain/turns/check-attachments.ts'

// The regex the linear scan replaced (it overflowed the stack past ~3.2 MiB): same acceptance set.
const OLD = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

describe('decodeBase64Strict', () => {
  it('decodes standard base64 with every padding', () => {
    expect(decodeBase64Strict('')).toEqual(Buffer.alloc(0))
    expect(decodeBase64Strict('TWFu')).toEqual(Buffer.from('Man'))
    expect(decodeBase64Strict('TWE=')).toEqual(Buffer.from('Ma'))
    expect(decodeBase64Strict('TQ==')).toEqual(Buffer.from('M'))
    expect(decodeBase64Strict('+/+/')).toEqual(Buffer.from([0xfb, 0xff, 0xbf]))
  })

  it.each([
    ['unpadded', 'TWE'],
    ['unpadded, one char short', 'TQ'],
    ['too much padding', 'T==='],
    ['only padding', '===='],
    ['= inside', 'TQ==TWFu'],
    ['= in the middle of a quad', 'TW=u'],
    ['url-safe -', 'TW-u'],
    ['url-safe _', 'TW_u'],
    ['a space', 'TWFu TWFu'],
    ['a trailing newline', 'TWFu\n'],
    ['a leading newline', '\nTWFu'],
    ['a data: prefix', 'data:text/plain;base64,TWFu'],
    ['a non-ASCII letter', 'TWFé'],
    ['a lone =', '='],
  ])('rejects %s', (_name, value) => {
    expect(decodeBase64Strict(value)).toBeNull()
  })

  it('accepts exactly what the former regex accepted', () => {
    const char = fc.constantFrom(...'AZaz09+/=-_ \n\t.'.split(''))
    fc.assert(
      fc.property(fc.array(char, { maxLength: 14 }), (chars) => {
        const value = chars.join('')
        const decoded = decodeBase64Strict(value)
        expect(decoded !== null).toBe(OLD.test(value))
        if (decoded) expect(decoded).toEqual(Buffer.from(value, 'base64'))
      }),
      { numRuns: 5000 },
    )
  })

  it('round-trips 20 MiB of random bytes without a stack overflow', () => {
    const bytes = Buffer.alloc(20 * 1024 * 1024)
    for (let i = 0; i < bytes.length; i += 4096) bytes[i] = (i * 31) & 0xff
    for (const size of [bytes.length, bytes.length - 1, bytes.length - 2]) {
      const value = bytes.subarray(0, size).toString('base64')
      expect(decodeBase64Strict(value)!.equals(bytes.subarray(0, size))).toBe(true)
    }
    // One bad character at the very end of 20 MiB is still found.
    const good = bytes.toString('base64')
    expect(decodeBase64Strict(`${good.slice(0, -4)}AA-A`)).toBeNull()
  })
})
