import { describe, expect, it } from 'vitest'
import { mustWait, parseTxid, requestedTxid, txidCookie } from '../../../src/http/plugins/read-your-writes.ts'

/** The pure part of read-your-writes across nodes (decision 029): what a read presents, and whether it waits. */

describe('parseTxid', () => {
  it('reads 16 hexadecimal digits, as LiteFS and Parley write a TXID, in either case', () => {
    expect(parseTxid('00000000002df417')).toBe(0x2df417n)
    expect(parseTxid('00000000002DF417')).toBe(0x2df417n)
    expect(parseTxid('ffffffffffffffff')).toBe(2n ** 64n - 1n)
  })

  it('refuses anything else: shorter, longer, a position with its checksum, not hex, not a string', () => {
    for (const bad of ['', '2df417', '000000000002df4170', '00000000002df417/ce552e44f23fbbdd', '00000000002df41g', ' 00000000002df417', undefined, null, 42, ['00000000002df417']]) {
      expect(parseTxid(bad), String(bad)).toBeNull()
    }
  })
})

describe('requestedTxid', () => {
  const a = '0000000000000064'
  const b = '00000000000000c8'

  it('is none without a header or a cookie', () => {
    expect(requestedTxid(undefined, undefined)).toEqual({ kind: 'none' })
  })

  it('takes the header, which wins over the cookie', () => {
    expect(requestedTxid(a, undefined)).toEqual({ kind: 'txid', txid: 0x64n, from: 'header' })
    expect(requestedTxid(a, b)).toEqual({ kind: 'txid', txid: 0x64n, from: 'header' })
  })

  it('takes the cookie when there is no header', () => {
    expect(requestedTxid(undefined, b)).toEqual({ kind: 'txid', txid: 0xc8n, from: 'cookie' })
  })

  it('calls a header that is not one TXID malformed (the caller set it), even beside a good cookie', () => {
    expect(requestedTxid('latest', b)).toEqual({ kind: 'malformed', value: 'latest' })
    expect(requestedTxid('', undefined)).toEqual({ kind: 'malformed', value: '' })
    expect(requestedTxid([a, b], undefined)).toEqual({ kind: 'malformed', value: `${a}, ${b}` })
  })

  it('ignores a cookie that is not a TXID: the client may not know it holds one', () => {
    expect(requestedTxid(undefined, 'garbage')).toEqual({ kind: 'none' })
    expect(requestedTxid(undefined, '')).toEqual({ kind: 'none' })
  })
})

describe('mustWait', () => {
  it('waits on a replica whose copy is behind the TXID', () => {
    expect(mustWait(100n, 99n, false)).toBe(true)
  })

  it('does not wait on a replica that has it already', () => {
    expect(mustWait(100n, 100n, false)).toBe(false)
    expect(mustWait(100n, 101n, false)).toBe(false)
  })

  it('never waits on the primary, whose copy is the newest there is', () => {
    expect(mustWait(100n, 1n, true)).toBe(false)
  })

  it('never waits without LiteFS (no position: one node, always current)', () => {
    expect(mustWait(100n, null, false)).toBe(false)
  })
})

describe('txidCookie', () => {
  it('is the TXID as Parley writes it, for the whole site, five minutes, out of scripts, same-site', () => {
    expect(txidCookie(0x2df417n)).toBe('parley-txid=00000000002df417; Max-Age=300; Path=/; HttpOnly; SameSite=Lax')
  })
})
