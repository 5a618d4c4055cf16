import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { IncomingMessage } from 'node:http'
import { PayloadTooLargeError, ValidationError } from '../../domain/errors.ts'
import { findTooDeepInText } from '../../domain/json-depth.ts'
import { OFFLOAD_JSON_BYTES, type BodyWork } from '../body-work/body-work.ts'
import { EdgeRefusal } from '../edge-errors.ts'

/**
 * Bounded request parsing (issue 22, docs/decisions/030-bounded-request-parsing.md). Nothing is
 * spent on a body before the request has earned it, in this order:
 *
 * 1. route: an unknown path (404) or method (405) is answered in onRequest, before any body is read
 *    (error-handler.ts);
 * 2. key: keyed routes authenticate in onRequest (auth.ts), so 401 comes before any byte is read;
 * 3. size: a declared Content-Length over the route's limit is 413 here, in preParsing; a body that
 *    grows past it while it arrives is cut off by Fastify's reader (413 too);
 * 4. encoding: a body with a Content-Encoding other than identity is refused, 400 `invalid_request`
 *    with `Accept-Encoding: identity` (the status every operation with a body already documents for
 *    an unsupported content type; see the decision for why not 415);
 * 5. charset: a body whose Content-Type declares a charset other than UTF-8 (`charset=utf-16`,
 *    `latin1`, ...) is refused, 415 `unsupported_media_type`: bodies are read as UTF-8 only
 *    (docs/decisions/057-request-charsets.md);
 * 6. only then does a client that sent `Expect: 100-continue` get its `100 Continue`;
 * 7. depth: the JSON parser scans the raw bytes (findTooDeepInText, linear) and refuses nesting
 *    past 256 levels with the usual 422 and pointer;
 * 8. parse: JSON.parse with Fastify's prototype-poisoning checks (secure-json-parse), on a worker
 *    thread for a body of OFFLOAD_JSON_BYTES or more, then the narrower depth limits and schema
 *    validation.
 */

const CONTINUED = new WeakSet<IncomingMessage>()

const wantsContinue = (raw: IncomingMessage) => /\b100-continue\b/i.test(String(raw.headers.expect ?? ''))

/** Methods whose body Fastify never reads (its "bodyless" methods): whatever they send is discarded. */
const BODYLESS = new Set(['GET', 'HEAD', 'TRACE'])

/** Whether the request announces a body that would be read: a non-zero Content-Length, or a Transfer-Encoding. */
export function announcesBody(raw: IncomingMessage): boolean {
  if (BODYLESS.has(raw.method ?? 'GET')) return false
  const length = raw.headers['content-length']
  if (raw.headers['transfer-encoding'] !== undefined) return true
  return length !== undefined && length !== '0' && length.trim() !== '0'
}

function declaredLength(raw: IncomingMessage): number | null {
  const length = Number(raw.headers['content-length'])
  return Number.isFinite(length) ? length : null
}

/** Content codings other than identity, as sent (e.g. "gzip"); empty when there are none. */
function contentCodings(raw: IncomingMessage): string[] {
  const header = raw.headers['content-encoding']
  if (header === undefined) return []
  return header
    .split(',')
    .map((coding) => coding.trim().toLowerCase())
    .filter((coding) => coding !== '' && coding !== 'identity')
}

/** UTF-8 by the names it goes by (IANA's `UTF-8`, and the common alias `utf8`), in any case. */
const UTF8_NAMES = new Set(['utf-8', 'utf8'])

/**
 * Each `charset` parameter of a Content-Type: a token or a quoted string (its closing quote optional,
 * so a broken one is still seen). Read leniently, as Fastify's own parser finds parameters, so that no
 * spelling Fastify would read past gets by this check. Linear: the alternatives inside the quotes are disjoint.
 */
const CHARSET_PARAMETER = /;\s*charset\s*=\s*("(?:[^"\\]|\\.)*"?|[^;\s]*)/gi

/**
 * The first charset the request's Content-Type declares that is not UTF-8, unquoted, as sent (e.g.
 * "utf-16"); null when it declares none (a body is then read as UTF-8) or only UTF-8.
 */
export function declaredForeignCharset(contentType: string | undefined): string | null {
  if (contentType === undefined) return null
  for (const match of contentType.matchAll(CHARSET_PARAMETER)) {
    const sent = match[1]!
    const value = sent.startsWith('"') ? sent.slice(1, sent.length > 1 && sent.endsWith('"') ? -1 : undefined).replace(/\\(.)/g, '$1') : sent
    if (!UTF8_NAMES.has(value.trim().toLowerCase())) return value
  }
  return null
}

