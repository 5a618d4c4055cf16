/**
 * The SSE client of the benchmarks (bench/turns.ts, bench/vendor.ts): node:http with a keep-alive
 * agent, frames parsed by eventsource-parser, timed from the moment the request is sent.
 */
import { request, type Agent } from 'node:http'
import { createParser } from 'eventsource-parser'

export type SseFrame = { event: string; data: string }

export type SseOutcome = {
  status: number
  /** Frames by event name. */
  counts: Record<string, number>
  /** ms from sending the request to the first `run` frame (the stream is open), first delta frame, and the end of the body. */
  runMs: number | null
  firstDeltaMs: number | null
  totalMs: number
  terminal: 'done' | 'error' | null
  bytes: number
  /** Every frame, when asked for (`keep`), or the body of a non-200 answer. */
  frames: SseFrame[]
  body: string
}

export type SseRequest = {
  agent: Agent
  url: string
  path: string
  headers: Record<string, string>
  /** The turn's JSON; absent: a GET (a reader of GET /api/v1/runs/{id}/events). */
  body?: string
  keep?: boolean
  timeoutMs?: number
  /** Called as each frame arrives, with its data. */
  onFrame?: (event: string, data: string) => void
  /**
   * The event names of a text delta and of the stream's successful end: Parley's `delta` and `done`
   * by default; a vendor stream read directly has its own (`content_block_delta`, `message_stop`).
   */
  deltaEvent?: string
  doneEvent?: string
}

export function sse(r: SseRequest): Promise<SseOutcome> {
  const target = new URL(r.url)
  const deltaEvent = r.deltaEvent ?? 'delta'
  const doneEvent = r.doneEvent ?? 'done'
  return new Promise((resolve, reject) => {
    const start = performance.now()
    const out: SseOutcome = {
      status: 0,
      counts: {},
      runMs: null,
      firstDeltaMs: null,
      totalMs: 0,
      terminal: null,
      bytes: 0,
      frames: [],
      body: '',
    }
    const req = request(
      {
        agent: r.agent,
        host: target.hostname,
        port: target.port,
        method: r.body === undefined ? 'GET' : 'POST',
        path: r.path,
        headers: {
          ...r.headers,
          accept: 'text/event-stream',
          ...(r.body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(r.body) }),
        },
      },
      (res) => {
        out.status = res.statusCode ?? 0
        res.setEncoding('utf8')
        const parser = createParser({
          onEvent: (message) => {
            const event = message.event ?? 'message'
            const at = performance.now() - start
            out.counts[event] = (out.counts[event] ?? 0) + 1
            if (event === 'run' && out.runMs === null) out.runMs = at
            if (event === deltaEvent && out.firstDeltaMs === null) out.firstDeltaMs = at
            if (event === doneEvent) out.terminal = 'done'
            else if (event === 'error') out.terminal = 'error'
            if (r.keep) out.frames.push({ event, data: message.data })
            r.onFrame?.(event, message.data)
          },
        })
        res.on('data', (chunk: string) => {
          out.bytes += Buffer.byteLength(chunk)
          if (out.status === 200) parser.feed(chunk)
          else out.body += chunk
        })
        res.once('end', () => {
          out.totalMs = performance.now() - start
          resolve(out)
        })
        res.once('error', reject)
      },
    )
    req.setTimeout(r.timeoutMs ?? 60_000, () => req.destroy(new Error(`no answer within ${r.timeoutMs ?? 60_000} ms`)))
    req.once('error', reject)
    if (r.body === undefined) req.end()
    else req.end(r.body)
  })
}
