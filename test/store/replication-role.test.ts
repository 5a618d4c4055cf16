import { mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { litefsRole, roleFrom } from '../../src/store/replication-role.ts'

describe("roleFrom: what LiteFS's .primary file says of this node", () => {
  it.each([
    ['no file: this node is the primary', null, { kind: 'primary' }],
    ['a host name: a replica, the primary on our port', 'e286e2cf1b5e68.vm.parley.internal\n', { kind: 'replica', primaryUrl: 'http://e286e2cf1b5e68.vm.parley.internal:8080' }],
    ['a host with its port', '127.0.0.1:4321', { kind: 'replica', primaryUrl: 'http://127.0.0.1:4321' }],
    ['an empty file: a replica that knows no primary', ' \n', { kind: 'replica-without-primary' }],
    ['something that is no host', 'not a host/at all:99999', { kind: 'replica-without-primary' }],
  ])('%s', (_, content, role) => {
    expect(roleFrom(content, 8080)).toEqual(role)
  })

  it.each([
    ['lag 0: LiteFS holds the lease, this node is the primary', '+0000000000\n', { kind: 'primary' }],
    ['a growing lag: a replica cut off from its primary (LiteFS 0.5 removes .primary then)', '+0000005223\n', { kind: 'replica-without-primary' }],
    ['never synced', '+2147483647\n', { kind: 'replica-without-primary' }],
  ])('no .primary file, .lag %s', (_, lag, role) => {
    expect(roleFrom(null, 8080, lag)).toEqual(role)
  })
})

describe('litefsRole', () => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-role-'))
  const file = join(dir, '.primary')
  const lag = join(dir, '.lag')
  afterEach(() => {
    rmSync(file, { force: true })
    rmSync(lag, { force: true })
  })

  it('reads the file at most once per interval, then sees changes', () => {
    let now = 0
    const role = litefsRole(file, lag, 8080, 1_000, () => now)
    expect(role.current()).toEqual({ kind: 'primary' })
    writeFileSync(file, 'primary.internal')
    now = 999
    expect(role.current()).toEqual({ kind: 'primary' })
    now = 1_000
    expect(role.current()).toEqual({ kind: 'replica', primaryUrl: 'http://primary.internal:8080' })
    unlinkSync(file)
    now = 2_000
    expect(role.current()).toEqual({ kind: 'primary' })
  })

  it('a lost primary under LiteFS: .primary gone and .lag growing is no promotion', () => {
    let now = 0
    const role = litefsRole(file, lag, 8080, 100, () => now)
    writeFileSync(file, '127.0.0.1:4000')
    writeFileSync(lag, '+0000000004\n')
    expect(role.current()).toEqual({ kind: 'replica', primaryUrl: 'http://127.0.0.1:4000' })
    unlinkSync(file)
    writeFileSync(lag, '+0000000416\n')
    now = 100
    expect(role.current()).toEqual({ kind: 'replica-without-primary' })
    writeFileSync(lag, '+0000000000\n')
    now = 200
    expect(role.current()).toEqual({ kind: 'primary' })
  })
})
