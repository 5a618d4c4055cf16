import type { Store } from './index.ts'

export const DEV_ORG_SLUG = 'dev'
export const DEV_PROMOTIONAL_CREDIT = '10.00'

/**
 * First start (README.md): with no organisation at all, create `dev`, a key and 10.00 USD of
 * promotional credit, atomically. Returns null when the database already has organisations.
 */
export function bootstrapDevOrganisation(store: Store): { orgId: string; keyId: string; key: string } | null {
  return store.db.transaction(() => {
    if (store.organisations.count() > 0) return null
    const org = store.organisations.create('Development', DEV_ORG_SLUG)
    const { id, key } = store.apiKeys.create(org.id, 'dev')
    store.balance.add(org.id, 'promotional_credit', DEV_PROMOTIONAL_CREDIT)
    return { orgId: org.id, keyId: id, key }
  }).immediate()
}
