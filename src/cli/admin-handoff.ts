import { CLI_BUSY_TIMEOUT_MS, openDatabase } from '../store/database.ts'
import { litefsRole, type ReplicationRole } from '../store/replication-role.ts'
import type { Settings } from '../settings.ts'
import { AdminError, HANDOFF_USAGE } from './admin-commands.ts'
import { requireParleyDatabase } from './admin-run.ts'

/** How long the primary's LiteFS is given to hand the lease over and say so in `.primary`. */
export const HANDOFF_TIMEOUT_MS = 15_000
const ROLE_POLL_MS = 20

export type HandoffResult = { handed_off_to: string; primary: string | null; writes_held_ms: number }

/**
 * The planned handoff (docs/decisions/052-fenced-handoff.md). LiteFS's own (`litefs run -promote`)
 * ships the primary's pending transactions to the target and hands it the lease without stopping
 * writes, so a transaction that commits in between is acknowledged here and never reaches the new
 * primary. This command takes SQLite's write lock first (`BEGIN IMMEDIATE`, waiting for the
 * server's transaction in flight), asks the target to take the lease (`POST /promote`, as
 * `litefs run -promote` does), waits until this node's LiteFS no longer calls it the primary, and
 * only then lets go: the server's writes that waited meanwhile fail as a replica's do (503), never
 * acknowledged.
 */
export async function runHandoff(settings: Pick<Settings, 'databaseFile' | 'litefs'>, argv: string[], fetchImpl: typeof fetch = fetch): Promise<string> {
  if (argv.length !== 1 || argv[0]!.startsWith('-')) throw new AdminError(`handoff takes one argument, the target's LiteFS URL\n${HANDOFF_USAGE}`)
  const target = targetUrl(argv[0]!)
  if (!settings.litefs) throw new AdminError('handoff needs LiteFS (LITEFS_DIR): without it there is no lease to hand over')
  const role = litefsRole(settings.litefs.primaryFile, settings.litefs.lagFile, settings.litefs.primaryPort, 0)
  const before = role.current()
  if (before.kind !== 'primary') throw new AdminError(`this node is not the LiteFS primary; run handoff on the primary (${describe(before)})`)

  requireParleyDatabase(settings)
  const db = openDatabase(settings.databaseFile, { busyTimeoutMs: CLI_BUSY_TIMEOUT_MS })
  const heldAt = Date.now()
  try {
    db.exec('BEGIN IMMEDIATE')
    const answer = await fetchImpl(new URL('/promote', target), { method: 'POST', signal: AbortSignal.timeout(HANDOFF_TIMEOUT_MS) }).catch((error: unknown) => {
      throw new AdminError(`the target's LiteFS at ${target.origin} did not answer: ${error instanceof Error ? error.message : String(error)}`)
    })
    if (!answer.ok) throw new AdminError(`the target's LiteFS refused the handoff (${answer.status}): ${(await answer.text()).trim()}`)
    const after = await demoted(role.current, Date.now() + HANDOFF_TIMEOUT_MS)
    if (!after) throw new AdminError(`the target accepted, but this node still holds the lease after ${HANDOFF_TIMEOUT_MS} ms`)
    const result: HandoffResult = { handed_off_to: target.origin, primary: after.kind === 'replica' ? after.primaryUrl : null, writes_held_ms: Date.now() - heldAt }
    return `${JSON.stringify(result)}\n`
  } finally {
    try {
      if (db.inTransaction) db.exec('ROLLBACK')
    } finally {
      db.close()
    }
  }
}

function targetUrl(text: string): URL {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw new AdminError(`"${text}" is not a URL; give the target's LiteFS API, e.g. http://host:20202`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new AdminError(`"${text}" is not an http(s) URL`)
  return url
}

const describe = (role: ReplicationRole) => (role.kind === 'replica' ? `the primary is ${role.primaryUrl}` : 'no primary is known yet')

async function demoted(current: () => ReplicationRole, deadline: number): Promise<ReplicationRole | null> {
  for (;;) {
    const role = current()
    if (role.kind !== 'primary') return role
    if (Date.now() >= deadline) return null
    await new Promise((resolve) => setTimeout(resolve, ROLE_POLL_MS))
  }
}
