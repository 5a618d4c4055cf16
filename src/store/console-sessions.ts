import { SESSION_TOKEN_PREFIX, generateSecret, hashSecret } from '../domain/credentials.ts'
import { wallClock, type Clock, type Db } from './database.ts'

export const CONSOLE_SESSION_TTL_MS = 30 * 24 * 3600 * 1000

export function createConsoleSessionStore(db: Db, clock: Clock = wallClock) {
  const insert = db.prepare<[Buffer, string, string, string]>(
    'INSERT INTO console_sessions (token_hash, org_id, created_at, expires_at) VALUES (?, ?, ?, ?)',
  )
  const byHash = db.prepare<[Buffer, string], { org_id: string }>(
    'SELECT org_id FROM console_sessions WHERE token_hash = ? AND expires_at > ?',
  )
  return {
    create(orgId: string, now = clock()): { token: string; expires_at: string } {
      const token = generateSecret(SESSION_TOKEN_PREFIX)
      const expires = new Date(now.getTime() + CONSOLE_SESSION_TTL_MS).toISOString()
      insert.run(hashSecret(token), orgId, now.toISOString(), expires)
      return { token, expires_at: expires }
    },
    /** The organisation of a valid, unexpired session; null counts as anonymous. */
    organisationOf(token: string): string | null {
      return byHash.get(hashSecret(token), clock().toISOString())?.org_id ?? null
    },
  }
}
