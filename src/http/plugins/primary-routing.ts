import type {} from '@fastify/cookie'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { IncomingHttpHeaders, ServerResponse } from 'node:http'
import { Agent, request as forward } from 'undici'
import { InvalidRequestError, UnavailableError } from '../../domain/errors.ts'
import { formatTxid, type ReplicationPosition } from '../../store/replication-position.ts'
import type { ReplicationRoleSource } from '../../store/replication-role.ts'
import { continueIfExpected } from './bounded-body.ts'
import { sendError } from './error-handler.ts'
import { mustWait, parseTxid, READ_RETRY_AFTER_S, READ_WAIT_MS, requestedTxid, TXID, TXID_COOKIE, txidCookie } from './read-your-writes.ts'

export { TXID } from './read-your-writes.ts'

/** Set on a request a replica hands to the primary; a node that is not the primary refuses it rather than pass it on. */
export const FORWARDED_BY = 'x-parley-forwarded-by'
/** How long a replica waits for its copy to catch up with a relayed write before answering anyway. */
const CATCH_UP_MS = 5_000

const READS = new Set(['GET', 'HEAD', 'OPTIONS'])
// Headers about this hop only (RFC 9110 §7.6.1), and the ones undici sets itself.
// Expect is answered here (the relay sends 100 Continue before it reads the body), never relayed.
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'host', 'expect'])
// The end of a turn's stream: its terminal frame.
const TERMINAL_FRAME = /(^|\n)event: (done|error)\n/

function endToEnd(headers: IncomingHttpHeaders | Record<string, string | string[] | undefined>) {
  const kept: Record<string, string | string[]> = {}
  for (const [name, value] of Object.entries(headers)) if (value !== undefined && !HOP_BY_HOP.has(name)) kept[name] = value
  return kept
}

/**
 * A hijacked answer (a turn's stream) writes its head itself, past Fastify's onSend: `stamp` adds
 * to it just before it goes, once the route has done its writes (a turn's admission is committed
 * before its stream opens).
 */
function beforeHijackedHead(reply: FastifyReply, stamp: (res: ServerResponse) => void): void {
  const res = reply.raw
  const writeHead = res.writeHead as (...args: unknown[]) => ServerResponse
  res.writeHead = function (this: ServerResponse, ...args: unknown[]) {
    // `sent` before the head is out: hijacked. Fastify's own replies stamp in onSend instead.
    if (reply.sent && !this.headersSent) stamp(this)
    return writeHead.apply(this, args)
  } as typeof res.writeHead
}

/**
 * Only the primary writes (LiteFS). On a replica every write, turns and cancels included, is
 * relayed to the primary before Fastify reads its body: the body streams through, and so does the
 * answer (a turn's server-sent events as they come). The chat's actor lives on the primary, which
 * `host.ownerOf` says too. Reads are served from the local copy; so that the caller's next read
 * sees its write, a relayed answer is completed only once this node's copy has that write: the
 * primary tells its position (TXID) in a header, or in a trailer after a stream, and the replica
 * holds the answer (a stream's terminal frame) until its own position is there (decision 009).
 *
 * So that the caller's next read sees its write on ANY node (decision 029), the primary also sets
 * the TXID as a cookie, and a keyed read (GET/HEAD) that presents a TXID, as the header or the
 * cookie, waits up to 2 s for this node's copy to reach it; else it answers 503 `unavailable` with
 * `Retry-After`, never older data as if current.
 */
