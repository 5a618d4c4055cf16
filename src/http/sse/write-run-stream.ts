import type { FastifyReply } from 'fastify'
import type { Admission } from '../../actors/turn-types.ts'

export const HEARTBEAT_MS = 15_000

const frame = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`

/**
 * Streams a run as server-sent events: `run`, `config_warnings`, `translation_warnings`, then the
 * run's frames as they come, one write per frame. Closing the connection only unsubscribes: the
 * run goes on, persists and settles (spec §4.2 rule 2).
 */
export function writeRunStream(reply: FastifyReply, admission: Admission): void {
  reply.hijack()
  const res = reply.raw
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
    'x-request-id': String(reply.request.id),
  })
  res.write(frame('run', { chat_id: admission.chatId, run_id: admission.runId, closed_tool_calls: admission.closedToolCalls }))
  res.write(frame('config_warnings', { warnings: admission.configWarnings }))
  res.write(frame('translation_warnings', { warnings: admission.translationWarnings }))

  const heartbeat = setInterval(() => res.write(': heartbeat\n\n'), HEARTBEAT_MS)
  let unsubscribe = () => {}
  const finish = () => {
    clearInterval(heartbeat)
    unsubscribe()
  }
  res.on('close', finish)
  unsubscribe = admission.channel.subscribe((f) => {
    if (res.writableEnded || res.destroyed) return
    res.write(frame(f.event, f.data))
    if (f.event === 'done' || f.event === 'error') {
      finish()
      res.end()
    }
  })
}
