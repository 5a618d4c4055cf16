import { STATUS_CODES } from 'node:http'
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import type { Duplex } from 'node:stream'
import type { Socket } from 'node:net'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { sendEnvelope } from './send-envelope.ts'

/**
 * Issue 11: rejections made before a route runs (by Node's HTTP parser or Fastify's router) answer
 * in the error envelope like every other error, and never echo the request's URL or headers.
 */

/** The envelope as bytes, for the answers written straight onto a socket. */
function envelope(code: string, message: string): string {
  return JSON.stringify({ error: { code, message } })
}

function answerOf(err: NodeJS.ErrnoException): { status: number; code: string; message: string } {
  switch (err.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
    case 'ERR_HTTP_HEADERS_TIMEOUT':
      return { status: 408, code: 'request_timeout', message: 'the request was not received in time' }
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, code: 'headers_too_large', message: 'the request line and headers exceed 16 KB' }
    default:
      return { status: 400, code: 'invalid_request', message: 'malformed HTTP request' }
  }
}

/**
 * Fastify's `clientErrorHandler`: errors Node reports before there is a request (header overflow,
 * a malformed or non-ASCII request line, a request deadline). Writes a minimal HTTP/1.1 answer
 * and closes the connection, as Node's own handler does.
 */
export function clientErrorHandler(this: FastifyInstance, err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return
  const { status, code, message } = answerOf(err)
  this.log.debug({ err: { code: err.code, message: err.message } }, 'client error')
  // A response already under way (a pipelined request) cannot be followed by another status line.
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage
  if (socket.writable && !inFlight?.headersSent) {
    const body = envelope(code, message)
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
        'Content-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        'Connection: close\r\n\r\n' +
        body,
    )
  }
  socket.destroy(err)
}

/**
 * A refusal at the edge that carries headers of its own (`Accept-Encoding` for a Content-Encoding
 * refused): the error handler sends it as it is, in the envelope, with its headers.
 */
export class EdgeRefusal extends Error {
  readonly status: number
  readonly code: string
  readonly headers: Record<string, string>
  readonly hint?: string
  constructor(status: number, code: string, message: string, headers: Record<string, string> = {}, hint?: string) {
    super(message)
    this.name = 'EdgeRefusal'
    this.status = status
    this.code = code
    this.headers = headers
    this.hint = hint
  }
}

/**
 * CONNECT (a proxy's tunnel) is no method of this API. Node hands such a request to the server's
 * 'connect' listeners and, without one, closes the socket with no answer: this one answers 405
 * `method_not_allowed` in the envelope (Allow lists the methods routed at the target when it is a
 * path of ours; it is empty otherwise) and closes the connection, whose bytes are no HTTP any more.
 */
export function answerConnect(app: FastifyInstance) {
  return (request: IncomingMessage, socket: Duplex): void => {
    socket.on('error', () => {})
    const target = request.url ?? ''
    const allow = target.startsWith('/') ? allowedMethods(app, target) : []
    const body = envelope('method_not_allowed', 'CONNECT is not supported: this server is not a proxy')
    if (!socket.writable) {
      socket.destroy()
      return
    }
    socket.end(
      `HTTP/1.1 405 ${STATUS_CODES[405]}\r\n` +
        `Allow: ${allow.join(', ')}\r\n` +
        'Content-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        'Connection: close\r\n\r\n' +
        body,
      () => socket.destroy(),
    )
  }
}

/**
 * `Expect: 100-continue` is answered by the request's own hooks: Node's 'checkContinue' listener
 * hands the request to Fastify without writing `100 Continue`, and bounded-body.ts writes it only
 * once the route, the key, the declared size and the encoding have passed. A refusal before that
 * is the client's only answer, and it never sends the body.
 */
export function deferContinue(server: Server): void {
  server.on('checkContinue', (request: IncomingMessage, response: ServerResponse) => {
    server.emit('request', request, response)
  })
}

/** Fastify's `frameworkErrors`: rejections by the router, before any route or hook. */
export function frameworkErrors(error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  switch (error.code) {
    case 'FST_ERR_BAD_URL':
      sendEnvelope(reply, 400, { code: 'invalid_request', message: 'the URL is not valid percent-encoding' })
      return
    case 'FST_ERR_MAX_PARAM_LENGTH':
      // No identifier or name in this API is that long: the path names nothing.
      sendEnvelope(reply, 404, { code: 'not_found', message: 'not found: a path segment is longer than 100 characters' })
      return
    default:
      reply.log.error({ err: error }, 'framework error')
      sendEnvelope(reply, 500, { code: 'internal', message: 'internal error' })
  }
}

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const

/** The methods routed at this concrete path (query string ignored); empty when the path is unknown. */
export function allowedMethods(app: FastifyInstance, url: string): string[] {
  const path = url.split('?')[0] ?? ''
  return METHODS.filter((method) => {
    try {
      return app.findRoute({ method, url: path }) !== null
    } catch {
      return false
    }
  })
}
