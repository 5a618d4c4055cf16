import { readFileSync } from 'node:fs'

/**
 * This node's part in LiteFS replication. Only the primary writes; a replica serves reads from its
 * copy and hands every write to the primary.
 */
export type ReplicationRole =
  | { kind: 'primary' }
  | { kind: 'replica'; primaryUrl: string }
  /** A replica that knows no primary (an election in progress): writes get 503. */
  | { kind: 'replica-without-primary' }

export type ReplicationRoleSource = {
  current: () => ReplicationRole
  /**
   * Whether the primary is the only process that can write: LiteFS guarantees it (one lease holder,
   * replicas' files read-only). Then a running run of another node found by the primary is dead,
   * and is settled at once rather than after its lease (docs/decisions/009-multi-node-litefs.md).
   * Without LiteFS, another process may share the file and still stream it (decision 018).
   */
  exclusiveWriter: boolean
}

/** Without LiteFS (one laptop, one process) this node is the primary. */
export const ALWAYS_PRIMARY: ReplicationRoleSource = { current: () => ({ kind: 'primary' }), exclusiveWriter: false }

/**
 * Reads LiteFS's `.primary` file: on a replica connected to its primary it holds the primary's host
 * name (its lease's advertised host). The primary's API is at that host on `primaryPort`, unless
 * the file names a port itself (`host:port`). LiteFS 0.5 also leaves the file absent on a replica
 * that lost its primary (an election in progress), so an absent file means "primary" only when the
 * `.lag` file beside it says 0: LiteFS sets it to 0 when it takes the lease, and on a replica it
 * counts the milliseconds since its primary last spoke. Without a `.lag` file (not a LiteFS mount:
 * the tests' shared-file stand-in), an absent `.primary` means primary. Both are read at most once
 * per `ttlMs` (a tenth of a second: a demoted node must stop taking writes quickly), since every
 * write asks.
 */
export function litefsRole(primaryFile: string, lagFile: string, primaryPort: number, ttlMs = 100, clock = () => Date.now()): ReplicationRoleSource {
  let known: ReplicationRole = { kind: 'primary' }
  let readAt = Number.NEGATIVE_INFINITY
  return {
    exclusiveWriter: true,
    current() {
      const now = clock()
      if (now - readAt < ttlMs) return known
      readAt = now
      const primary = readIfThere(primaryFile)
      known = roleFrom(primary, primaryPort, primary === null ? readIfThere(lagFile) : null)
      return known
    },
  }
}

function readIfThere(file: string): string | null {
  try {
    return readFileSync(file, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw error
  }
}

/**
 * What a `.primary` file's content (null when there is none) says of this node; with no `.primary`,
 * the `.lag` file's content (null when there is none) decides.
 */
export function roleFrom(content: string | null, primaryPort: number, lag: string | null = null): ReplicationRole {
  if (content === null) {
    if (lag === null) return { kind: 'primary' }
    return /^\+?0+$/.test(lag.trim()) ? { kind: 'primary' } : { kind: 'replica-without-primary' }
  }
  const host = content.trim()
  if (host === '') return { kind: 'replica-without-primary' }
  let url: URL
  try {
    url = new URL(`http://${host}`)
  } catch {
    return { kind: 'replica-without-primary' }
  }
  if (url.port === '') url.port = String(primaryPort)
  return { kind: 'replica', primaryUrl: url.origin }
}
