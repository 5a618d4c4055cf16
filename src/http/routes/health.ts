import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { UnavailableError } from '../../domain/errors.ts'
import { activeModels } from '../../providers/catalogue/active-providers-line.ts'
import type { Db } from '../../store/database.ts'
import type { ReplicationRoleSource } from '../../store/replication-role.ts'
import { storageStall } from '../../store/storage-stall.ts'
import type { AppDeps } from '../app-deps.ts'
import { sendError } from '../plugins/error-handler.ts'
import { errors } from '../schemas/common.ts'
import { Liveness, Readiness } from '../schemas/health.ts'

/**
 * Can this node do its job? The primary must be able to write its SQLite file (a read-only file or
 * connection fails, and so does a write lock held elsewhere past the busy timeout); a replica writes nothing itself and only needs a primary to
 * relay writes to. Returns what to answer, or why not.
 */
export function checkReadiness(db: Db, role: ReplicationRoleSource): Pick<Readiness, 'status' | 'role'> | UnavailableError {
  // The probe would wait for litefs on the event loop (decision 048): not ready while it does not answer.
  if (storageStall.stalled()) return new UnavailableError(`the storage (litefs) has not answered for ${storageStall.stalledForMs()} ms`)
  const current = role.current()
  switch (current.kind) {
    case 'primary':
      return probeWrite(db)
    case 'replica':
      return { status: 'ready', role: 'replica' }
    case 'replica-without-primary':
      return new UnavailableError('this replica knows no primary yet (a LiteFS election is in progress)')
    default: {
      const unknownRole: never = current
      throw new Error(`unknown replication role ${JSON.stringify(unknownRole)}`)
    }
  }
}

/**
 * Takes the write lock, then writes the schema version onto itself: a read-only connection or file
 * takes the lock but refuses the write. ROLLBACK leaves the file as it was. A write lock held
 * elsewhere is waited for only as long as the connection's busy timeout (20 ms, decision 028): a
 * longer wait would freeze every other request with it.
 */
function probeWrite(db: Db): Pick<Readiness, 'status' | 'role'> | UnavailableError {
  try {
    const version = db.pragma('user_version', { simple: true }) as number
    db.prepare('BEGIN IMMEDIATE').run()
    db.pragma(`user_version = ${version}`)
    db.prepare('ROLLBACK').run()
    return { status: 'ready', role: 'primary' }
  } catch (error) {
    if (db.inTransaction) db.prepare('ROLLBACK').run()
    return new UnavailableError(`the database is not writable: ${(error as Error).message}`)
  }
}

/** Public probes for Fly's checks and load balancers: no API key, no rate limit. */
export const healthRoutes =
  (deps: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.get(
      '/healthz',
      {
        schema: {
          operationId: 'getLiveness',
          tags: ['public'],
          summary: 'Liveness: the process is up',
          description: 'Answers 200 as long as the process serves HTTP; it checks nothing else, so a restart is the only cure for its failure.',
          response: { 200: Type.Ref(Liveness) },
        },
      },
      async () => ({ status: 'ok' as const }),
    )

    app.get(
      '/readyz',
      {
        schema: {
          operationId: 'getReadiness',
          tags: ['public'],
          summary: 'Readiness: this node can serve reads and writes',
          description:
            'On the primary, 200 when the database takes a write lock; on a LiteFS replica, 200 when the primary is known ' +
            '(writes are relayed to it). Otherwise 503 `unavailable` in the error envelope. A ready answer also counts the active ' +
            'models per provider, and warns (still 200) when there is none, as every turn would then answer 422.',
          response: { 200: Type.Ref(Readiness), ...errors(503) },
        },
      },
      async (_request, reply) => {
        const verdict = checkReadiness(deps.store.db, deps.role)
        if (verdict instanceof UnavailableError) return sendError(reply, verdict)
        // No model is not unready: every node shares the environment, so a 503 would take reads down with turns (decision 035).
        return { ...verdict, ...activeModels(deps.catalogue.list()) }
      },
    )
  }
