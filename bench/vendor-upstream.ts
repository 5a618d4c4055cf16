/**
 * Bench double of two vendors for `npm run bench -- vendor` (bench/vendor.ts), in its own process:
 * `POST /v1/responses` answers as OpenAI's Responses API streams, `POST /v1/messages` as Anthropic's
 * Messages API streams, each with the recorded text answer of test/e2e/vendor-fixtures (openai.ts,
 * anthropic.ts) widened to DELTAS text deltas. The whole stream is written at once, with no gaps
 * between events, so the time and CPU a benchmark sees past this server are the relay's own.
 *
 * `GET /` answers 200 (readiness). `GET /last-request?path=/v1/responses` returns the last body
 * POSTed to that path, so the benchmark can send the relay and the upstream exactly the request
 * Parley sends. `GET /stats` returns requests and request bytes per path since the start.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { anthropicTextStream } from '../test/e2e/vendor-fixtures/anthropic.ts'
import { openaiTextStream } from '../test/e2e/vendor-fixtures/openai.ts'

const DELTAS = Number(process.env.BENCH_VENDOR_DELTAS ?? 20)

/** Short words, each its own delta, as a model streams them. */
const parts = Array.from({ length: DELTAS }, (_, i) => `${i === 0 ? '' : ' '}word${i}`)

/** Each stream's headers and whole body, encoded once: the double's per-request cost is a write. */
const STREAMS = new Map(
  Object.entries({ '/v1/responses': openaiTextStream(parts), '/v1/messages': anthropicTextStream(parts) }).map(([path, stream]) => [
    path,
    { headers: stream.headers, body: Buffer.from(stream.events.join('')) },
  ]),
)

const lastRequest = new Map<string, Buffer>()
const stats: Record<string, { requests: number; bytes: number }> = {}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.once('end', () => resolve(Buffer.concat(chunks)))
    req.once('error', reject)
  })
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body))
}

async function stream(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
  const answer = STREAMS.get(path)
  if (!answer) return json(res, 404, { error: `no stream at ${path}` })
  const body = await readBody(req)
  // Kept as bytes, decoded only when asked for: recording costs the double nothing per turn.
  lastRequest.set(path, body)
  const seen = (stats[path] ??= { requests: 0, bytes: 0 })
  seen.requests++
  seen.bytes += body.length
  res.writeHead(200, answer.headers).end(answer.body)
}

const server = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://upstream')
  if (req.method === 'POST') {
    stream(req, res, url.pathname).catch((error: unknown) => res.destroy(error as Error))
    return
  }
  if (url.pathname === '/last-request') {
    const body = lastRequest.get(url.searchParams.get('path') ?? '')
    if (!body) return json(res, 404, { error: 'no request yet' })
    res.writeHead(200, { 'content-type': 'application/json' }).end(body)
    return
  }
  if (url.pathname === '/stats') return json(res, 200, stats)
  json(res, 200, { upstream: 'bench double', paths: [...STREAMS.keys()] })
})
// A closed-loop client keeps its connections; the default 5 s idle timeout would only add reconnects.
server.keepAliveTimeout = 60_000
server.listen(Number(process.env.PORT ?? 0), process.env.HOST ?? '127.0.0.1')

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => process.exit(0))
}