export function installPrimaryRouting(app: FastifyInstance, role: ReplicationRoleSource, position: ReplicationPosition, nodeId: string): void {
  const agent = new Agent({ keepAliveTimeout: 10_000, connect: { timeout: 5_000 } })
  app.addHook('onClose', async () => agent.close())

  // On the primary: a write's answer carries the position it left the database at, as a header and a cookie.
  app.addHook('onSend', async (request, reply) => {
    if (READS.has(request.method) || role.current().kind !== 'primary') return
    const txid = position.current()
    if (txid !== null) reply.header(TXID, formatTxid(txid)).header('set-cookie', txidCookie(txid))
  })
  // A turn's stream carries the position at its opening (its admission's), and its trailer the final one.
  const stampPosition = (res: ServerResponse) => {
    const txid = position.current()
    if (txid === null) return
    res.setHeader(TXID, formatTxid(txid))
    res.appendHeader('set-cookie', txidCookie(txid))
  }

  // A read behind an API key (health, documents and catalogue never wait) that presents a TXID waits for this node to have it.
  app.addHook('preHandler', async (request, reply) => {
    if ((request.method !== 'GET' && request.method !== 'HEAD') || request.identity === null) return
    const requested = requestedTxid(request.headers[TXID], request.cookies?.[TXID_COOKIE])
    if (requested.kind === 'malformed') {
      throw new InvalidRequestError(`the ${TXID} header must be a TXID as Parley sends it: 16 hexadecimal digits`, undefined, `send back the ${TXID} of a write's answer unchanged, or no ${TXID} header`)
    }
    if (requested.kind === 'none' || !mustWait(requested.txid, position.current(), role.current().kind === 'primary')) return
    if (await position.waitFor(requested.txid, READ_WAIT_MS)) return
    const here = position.current()
    request.log.warn({ txid: formatTxid(requested.txid), here: here === null ? null : formatTxid(here), from: requested.from }, 'a read waited in vain for this replica to reach its TXID')
    reply.header('retry-after', String(READ_RETRY_AFTER_S))
    return sendError(
      reply,
      new UnavailableError(
        `this replica has not yet caught up with the write this read follows (TXID ${formatTxid(requested.txid)}, from the ${requested.from === 'header' ? `${TXID} header` : `${TXID_COOKIE} cookie`})`,
        { txid: formatTxid(requested.txid), position: here === null ? null : formatTxid(here) },
        `try again after Retry-After seconds; replication usually takes milliseconds`,
      ),
    )
  })

  const catchUp = async (request: FastifyRequest, txid: bigint | null) => {
    if (txid === null) return
    if (!(await position.waitFor(txid, CATCH_UP_MS))) {
      request.log.warn({ txid: formatTxid(txid), here: position.current()?.toString(16) }, 'this replica did not catch up with a relayed write in time')
    }
  }

  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    if (READS.has(request.method)) return
    const current = role.current()
    if (current.kind === 'primary') return beforeHijackedHead(reply, stampPosition)
    if (request.headers[FORWARDED_BY] !== undefined) {
      throw new UnavailableError(`this node is not the primary; the request was already relayed by ${String(request.headers[FORWARDED_BY])}`, undefined, 'try again shortly')
    }
    if (current.kind === 'replica-without-primary') {
      throw new UnavailableError('this node is a read replica and no primary is known (an election may be in progress)', undefined, 'try again shortly')
    }

    let answer: Awaited<ReturnType<typeof forward>>
    continueIfExpected(request.raw, reply.raw)
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
    // A stream opens at once; its end waits for the trailer's position instead (its header's is its admission's).
    const streamsPosition = String(answer.headers.trailer ?? '').toLowerCase().includes(TXID)
    if (!streamsPosition) await catchUp(request, parseTxid(answer.headers[TXID]))

    reply.hijack()
    const res = reply.raw
    res.writeHead(answer.statusCode, endToEnd(answer.headers))
    // A client that goes away stops the relay only: on the primary the turn runs on (docs/guide/turn-stream.md).
    res.on('close', () => answer.body.destroy())
    let held: Buffer[] = []
    answer.body.on('data', (chunk: Buffer) => {
      // From a stream's terminal frame on, the answer waits for the primary's final position.
      if (streamsPosition && (held.length > 0 || TERMINAL_FRAME.test(chunk.toString('utf8')))) held.push(chunk)
      else if (!res.write(chunk)) {
        answer.body.pause()
        res.once('drain', () => answer.body.resume())
      }
    })
    answer.body.on('error', () => res.destroy())
    answer.body.on('end', () => {
      void catchUp(request, parseTxid(answer.trailers[TXID])).then(() => {
        res.end(held.length > 0 ? Buffer.concat(held) : undefined)
        held = []
      })
    })
  })
}
