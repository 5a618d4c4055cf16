import type { FastifyReply } from 'fastify'
import type { RunEventSource, RunFrame } from '../../actors/run-channel.ts'
import { formatEventId, frameAfter } from '../../domain/runs/run-event-ids.ts'
import { formatTxid, type ReplicationPosition } from '../../store/replication-position.ts'
import { TXID as TXID_TRAILER } from '../plugins/primary-routing.ts'

export const HEARTBEAT_MS = 15_000

const frame = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`
/** A run's frame on the wire: `event:`, `data:`, then its `id:` (decision 038). */
const sequencedFrame = (runId: string, f: RunFrame) => `event: ${f.event}\ndata: ${JSON.stringify(f.data)}\nid: ${formatEventId(runId, f.seq)}\n\n`

/** Frames already known in full (a rebuilt stream), as a log of run events. */
export function fixedFrames(frames: readonly RunFrame[]): RunEventSource {
  const events = frames.map((frame) => ({ type: 'frame' as const, frame }))
  return { at: (index) => events[index], size: events.length, hasEnded: true, wake: () => () => {} }
}

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
 * Streams a run as server-sent events, `run`, `config_warnings`, `translation_warnings`, then the
 * run's frames as they come, each with its `id:`, after position `after` (0: all of them), from the
 * run's event log `source`. Closing the connection only stops the reader: the run goes on, persists
 * and settles (docs/guide/turn-stream.md). It is one reader with a cursor, which writes what has come since its last write in one write and,
 * when the socket's buffer is full, waits for 'drain' before it reads on. A slow reader therefore
 * holds only its cursor: it never slows the run or another reader (decision 038).
 */
export function writeRunFrames(
  reply: FastifyReply,
  runId: string,
  source: RunEventSource,
  after: number,
  streams?: OpenStreams,
  position?: ReplicationPosition,
): void {
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
  let cursor = 0
  let scheduled = false
  let draining = false
  let finished = false
  const gone = () => res.writableEnded || res.destroyed
  /** The frames that came since the last write, up to the terminal one; whether it was among them. */
  const take = (): { chunk: string; terminal: boolean } => {
    let chunk = ''
    while (cursor < source.size) {
      const event = source.at(cursor++)!
      // The log's other events (admission, opening, settlement) are the server's, not the stream's.
      if (event.type !== 'frame') continue
      const f = frameAfter(event.frame, after)
      if (f === null) continue
      chunk += sequencedFrame(runId, f)
      if (f.event === 'done' || f.event === 'error') return { chunk, terminal: true }
    }
    return { chunk, terminal: source.hasEnded }
  }
  /** The last frames go with the end of the response. */
  const end = (chunk: string, then?: () => void) => {
    finish()
    const txid = trailsPosition ? position!.current() : null
    if (txid !== null) res.addTrailers({ [TXID_TRAILER]: formatTxid(txid) })
    res.end(chunk, then)
  }
  const pump = () => {
    scheduled = false
    if (finished || draining || gone()) return
    const { chunk, terminal } = take()
    if (terminal) return end(chunk)
    if (chunk !== '' && !res.write(chunk)) {
      draining = true
      res.once('drain', () => {
        draining = false
        pump()
      })
    }
  }
  // Frames that come in the same tick (the opening ones, a replayed backlog, a provider's burst)
  // leave as one string in one write; the end goes at once.
  const schedule = () => {
    if (source.hasEnded) return pump()
    if (scheduled) return
    scheduled = true
    process.nextTick(pump)
  }

  const heartbeat = setInterval(() => {
    if (!draining && !gone()) res.write(': heartbeat\n\n')
  }, HEARTBEAT_MS)
  // Shutdown: the run stops with the server and is settled as interrupted by the next start
  // (docs/guide/runs.md); docs/guide/turn-stream.md makes that an `error` event on an open stream.
  // It is this connection's ending, not one of the run's frames: it has no id, so a client resumes
  // after the last frame it had and reads the run's own ending (decision 038).
  const shutDown = () =>
    new Promise<void>((resolve) => {
      if (gone()) return resolve()
      const { chunk } = draining ? { chunk: '' } : take()
      end(
        chunk +
          frame('error', {
            code: 'unavailable',
            message: 'the server is shutting down; this run stops here and is settled as interrupted',
            details: { run_id: runId },
            hint: `read GET /api/v1/runs/${runId} and the chat history later; send retry_of once the run has failed`,
          }),
        resolve,
      )
    })
  let stopWaking = () => {}
  const finish = () => {
    finished = true
    clearInterval(heartbeat)
    stopWaking()
    streams?.delete(shutDown)
  }
  streams?.add(shutDown)
  res.on('close', finish)
  stopWaking = source.wake(schedule)
  schedule()
}
