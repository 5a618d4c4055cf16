import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { AdminError } from '../../src/cli/admin-commands.ts'
import { runHandoff } from '../../src/cli/admin-handoff.ts'
import { openDatabase } from '../../src/store/database.ts'
import { readSettings } from '../../src/settings.ts'

/**
 * The fenced handoff (docs/decisions/052-fenced-handoff.md) on a plain directory standing in for a
 * LiteFS mount: the role comes from its `.primary` file, as the server reads it. The target's
 * LiteFS API is a test double (`fetch` given to runHandoff): it records whether another connection
 * could write while the promotion was asked, and "moves" the lease by writing `.primary`, as LiteFS
 * does on the demoted node. The real handoff runs on a LiteFS cluster in test/cluster/failover.test.ts.
 */

let dir: string
let settings: ReturnType<typeof readSettings>

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'parley-admin-handoff-'))
  settings = readSettings({ LITEFS_DIR: dir, DATA_DIR: dir })
  openDatabase(settings.databaseFile).close()
})
afterEach(() => rmSync(dir, { recursive: true, force: true }))

/** Whether a writer on its own connection (the server's) can commit right now. */
function serverCanWrite(): boolean {
  const db = openDatabase(settings.databaseFile, { busyTimeoutMs: 0 })
  try {
    db.exec('BEGIN IMMEDIATE; UPDATE organisations SET name = name WHERE 0; COMMIT')
    return true
  } catch (error) {
    if ((error as { code?: string }).code === 'SQLITE_BUSY') return false
    throw error
  } finally {
    db.close()
  }
}

const demote = () => writeFileSync(settings.litefs!.primaryFile, 'node-2.internal\n')

describe('admin handoff', () => {
  it('holds the write lock from before the promotion is asked until this node is no longer the primary', async () => {
    const seen: { url: string; method: string | undefined; canWrite: boolean }[] = []
    let canWriteAfterDemotion: boolean | null = null
    const litefsDouble = (async (url: URL, init?: RequestInit) => {
      seen.push({ url: String(url), method: init?.method, canWrite: serverCanWrite() })
      // LiteFS moves the lease a little after answering; the command must still hold the lock then.
      setTimeout(() => {
        demote()
        canWriteAfterDemotion = serverCanWrite()
      }, 60)
      return new Response('', { status: 200 })
    }) as typeof fetch
    const printed = JSON.parse(await runHandoff(settings, ['http://node-2.internal:20202'], litefsDouble))
    expect(seen).toEqual([{ url: 'http://node-2.internal:20202/promote', method: 'POST', canWrite: false }])
    expect(canWriteAfterDemotion).toBe(false)
    expect(printed).toMatchObject({ handed_off_to: 'http://node-2.internal:20202', primary: 'http://node-2.internal:8080' })
    expect(printed.writes_held_ms).toBeGreaterThanOrEqual(60)
    // Let go once demoted: the lock is free again.
    expect(serverCanWrite()).toBe(true)
  })

  it('lets go of the lock and says why when the target refuses', async () => {
    const refusing = (async () => new Response('no primary is currently available for handoff', { status: 500 })) as typeof fetch
    await expect(runHandoff(settings, ['http://node-2.internal:20202'], refusing)).rejects.toThrow(/refused the handoff \(500\): no primary/)
    expect(serverCanWrite()).toBe(true)
  })

  it('refuses on a replica, without LiteFS, and for an argument that is not one http(s) URL, before asking anything', async () => {
    const never = (async () => {
      throw new Error('asked')
    }) as typeof fetch
    for (const argv of [[], ['ftp://x'], ['not a url'], ['http://a', 'http://b'], ['--to']]) {
      await expect(runHandoff(settings, argv, never), JSON.stringify(argv)).rejects.toBeInstanceOf(AdminError)
    }
    await expect(runHandoff({ ...settings, litefs: null }, ['http://node-2.internal:20202'], never)).rejects.toThrow(/needs LiteFS/)
    demote()
    await expect(runHandoff(settings, ['http://node-2.internal:20202'], never)).rejects.toThrow(/not the LiteFS primary.*node-2\.internal/)
  })
})