/** A declared charset as the refusal names it: as sent when it is a plain name, else quoted, and never more than 40 characters. */
function shownCharset(value: string): string {
  const cut = value.length > 40 ? `${value.slice(0, 40)}…` : value
  return /^[A-Za-z0-9._:+-]+$/.test(value) && value.length <= 40 ? value : JSON.stringify(cut)
}

/** Sends `100 Continue` once, to a client that asked for it, when its body is about to be read. */
export function continueIfExpected(raw: IncomingMessage, res: { writeContinue: () => void; headersSent: boolean }): void {
  if (!wantsContinue(raw) || CONTINUED.has(raw) || res.headersSent) return
  CONTINUED.add(raw)
  res.writeContinue()
}

/**
 * A refusal sent while the body is unread: the connection is kept (Node reads and discards the
 * body, which costs no parsing) unless the client is still waiting for `100 Continue` (it will
 * never send the body, and its next request would be read as one) or the body declared is over the
 * default limit or of unknown length (not worth reading to discard). Then the answer says
 * `Connection: close` and Node closes the socket once it is written.
 */
function closeIfBodyUnread(request: FastifyRequest, reply: FastifyReply, defaultLimit: number): void {
  const raw = request.raw
  if (!announcesBody(raw) || raw.readableEnded || raw.readableDidRead) return
  const length = declaredLength(raw)
  const waiting = wantsContinue(raw) && !CONTINUED.has(raw)
  if (waiting || length === null || length > defaultLimit) reply.header('connection', 'close')
}

export function installBoundedBodies(app: FastifyInstance, defaultLimit: number, work: Pick<BodyWork, 'parseJson'>): void {
  // Declared size, then encoding; then the client may send its body.
  app.addHook('preParsing', async (request, reply, payload) => {
    const raw = request.raw
    if (!announcesBody(raw)) return payload
    const limit = request.routeOptions.bodyLimit ?? defaultLimit
    const length = declaredLength(raw)
    if (length !== null && length > limit) {
      throw new PayloadTooLargeError(`the request body is too large: this route takes at most ${limit} bytes`)
    }
    const codings = contentCodings(raw)
    if (codings.length > 0) {
      throw new EdgeRefusal(
        400,
        'invalid_request',
        `unsupported Content-Encoding (${codings.join(', ')}): request bodies are taken uncompressed only`,
        { 'accept-encoding': 'identity' },
        'send the body as plain JSON, without a Content-Encoding header',
      )
    }
    // Bodies are read as UTF-8 only (decision 057): one declared in another charset is refused unread,
    // rather than misread (`charset=utf-16` JSON read as UTF-8 is noise, or worse, different text).
    const charset = declaredForeignCharset(raw.headers['content-type'])
    if (charset !== null) {
      throw new EdgeRefusal(
        415,
        'unsupported_media_type',
        `unsupported charset: the body's Content-Type declares charset=${shownCharset(charset)}, and only UTF-8 is accepted`,
        {},
        'encode the body as UTF-8 and send Content-Type: application/json, with charset=utf-8 or no charset',
      )
    }
    continueIfExpected(raw, reply.raw)
    return payload
  })

  // JSON is read whole as bytes (within the route's limit), scanned for depth, and only then parsed;
  // a large body on a worker thread (src/http/body-work/body-work.ts), a small one in place.
  const parseJson = app.getDefaultJsonParser(app.initialConfig.onProtoPoisoning ?? 'error', app.initialConfig.onConstructorPoisoning ?? 'error')
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit: defaultLimit }, (request, body, done) => {
    const bytes = body as Buffer
    if (bytes.byteLength >= OFFLOAD_JSON_BYTES) {
      work.parseJson(bytes).then((parsed) => {
        switch (parsed.kind) {
          case 'value':
            return done(null, parsed.value)
          case 'too_deep':
            return done(new ValidationError([parsed.problem]), undefined)
          case 'invalid':
            // As Fastify's own parser answers a body that is not JSON: a 400.
            return done(Object.assign(new SyntaxError(parsed.message), { statusCode: 400 }), undefined)
          default: {
            const unknownKind: never = parsed
            throw new Error(`unknown parse result ${JSON.stringify(unknownKind)}`)
          }
        }
      }, (error: Error) => done(error, undefined))
      return
    }
    const problem = findTooDeepInText(bytes)
    if (problem) {
      done(new ValidationError([problem]), undefined)
      return
    }
    parseJson(request, bytes.toString('utf8'), done)
  })

  app.addHook('onSend', async (request, reply, payload) => {
    if (reply.statusCode >= 400) closeIfBodyUnread(request, reply, defaultLimit)
    return payload
  })
}
