import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { formatTxid, litefsPosition, parsePosition } from '../../src/store/replication-position.ts'

describe("LiteFS's position file", () => {
  it('reads the TXID of "TXID/CHECKSUM" (16 hex digits each), and nothing else', () => {
    expect(parsePosition('00000000002df417/ce552e44f23fbbdd\n')).toBe(0x2df417n)
    expect(parsePosition('ffffffffffffffff/0000000000000000')).toBe(2n ** 64n - 1n)
    for (const junk of ['', '2df417/ce55', 'not a position', '00000000002df41g/ce552e44f23fbbdd']) expect(parsePosition(junk)).toBeNull()
    expect(formatTxid(0x2df417n)).toBe('00000000002df417')
  })

  it('waitFor resolves once the file reaches the TXID, or false when time runs out; no file is no position', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'parley-pos-')), 'parley.db-pos')
    const position = litefsPosition(file)
    expect(position.current()).toBeNull()
    writeFileSync(file, `${formatTxid(9n)}/0000000000000000\n`)
    expect(await position.waitFor(10n, 30)).toBe(false)
    setTimeout(() => writeFileSync(file, `${formatTxid(11n)}/0000000000000000\n`), 20)
    expect(await position.waitFor(10n, 2_000)).toBe(true)
    expect(position.current()).toBe(11n)
  })
})
