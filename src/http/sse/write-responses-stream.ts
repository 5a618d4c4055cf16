import type { FastifyReply } from 'fastify'
import type { RunEventSource } from '../../actors/run-channel.ts'
import type { ResponsesEvent } from '../../domain/openai/stream-events.ts'
import { createEventTranslator } from '../../domain/openai/stream-events.ts'
import type { ResponseObject } from '../../domain/openai/response-object.ts'
import type { CompactionItem } from '../../domain/openai/compaction-item.ts'
import { HEARTBEAT_MS, type OpenStreams } from './write-run-stream.ts'

const sse = (e: ResponsesEvent) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`

/**
 * A run streamed as the Responses event sequence (docs/decisions/055-openai-facade.md): the opening
 * `response.created` and `response.in_progress`, each frame of the run translated as it comes, then
 * once the run is settled the terminal event with the response as the ledger holds it (`settled`). Like the native stream, closing the connection only stops this reader: the run goes on.
 */
export function writeResponsesStream(
  reply: FastifyReply,
  runId: string,
  source: RunEventSource,
  opening: ResponseObject,
  settled: Promise<ResponseObject>,
  streams: OpenStreams,
  compactionItem: () => CompactionItem | null,
): void {
  reply.hijack()
  const res = reply.raw
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
    'x-request-id': String(reply.request.id),
  })
  const translator = createEventTranslator(runId, { compactionItem })
  let cursor = 0
  let finished = false
  let draining = false
  let scheduled = false
  const gone = () => res.writableEnded || res.destroyed

  const finishOnce = (last: string) => {
    if (finished) return
    finish()
    if (!gone()) res.end(last)
  }
  const pump = () => {
    scheduled = false
    if (finished || draining || gone()) return
    let chunk = ''
    while (cursor < source.size) {
      const event = source.at(cursor++)!
      if (event.type !== 'frame') continue
      const { frame } = event
      if (frame.event === 'done' || frame.event === 'error') {
        if (chunk !== '') res.write(chunk)
        // The terminal event carries the settled response: its usage and status are the ledger's.
        settled.then(
          (response) => finishOnce(translator.terminal(response).map(sse).join('')),
          () => finishOnce(''),
        )
        stopWaking()
        return
      }
      for (const e of translator.frame(frame)) chunk += sse(e)
    }
    if (chunk !== '' && !res.write(chunk)) {
      draining = true
      res.once('drain', () => {
        draining = false
        pump()
      })
    }
  }
  const schedule = () => {
    if (scheduled) return
    scheduled = true
    process.nextTick(pump)
  }
  const heartbeat = setInterval(() => {
    if (!draining && !gone()) res.write(': keep-alive\n\n')
  }, HEARTBEAT_MS)
  // Shutdown: the run is settled as interrupted by the next start; this stream ends with an error event.
  const shutDown = () =>
    new Promise<void>((resolve) => {
      if (gone() || finished) return resolve()
      const error = { type: 'error', sequence_number: 0, code: 'server_shutting_down', message: 'the server is shutting down; read the response later', param: null }
      finish()
      res.end(`event: error\ndata: ${JSON.stringify(error)}\n\n`, resolve)
    })
  let stopWaking = () => {}
  const finish = () => {
    finished = true
    clearInterval(heartbeat)
    stopWaking()
    streams.delete(shutDown)
  }
  streams.add(shutDown)
  res.on('close', finish)
  res.write(translator.opening(opening).map(sse).join(''))
  stopWaking = source.wake(schedule)
  schedule()
}
