/**
 * Bench double of a stateless gateway at its thinnest, the floor of `npm run bench -- vendor`
 * (bench/vendor.ts), in its own process: a plain node:http server (no framework) that reads a POST,
 * forwards it to UPSTREAM_URL + the same path with fetch (undici, as the AI SDK's providers call
 * vendors), and pipes the upstream's answer back unchanged, status, content type and every chunk as
 * it arrives. No auth, no parsing, no storage, no accounting: what any relay of a vendor stream pays.
 *
 * `GET /` answers 200 (readiness).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'

const UPSTREAM = process.env.UPSTREAM_URL
if (!UPSTREAM) throw new Error('UPSTREAM_URL is required')

/** The request headers a vendor needs; hop-by-hop headers and the client's host stay here. */
const FORWARDED = ['content-type', 'authorization', 'x-api-key', 'anthropic-version', 'accept']

/** The request body, whole: a vendor request is small and sent in one go. */
function readBody(req: IncomingMessage): Promise<Uint8Array<ArrayBuffer>> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    // Buffer.concat allocates a fresh ArrayBuffer (never a SharedArrayBuffer), which fetch takes as is.
    req.once('end', () => resolve(Buffer.concat(chunks) as Uint8Array<ArrayBuffer>))
    req.once('error', reject)
  })
}

function forwardedHeaders(req: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {}
  for (const name of FORWARDED) {
    const value = req.headers[name]
    if (typeof value === 'string') headers[name] = value
  }
  return headers
}

async function relay(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const body = await readBody(req)
  const upstream = await fetch(`${UPSTREAM}${req.url}`, { method: 'POST', headers: forwardedHeaders(req), body })
  res.writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? 'application/octet-stream', 'cache-control': 'no-cache' })
  if (upstream.body) for await (const chunk of upstream.body) res.write(chunk)
  res.end()
}

const server = createServer((req, res) => {
  if (req.method !== 'POST') {
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"relay":"bench double"}')
    return
  }
  relay(req, res).catch((error: unknown) => res.destroy(error as Error))
})
// A closed-loop client keeps its connections; the default 5 s idle timeout would only add reconnects.
server.keepAliveTimeout = 60_000
server.listen(Number(process.env.PORT ?? 0), process.env.HOST ?? '127.0.0.1')

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => process.exit(0))
}
