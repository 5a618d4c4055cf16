import { randomUUID } from 'node:crypto'
import { API_KEY_PREFIX, generateSecret, hashSecret, sameHash } from '../domain/credentials.ts'
import { wallClock, type Clock, type Db } from './database.ts'

export type ApiKeyIdentity = { keyId: string; orgId: string }
type KeyRow = { id: string; org_id: string; secret_hash: Buffer; revoked_at: string | null }

export function createApiKeyStore(db: Db, clock: Clock = wallClock) {
  const insert = db.prepare<[string, string, string | null, Buffer, string]>(
    'INSERT INTO api_keys (id, org_id, name, secret_hash, created_at) VALUES (?, ?, ?, ?, ?)',
  )
  const byHash = db.prepare<[Buffer], KeyRow>(
    'SELECT id, org_id, secret_hash, revoked_at FROM api_keys WHERE secret_hash = ?',
  )
  const revoke = db.prepare<[string, string]>(
    'UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) WHERE id = ?',
  )
  const revokedAt = db.prepare<[string], { revoked_at: string | null }>('SELECT revoked_at FROM api_keys WHERE id = ?')

  return {
    /** Returns the secret; it is never stored and cannot be shown again. */
    create(orgId: string, name: string | null): { id: string; key: string } {
      const id = randomUUID()
      const key = generateSecret(API_KEY_PREFIX)
      insert.run(id, orgId, name, hashSecret(key), clock().toISOString())
      return { id, key }
    },
    authenticate(secret: string): ApiKeyIdentity | null {
      const hash = hashSecret(secret)
      const row = byHash.get(hash)
      if (!row || row.revoked_at !== null || !sameHash(row.secret_hash, hash)) return null
      return { keyId: row.id, orgId: row.org_id }
    },
    /** Revoking twice keeps the first revocation time. */
    revoke(id: string): { id: string; revoked_at: string } | null {
      revoke.run(clock().toISOString(), id)
      const row = revokedAt.get(id)
      return row?.revoked_at ? { id, revoked_at: row.revoked_at } : null
    },
  }
}
