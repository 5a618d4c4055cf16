/** A running customer run of a chat and the lease that says whether someone streams it (docs/guide/runs.md). */
export type RunLease = { id: string; leaseOwner: string | null; leaseExpiresAt: string | null }

/**
 * docs/guide/runs.md: a lease is live while its expiry is still ahead (`is_live` on GET /runs/{id}, the
 * same comparison); at its expiry or after it, nobody is known to stream the run. ISO-8601 UTC
 * strings of one format compare as their instants.
 */
export function leaseIsLive(leaseExpiresAt: string | null, at: string): boolean {
  return leaseExpiresAt !== null && leaseExpiresAt > at
}
