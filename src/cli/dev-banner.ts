import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { resolve } from 'node:path'
import type { Store } from '../store/index.ts'

export type DevCredentials = { orgId: string; key: string }

export const devKeyFile = (dataDir: string) => resolve(dataDir, 'dev-api-key.txt')
/**
 * Present while the first start's banner has not been printed: it names the dev organisation,
 * whose key is in the key file already (decision 022: the key is kept nowhere else).
 */
const pendingFile = (dataDir: string) => resolve(dataDir, 'dev-banner-pending')

/** Before listening: the key where README.md puts it, and a note that the banner is still owed. */
export function keepDevCredentials(dataDir: string, dev: DevCredentials): void {
  // With LiteFS the database lives in the mount, and DATA_DIR may not exist yet.
  mkdirSync(dataDir, { recursive: true })
  writeFileSync(devKeyFile(dataDir), `${dev.key}\n`, { mode: 0o600 })
  writeFileSync(pendingFile(dataDir), `${dev.orgId}\n`, { mode: 0o600 })
}

/**
 * The banner an earlier start owes (it created the dev organisation, then failed before printing,
 * e.g. its port was taken), or null. A key revoked since, or files edited by hand, owe nothing.
 */
export function owedDevBanner(dataDir: string, store: Store): DevCredentials | null {
  if (!existsSync(pendingFile(dataDir)) || !existsSync(devKeyFile(dataDir))) return null
  const orgId = readFileSync(pendingFile(dataDir), 'utf8').trim()
  const key = readFileSync(devKeyFile(dataDir), 'utf8').trim()
  if (store.apiKeys.authenticate(key)?.orgId !== orgId) {
    markDevBannerShown(dataDir)
    return null
  }
  return { orgId, key }
}

export function markDevBannerShown(dataDir: string): void {
  rmSync(pendingFile(dataDir), { force: true })
}

/** Printed once on purpose (README.md); the logger redacts keys, so main writes it to stdout itself. */
export function renderDevBanner(dev: DevCredentials, dataDir: string, address: string): string {
  return (
    `\nCreated organisation "dev" (id ${dev.orgId}) with 10.00 USD of promotional credit.\n` +
    `API key (also in ${devKeyFile(dataDir)}):\n\n  ${dev.key}\n\nTry:\n\n` +
    `  curl -s -X POST ${address}/api/v1/chats -H "Authorization: Bearer ${dev.key}" ` +
    `-H 'content-type: application/json' -d '{"title":"hello"}'\n\n` +
    `Manage it with: npm run -s admin -- org show dev\n\n`
  )
}
