import { existsSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { devKeyFile, keepDevCredentials, markDevBannerShown, owedDevBanner, renderDevBanner } from '../../src/cli/dev-banner.ts'
import { bootstrapDevOrganisation } from '../../src/store/bootstrap-dev-organisation.ts'
import { openTempStore } from '../helpers/temp-store.ts'

let temp: ReturnType<typeof openTempStore>
beforeEach(() => {
  temp = openTempStore()
})
afterEach(() => temp.close())

describe('the dev banner a failed first start owes', () => {
  it('is owed from creation until shown, with the key from the key file; the key file stays', () => {
    const dataDir = join(temp.dir, 'data')
    const dev = bootstrapDevOrganisation(temp.store)!
    keepDevCredentials(dataDir, dev)
    expect(readFileSync(devKeyFile(dataDir), 'utf8')).toBe(`${dev.key}\n`)
    expect(statSync(devKeyFile(dataDir)).mode & 0o777).toBe(0o600)
    expect(owedDevBanner(dataDir, temp.store)).toEqual({ orgId: dev.orgId, key: dev.key })
    markDevBannerShown(dataDir)
    expect(owedDevBanner(dataDir, temp.store)).toBeNull()
    expect(existsSync(devKeyFile(dataDir))).toBe(true)
  })

  it('is not owed once its key is revoked, nor when the key file is gone', () => {
    const dataDir = join(temp.dir, 'data')
    const dev = bootstrapDevOrganisation(temp.store)!
    keepDevCredentials(dataDir, dev)
    temp.store.apiKeys.revoke(dev.keyId)
    expect(owedDevBanner(dataDir, temp.store)).toBeNull()
    expect(owedDevBanner(join(temp.dir, 'elsewhere'), temp.store)).toBeNull()
  })

  it('names the organisation by id, the key, where the key is kept and how to try it', () => {
    const text = renderDevBanner({ orgId: 'org-1', key: 'pk_abc' }, '/data', 'http://127.0.0.1:8080')
    expect(text).toContain('Created organisation "dev" (id org-1)')
    expect(text).toContain('  pk_abc\n')
    expect(text).toContain('/data/dev-api-key.txt')
    expect(text).toContain('curl -s -X POST http://127.0.0.1:8080/api/v1/chats -H "Authorization: Bearer pk_abc"')
  })
})
