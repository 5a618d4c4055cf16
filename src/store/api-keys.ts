import { randomUUID } from 'node:crypto'
import { API_KEY_PREFIX, generateSecret, hashSecret, sameHash } from '../domain/credentials.ts'
import { wallClock, type Clock, type Db } from './database.ts'
import type { ReadMostly } from './read-mostly.ts'

export type ApiKeyIdentity = { keyId: string; orgId: string }
type KeyRow = { id: string; org_id: string; secret_hash: Buffer; revoked_at: string | null }
/** A key as an operator sees it: never its secret or hash. */
export type ApiKeyListing = { id: string; name: string | null; created_at: string; revoked_at: string | null; last_run_at: string | null }

export function createApiKeyStore(db: Db, clock: Clock = wallClock, readMostly?: ReadMostly) {
  const insert = db.prepare<[string, string, string | null, Buffer, string]>(
    'INSERT INTO api_keys (id, org_id, name, secret_hash, created_at) VALUES (?, ?, ?, ?, ?)',
  )
  const byHash = db.prepare<[Buffer], KeyRow>(
    'SELECT id, org_id, secret_hash, revoked_at FROM api_keys WHERE secret_hash = ?',
  )
  const revoke = db.prepare<[string, string]>(
    'UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) WHERE id = ?',
  )
  // Keys are not stamped on each request (that would be a write per request); the newest run a
  // key started is what the store knows of its use. Migration 0013's index walks the
  // organisation's runs newest first and stops at the key's first.
  const ofOrg = db.prepare<[string], ApiKeyListing>(
    `SELECT k.id, k.name, k.created_at, k.revoked_at,
       (SELECT r.created_at FROM runs r WHERE r.org_id = k.org_id AND r.api_key_id = k.id ORDER BY r.created_at DESC LIMIT 1) AS last_run_at
     FROM api_keys k WHERE k.org_id = ? ORDER BY k.created_at, k.rowid`,
  )
  const revokedAt = db.prepare<[string], { revoked_at: string | null }>('SELECT revoked_at FROM api_keys WHERE id = ?')
  // Every request authenticates: the key's row is kept between requests (src/store/read-mostly.ts).
  const identityOf = (hash: Buffer): ApiKeyIdentity | null => {
    const row = byHash.get(hash)
    if (!row || row.revoked_at !== null || !sameHash(row.secret_hash, hash)) return null
    return { keyId: row.id, orgId: row.org_id }
  }
  const kept = readMostly?.lookup((hashHex: string) => identityOf(Buffer.from(hashHex, 'hex')))

  return {
    /** Returns the secret; it is never stored and cannot be shown again. */
    create(orgId: string, name: string | null): { id: string; key: string } {
      const id = randomUUID()
      const key = generateSecret(API_KEY_PREFIX)
      insert.run(id, orgId, name, hashSecret(key), clock().toISOString())
      kept?.forget()
      return { id, key }
    },
    authenticate(secret: string): ApiKeyIdentity | null {
      const hash = hashSecret(secret)
      return kept ? kept.get(hash.toString('hex')) : identityOf(hash)
    },
    /** The organisation's keys, revoked ones included, oldest first. */
    listOfOrg: (orgId: string): ApiKeyListing[] => ofOrg.all(orgId),
    /** Revoking twice keeps the first revocation time. */
    revoke(id: string): { id: string; revoked_at: string } | null {
      revoke.run(clock().toISOString(), id)
      kept?.forget()
      const row = revokedAt.get(id)
      return row?.revoked_at ? { id, revoked_at: row.revoked_at } : null
    },
  }
}
