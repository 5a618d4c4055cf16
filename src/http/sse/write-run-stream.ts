import type { FastifyReply } from 'fastify'
import type { Admission } from '../../actors/turn-types.ts'
import { formatTxid, type ReplicationPosition } from '../../store/replication-position.ts'
import { TXID as TXID_TRAILER } from '../plugins/primary-routing.ts'

export const HEARTBEAT_MS = 15_000

const frame = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`

/**
 * The streams an app has open, each with the function that ends it. A stream stays open until its
 * run ends, so closing the app must end them itself (a `preClose` hook): otherwise close() would
 * wait on them forever and a SIGTERM would never finish.
 */
export type OpenStreams = Set<() => Promise<void>>

export async function endOpenStreams(streams: OpenStreams): Promise<void> {
  await Promise.all([...streams].map((end) => end()))
}

/**
 * Streams a run as server-sent events: `run`, `config_warnings`, `translation_warnings`, then the
 * run's frames as they come, one write per frame. Closing the connection only unsubscribes: the
 * run goes on, persists and settles (docs/guide/turn-stream.md).
 */
export function writeRunStream(reply: FastifyReply, admission: Admission, streams?: OpenStreams, position?: ReplicationPosition): void {
  reply.hijack()
  const res = reply.raw
  // The LiteFS position after the run goes out as a trailer, so a relaying replica can wait for it (decision 009).
  const trailsPosition = position !== undefined && position.current() !== null
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
    'x-request-id': String(reply.request.id),
    ...(trailsPosition ? { trailer: TXID_TRAILER } : {}),
  })
  // Frames that come in the same tick (the opening ones, a replayed backlog, a provider's burst)
  // leave as one string in one write; each is on the wire before the event loop moves on.
  let pending = ''
  const flush = () => {
    const chunk = pending
    pending = ''
    if (chunk !== '' && !res.writableEnded && !res.destroyed) res.write(chunk)
  }
  const write = (chunk: string) => {
    if (pending === '') process.nextTick(flush)
    pending += chunk
  }
  /** The last frames go with the end of the response. */
  const end = (then?: () => void) => {
    const chunk = pending
    pending = ''
    const txid = trailsPosition ? position!.current() : null
    if (txid !== null) res.addTrailers({ [TXID_TRAILER]: formatTxid(txid) })
    res.end(chunk, then)
  }
  write(frame('run', { chat_id: admission.chatId, run_id: admission.runId, closed_tool_calls: admission.closedToolCalls }))
  write(frame('config_warnings', { warnings: admission.configWarnings }))
  write(frame('translation_warnings', { warnings: admission.translationWarnings }))

  const heartbeat = setInterval(() => write(': heartbeat\n\n'), HEARTBEAT_MS)
  let unsubscribe = () => {}
  // Shutdown: the run stops with the server and is settled as interrupted by the next start
  // (docs/guide/runs.md); docs/guide/turn-stream.md makes that an `error` event on an open stream.
  const shutDown = () =>
    new Promise<void>((resolve) => {
      if (res.writableEnded || res.destroyed) return resolve()
      write(
        frame('error', {
          code: 'unavailable',
          message: 'the server is shutting down; this run stops here and is settled as interrupted',
          details: { run_id: admission.runId },
          hint: `read GET /api/v1/runs/${admission.runId} and the chat history later; send retry_of once the run has failed`,
        }),
      )
      finish()
      end(resolve)
    })
  const finish = () => {
    clearInterval(heartbeat)
    unsubscribe()
    streams?.delete(shutDown)
  }
  streams?.add(shutDown)
  res.on('close', finish)
  unsubscribe = admission.channel.subscribe((f) => {
    if (res.writableEnded || res.destroyed) return
    write(frame(f.event, f.data))
    if (f.event === 'done' || f.event === 'error') {
      finish()
      end()
    }
  })
}
