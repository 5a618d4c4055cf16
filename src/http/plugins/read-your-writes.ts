import { formatTxid } from '../../store/replication-position.ts'

/**
 * Read-your-writes on any node (decision 029), the pure part: what a request asks for and what a
 * node does about it. primary-routing.ts applies it.
 *
 * The primary tells the LiteFS position (TXID) a write left the database at, as the header
 * `x-parley-txid` and as the cookie `parley-txid` (a trailer, after a turn's stream). A read that
 * presents one, on a replica behind it, waits for its copy to get there.
 */

/** The primary's LiteFS TXID: on a write's answer (a header, or a trailer after a stream) and on a read's request. */
export const TXID = 'x-parley-txid'
/** The same TXID as a cookie, for clients that keep cookies rather than headers. */
export const TXID_COOKIE = 'parley-txid'
/** Long enough for any replication delay worth waiting for; short, so a stale cookie does not linger. */
export const TXID_COOKIE_MAX_AGE_S = 300
/** How long a read waits for this node's copy to reach the TXID it presents before answering 503. */
export const READ_WAIT_MS = 2_000
/** The 503's `Retry-After`, in seconds. */
export const READ_RETRY_AFTER_S = 1

/** A TXID as LiteFS and Parley write it: 16 hex digits; null for anything else. */
export const parseTxid = (value: unknown): bigint | null => (typeof value === 'string' && /^[0-9a-f]{16}$/i.test(value) ? BigInt(`0x${value}`) : null)

/**
 * The `Set-Cookie` value that carries a write's TXID. Not `Secure`: it holds no secret, and it must
 * work over plain HTTP too (a laptop, the relay between nodes).
 */
export const txidCookie = (txid: bigint): string => `${TXID_COOKIE}=${formatTxid(txid)}; Max-Age=${TXID_COOKIE_MAX_AGE_S}; Path=/; HttpOnly; SameSite=Lax`

export type RequestedTxid =
  | { kind: 'none' }
  /** A header the caller set that is not a TXID: answered 400. */
  | { kind: 'malformed'; value: string }
  | { kind: 'txid'; txid: bigint; from: 'header' | 'cookie' }

/**
 * The TXID a read presents. The header wins over the cookie. A header that is not one TXID is
 * malformed (the caller set it, so they hear about it); a cookie that is not one is ignored (a
 * browser sends whatever it kept, and the caller may not know it exists).
 */
export function requestedTxid(header: string | string[] | undefined, cookie: string | undefined): RequestedTxid {
  if (header !== undefined) {
    const txid = parseTxid(header)
    return txid === null ? { kind: 'malformed', value: Array.isArray(header) ? header.join(', ') : header } : { kind: 'txid', txid, from: 'header' }
  }
  const txid = parseTxid(cookie)
  return txid === null ? { kind: 'none' } : { kind: 'txid', txid, from: 'cookie' }
}

/**
 * Whether a read must wait before it is served. Never on the primary: its copy is the newest there
 * is (a TXID ahead of it names a write lost in a failover, or one it never issued). Never without
 * LiteFS (`here` null: one node, always current). Otherwise, while this node's copy is behind.
 */
export function mustWait(requested: bigint, here: bigint | null, isPrimary: boolean): boolean {
  return !isPrimary && here !== null && here < requested
}
