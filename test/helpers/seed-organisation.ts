import { join } from 'node:path'
import { openDatabase } from '../../src/store/database.ts'
import { createStore } from '../../src/store/index.ts'

export type SeededOrganisation = { orgId: string; key: string; chats: string[] }

/**
 * Writes an organisation with an API key, `credit` USD of balance and `chats` empty chats in
 * `namespace` straight into DATA_DIR's database, before a server process is started on it.
 */
export function seedOrganisation(dataDir: string, options: { name: string; credit: string; chats?: number; namespace?: string }): SeededOrganisation {
  const db = openDatabase(join(dataDir, 'parley.db'))
  try {
    const store = createStore(db)
    const org = store.organisations.create(options.name, options.name.toLowerCase())
    const { key } = store.apiKeys.create(org.id, options.name.toLowerCase())
    store.balance.add(org.id, 'topup', options.credit)
    const chats = db.transaction(() =>
      Array.from({ length: options.chats ?? 0 }, (_, i) => store.chats.create({ orgId: org.id, namespace: options.namespace ?? null, title: `${options.name} ${i}`, description: null, userMetadata: {} }).id),
    )()
    return { orgId: org.id, key, chats }
  } finally {
    db.close()
  }
}
