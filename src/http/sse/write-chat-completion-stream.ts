import type { FastifyReply } from 'fastify'
import type { RunEventSource } from '../../actors/run-channel.ts'
import { createChunkTranslator, type ChatCompletionChunk } from '../../domain/openai/chat-completion-chunks.ts'
import type { ResponseObject } from '../../domain/openai/response-object.ts'
import { HEARTBEAT_MS, type OpenStreams } from './write-run-stream.ts'

const data = (c: ChatCompletionChunk) => `data: ${JSON.stringify(c)}\n\n`
const DONE = 'data: [DONE]\n\n'

/**
 * A run streamed as Chat Completions chunks (docs/decisions/063-chat-completions.md): `data:` lines
 * only, as OpenAI sends them, ending `data: [DONE]`. The last chunk waits for the settled response
 * (`finished`), so its finish reason and usage are the ledger's. A run that failed ends with an
 * `error` object instead, which OpenAI's SDKs raise. Closing the connection only stops this reader.
 */
export function writeChatCompletionStream(
  reply: FastifyReply,
  opening: { runId: string; model: string; created: number; includeUsage: boolean },
  source: RunEventSource,
  finished: Promise<ResponseObject>,
  streams: OpenStreams,
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
  const translator = createChunkTranslator(opening.runId, opening.model, opening.created, { includeUsage: opening.includeUsage })
  let cursor = 0
  let finishedStream = false
  let draining = false
  let scheduled = false
  const gone = () => res.writableEnded || res.destroyed
  const finishOnce = (last: string) => {
    if (finishedStream) return
    finish()
    if (!gone()) res.end(last)
  }
  const terminal = (response: ResponseObject) => {
    if (response.status === 'failed') {
      const code = response.error?.code ?? 'server_error'
      return `data: ${JSON.stringify({ error: { message: `the run failed: ${code}`, type: 'server_error', param: null, code } })}\n\n`
    }
    return translator.terminal(response).map(data).join('') + DONE
  }
  const pump = () => {
    scheduled = false
    if (finishedStream || draining || gone()) return
    let chunk = ''
    while (cursor < source.size) {
      const event = source.at(cursor++)!
      if (event.type !== 'frame') continue
      const { frame } = event
      if (frame.event === 'done' || frame.event === 'error') {
        if (chunk !== '') res.write(chunk)
        finished.then(
          (response) => finishOnce(terminal(response)),
          () => finishOnce(''),
        )
        stopWaking()
        return
      }
      for (const c of translator.frame(frame)) chunk += data(c)
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
  const shutDown = () =>
    new Promise<void>((resolve) => {
      if (gone() || finishedStream) return resolve()
      const error = { error: { message: 'the server is shutting down; the run goes on', type: 'server_error', param: null, code: 'server_shutting_down' } }
      finish()
      res.end(`data: ${JSON.stringify(error)}\n\n`, resolve)
    })
  let stopWaking = () => {}
  const finish = () => {
    finishedStream = true
    clearInterval(heartbeat)
    stopWaking()
    streams.delete(shutDown)
  }
  streams.add(shutDown)
  res.on('close', finish)
  res.write(translator.opening().map(data).join(''))
  stopWaking = source.wake(schedule)
  schedule()
}
