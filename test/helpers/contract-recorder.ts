/**
 * Loaded with `--import` into a server process started by test/e2e/server-process.ts: appends
 * every response the process sends (method, URL, status, content type, body, whether it ended) to
 * the JSON-lines file PARLEY_CONTRACT_LOG, one line each when its connection is done with it, so
 * the test process can check them against the server's `/openapi.json` (test/helpers/contract-check.ts).
 * Written synchronously: a server killed afterwards has already logged what it answered.
 */
import { appendFileSync } from 'node:fs'
import { ServerResponse } from 'node:http'

const file = process.env.PARLEY_CONTRACT_LOG

type Write = (this: ServerResponse, chunk?: unknown, encoding?: unknown, callback?: unknown) => unknown

/** writeHead's flat array form: [name, value, name, value, ...]. */
const chunkPairs = (flat: unknown[]): unknown[] => flat.flatMap((item, i) => (i % 2 === 0 ? [[item, flat[i + 1]]] : []))

if (file) {
  const bodies = new WeakMap<ServerResponse, Buffer[]>()

  const bodyOf = (res: ServerResponse): Buffer[] => {
    let chunks = bodies.get(res)
    if (!chunks) {
      const mine: Buffer[] = []
      chunks = mine
      bodies.set(res, mine)
      res.once('close', () => logResponse(res, mine))
    }
    return chunks
  }

  const keep = (res: ServerResponse, chunk: unknown, encoding: unknown) => {
    const chunks = bodyOf(res)
    if (typeof chunk === 'string') chunks.push(Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8'))
    else if (chunk instanceof Uint8Array) chunks.push(Buffer.from(chunk))
  }

  const logResponse = (res: ServerResponse, chunks: Buffer[]) => {
    const contentType = res.getHeader('content-type') ?? headedContentType.get(res)
    const record = {
      method: res.req?.method ?? 'GET',
      url: res.req?.url ?? '/',
      status: res.statusCode,
      contentType: contentType === undefined ? null : String(contentType),
      body: Buffer.concat(chunks).toString('utf8'),
      complete: res.writableFinished,
    }
    appendFileSync(file, `${JSON.stringify(record)}\n`)
  }

  // Fastify (and the SSE writer) pass their headers to writeHead, which getHeader does not see.
  const headedContentType = new WeakMap<ServerResponse, string>()
  const writeHead = ServerResponse.prototype.writeHead as unknown as (this: ServerResponse, ...args: unknown[]) => ServerResponse
  ServerResponse.prototype.writeHead = function (this: ServerResponse, ...args: unknown[]) {
    const headers = args.find((arg) => typeof arg === 'object' && arg !== null)
    const pairs: unknown[] = Array.isArray(headers) ? headers : headers ? Object.entries(headers) : []
    for (const pair of Array.isArray(headers) && !Array.isArray(headers[0]) ? chunkPairs(headers) : pairs) {
      const [name, value] = pair as [unknown, unknown]
      if (String(name).toLowerCase() === 'content-type' && value !== undefined) headedContentType.set(this, String(value))
    }
    return writeHead.apply(this, args)
  } as never

  const write = ServerResponse.prototype.write as unknown as Write
  const end = ServerResponse.prototype.end as unknown as Write
  ServerResponse.prototype.write = function (this: ServerResponse, chunk: unknown, encoding?: unknown, callback?: unknown) {
    keep(this, chunk, encoding)
    return write.call(this, chunk, encoding, callback)
  } as never
  ServerResponse.prototype.end = function (this: ServerResponse, chunk?: unknown, encoding?: unknown, callback?: unknown) {
    if (typeof chunk !== 'function') keep(this, chunk, encoding)
    else bodyOf(this)
    return end.call(this, chunk, encoding, callback)
  } as never
}
