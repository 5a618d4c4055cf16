/**
 * Observes the responses of an HTTP server for the contract check (contract-check.ts): method, URL,
 * status, content type, body, and whether it ended, handed over once the connection is done with
 * the response.
 *
 * Loaded with `--import` into a server process started by test/e2e/server-process.ts, it observes
 * every server of the process and appends one JSON line per response to the file
 * PARLEY_CONTRACT_LOG, synchronously: a server killed afterwards has already logged what it answered.
 */
import { appendFileSync } from 'node:fs'
import { Server, type IncomingMessage, type ServerResponse } from 'node:http'
import type { RecordedResponse } from './contract-validator.ts'

type Method = (...args: unknown[]) => unknown

/** Tees one response's head and body (its own methods are wrapped, nobody else's). */
export function observeResponse(req: IncomingMessage, res: ServerResponse, onDone: (response: RecordedResponse) => void): void {
  const chunks: Buffer[] = []
  // Fastify and the SSE writer pass their headers to writeHead, which getHeader does not see.
  let headedContentType: string | undefined
  const keep = (chunk: unknown, encoding: unknown) => {
    if (typeof chunk === 'string') chunks.push(Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8'))
    else if (chunk instanceof Uint8Array) chunks.push(Buffer.from(chunk))
  }
  const writeHead = res.writeHead as unknown as Method
  const write = res.write as unknown as Method
  const end = res.end as unknown as Method
  res.writeHead = ((...args: unknown[]) => {
    headedContentType = contentTypeIn(args.find((arg) => typeof arg === 'object' && arg !== null)) ?? headedContentType
    return writeHead.apply(res, args)
  }) as never
  res.write = ((...args: unknown[]) => {
    keep(args[0], args[1])
    return write.apply(res, args)
  }) as never
  res.end = ((...args: unknown[]) => {
    if (typeof args[0] !== 'function') keep(args[0], args[1])
    return end.apply(res, args)
  }) as never
  res.once('close', () => {
    const contentType = res.getHeader('content-type') ?? headedContentType
    onDone({
      method: req.method ?? 'GET',
      url: req.url ?? '/',
      status: res.statusCode,
      contentType: contentType === undefined ? null : String(contentType),
      body: Buffer.concat(chunks).toString('utf8'),
      complete: res.writableFinished,
    })
  })
}

/** The content type among writeHead's headers: an object, or a flat [name, value, ...] array. */
function contentTypeIn(headers: unknown): string | undefined {
  if (!headers) return undefined
  const pairs = Array.isArray(headers)
    ? headers.flatMap((item, i) => (i % 2 === 0 && !Array.isArray(item) ? [[item, headers[i + 1]]] : Array.isArray(item) ? [item] : []))
    : Object.entries(headers)
  const found = pairs.find(([name]) => String(name).toLowerCase() === 'content-type')
  return found === undefined || found[1] === undefined ? undefined : String(found[1])
}

const file = process.env.PARLEY_CONTRACT_LOG

if (file) {
  const emit = Server.prototype.emit as Method
  Server.prototype.emit = function (this: Server, event: unknown, ...args: unknown[]) {
    if (event === 'request') {
      observeResponse(args[0] as IncomingMessage, args[1] as ServerResponse, (response) => appendFileSync(file, `${JSON.stringify(response)}\n`))
    }
    return emit.call(this, event, ...args)
  } as never
}
