import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { IncomingHttpHeaders } from 'node:http'
import { Agent, request as forward } from 'undici'
import { UnavailableError } from '../../domain/errors.ts'
import type { ReplicationRoleSource } from '../../store/replication-role.ts'

/** Set on a request a replica hands to the primary; a node that is not the primary refuses it rather than pass it on. */
export const FORWARDED_BY = 'x-parley-forwarded-by'

const READS = new Set(['GET', 'HEAD', 'OPTIONS'])
// Headers about this hop only (RFC 9110 §7.6.1), and the ones undici sets itself.
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'host'])

function endToEnd(headers: IncomingHttpHeaders | Record<string, string | string[] | undefined>) {
  const kept: Record<string, string | string[]> = {}
  for (const [name, value] of Object.entries(headers)) if (value !== undefined && !HOP_BY_HOP.has(name)) kept[name] = value
  return kept
}

/**
 * Only the primary writes (LiteFS). On a replica every write, turns and cancels included, is
 * relayed to the primary before Fastify reads its body: the body streams through, and so does the
 * answer (a turn's server-sent events as they come). The chat's actor lives on the primary, which
 * `host.ownerOf` says too. Reads are served from the local copy.
 */
export function installPrimaryRouting(app: FastifyInstance, role: ReplicationRoleSource, nodeId: string): void {
  const agent = new Agent({ keepAliveTimeout: 10_000, connect: { timeout: 5_000 } })
  app.addHook('onClose', async () => agent.close())

  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    if (READS.has(request.method)) return
    const current = role.current()
    if (current.kind === 'primary') return
    if (request.headers[FORWARDED_BY] !== undefined) {
      throw new UnavailableError(`this node is not the primary; the request was already relayed by ${String(request.headers[FORWARDED_BY])}`, undefined, 'try again shortly')
    }
    if (current.kind === 'replica-without-primary') {
      throw new UnavailableError('this node is a read replica and no primary is known (an election may be in progress)', undefined, 'try again shortly')
    }

    let answer: Awaited<ReturnType<typeof forward>>
    try {
      answer = await forward(`${current.primaryUrl}${request.url}`, {
        method: request.method as 'POST',
        headers: { ...endToEnd(request.headers), [FORWARDED_BY]: nodeId },
        body: request.raw,
        dispatcher: agent,
        // A turn's stream may stay quiet between frames for as long as its provider does.
        bodyTimeout: 0,
        headersTimeout: 60_000,
      })
    } catch (error) {
      request.log.warn({ err: error, primary: current.primaryUrl }, 'relaying a write to the primary failed')
      throw new UnavailableError(`the primary (${current.primaryUrl}) did not answer`, undefined, 'try again shortly')
    }
    reply.hijack()
    const res = reply.raw
    res.writeHead(answer.statusCode, endToEnd(answer.headers))
    // A client that goes away stops the relay only: on the primary the turn runs on (spec §4.2).
    res.on('close', () => answer.body.destroy())
    answer.body.on('error', () => res.destroy())
    answer.body.pipe(res)
  })
}
