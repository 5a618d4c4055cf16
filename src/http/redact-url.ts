import { stdSerializers } from 'pino'
import { API_KEY_PREFIX, SESSION_TOKEN_PREFIX } from '../domain/credentials.ts'

/**
 * Request URLs as they may be logged (issue 11: a key in a URL was logged verbatim).
 * The value of a query parameter that can carry a credential, and any path segment,
 * query name or query value that looks like one of our secrets, becomes `[redacted]`;
 * everything else is kept byte for byte so logs stay useful.
 */
export const REDACTED = '[redacted]'

/** Query parameter names (lower-cased, `-` read as `_`, a trailing `[]` ignored) whose value is a secret. */
const SECRET_PARAMS = new Set([
  'api_key',
  'apikey',
  'key',
  'token',
  'access_token',
  'refresh_token',
  'id_token',
  'authorization',
  'auth',
  'bearer',
  'secret',
  'client_secret',
  'password',
  'session',
  'session_token',
])

/**
 * Our secrets are a prefix and 32 random bytes in base64url (43 characters, see credentials.ts).
 * A shorter tail still counts, so a truncated or mistyped paste is caught too.
 */
const SECRET_PREFIXES = [API_KEY_PREFIX, SESSION_TOKEN_PREFIX].map((p) => p.replace(/_$/, ''))
const SECRET_SHAPE = new RegExp(`(?<![A-Za-z0-9])(?:${SECRET_PREFIXES.join('|')})_[A-Za-z0-9_-]{16,}`, 'i')

/** Percent-decoding that never throws (bad escapes stay as they are), repeated so double encoding is seen through. */
function decodeLoosely(text: string, plusIsSpace: boolean): string {
  let current = plusIsSpace ? text.replace(/\+/g, ' ') : text
  for (let round = 0; round < 3; round++) {
    const next = current.replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) => {
      try {
        return decodeURIComponent(run)
      } catch {
        // Not valid UTF-8 as a whole: decode byte by byte (our secrets are ASCII).
        return run.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)))
      }
    })
    if (next === current) break
    current = next
  }
  return current
}

/** True when the text, once decoded, carries something shaped like one of our API keys or session tokens. */
function looksLikeSecret(raw: string, plusIsSpace: boolean): boolean {
  return SECRET_SHAPE.test(raw) || SECRET_SHAPE.test(decodeLoosely(raw, plusIsSpace))
}

/** The text, or `[redacted]` when it looks like one of our secrets. */
const scrub = (raw: string, plusIsSpace: boolean): string => (looksLikeSecret(raw, plusIsSpace) ? REDACTED : raw)

function isSecretParam(rawName: string): boolean {
  const name = decodeLoosely(rawName, true).trim().toLowerCase().replace(/-/g, '_').replace(/\[[^\]]*\]$/, '')
  return SECRET_PARAMS.has(name)
}

function redactPath(path: string): string {
  return path
    .split('/')
    .map((segment) => scrub(segment, false))
    .join('/')
}

function redactQuery(query: string): string {
  return query
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=')
      if (eq === -1) return scrub(pair, true)
      const name = pair.slice(0, eq)
      const value = pair.slice(eq + 1)
      const safeName = scrub(name, true)
      if (value === '') return `${safeName}=`
      const safeValue = isSecretParam(name) || looksLikeSecret(value, true) ? REDACTED : value
      return `${safeName}=${safeValue}`
    })
    .join('&')
}

/** The URL (path and query, as in a request line) with every secret replaced by `[redacted]`. */
export function redactUrl(url: string): string {
  if (typeof url !== 'string' || url === '') return url
  const question = url.indexOf('?')
  if (question === -1) return redactPath(url)
  return `${redactPath(url.slice(0, question))}?${redactQuery(url.slice(question + 1))}`
}

type LoggableRequest = {
  method?: string
  url?: string
  host?: string
  ip?: string
  headers?: Record<string, string | string[] | undefined>
  socket?: { remotePort?: number } | null
}

/**
 * Fastify's own `req` serializer with the URL redacted. Headers are never logged,
 * so neither `Authorization` nor a cookie can reach a log line through it.
 */
export function serializeRequest(req: LoggableRequest) {
  const version = req.headers?.['accept-version']
  return {
    method: req.method,
    url: typeof req.url === 'string' ? redactUrl(req.url) : req.url,
    version: Array.isArray(version) ? version.join(', ') : version,
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket ? req.socket.remotePort : undefined,
  }
}

/** Cheap test for text that cannot hold a secret: no `=` (a query value), no `%` (an encoded form), nothing secret-shaped. */
const mayHoldSecret = (text: string): boolean => text.includes('=') || text.includes('%') || SECRET_SHAPE.test(text)

/** One whitespace-free word of free text: from its first `/` or `?` on, a URL; before that, or all of it, read as a query string. */
function redactWord(word: string): string {
  const start = word.search(/[/?]/)
  if (start === -1) return redactQuery(word)
  return (start === 0 ? '' : redactQuery(word.slice(0, start))) + redactUrl(word.slice(start))
}

/**
 * Free text (a log message, an error's message or stack) with secrets scrubbed: every URL in it as
 * `redactUrl` does (Fastify's messages quote the request URL, e.g. "Route GET:/x?api_key=… not
 * found"), every `name=value` with a credential name, and any word shaped like one of our secrets.
 * Text with no `=`, `%` or secret shape is returned as it is, so ordinary messages cost one scan.
 */
export function redactText(text: string): string {
  if (typeof text !== 'string' || !mayHoldSecret(text)) return text
  return text.replace(/\S+/g, redactWord)
}

/** A logged value with every string in it passed through `redactText` (copied, never mutated); bounded depth. */
function redactValue(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return redactText(value)
  if (value === null || typeof value !== 'object' || depth <= 0) return value
  if (Array.isArray(value)) return value.map((item) => redactValue(item, depth - 1))
  if (Buffer.isBuffer(value) || ArrayBuffer.isView(value)) return '[binary]'
  const copy: Record<string, unknown> = {}
  for (const [key, item] of Object.entries(value)) copy[key] = redactValue(item, depth - 1)
  return copy
}

/**
 * pino's `err` serializer with every string scrubbed by `redactText`: an error's message and stack
 * may quote a URL (Fastify's FST_ERR_BAD_URL, a failed relay to the primary) or a value sent.
 */
export function serializeError(err: Error): { [key: string]: unknown; type: string; message: string; stack: string } {
  const serialized: unknown = stdSerializers.err(err)
  // pino hands anything logged under `err`, not only errors; stdSerializers.err returns those as they are.
  return redactValue(serialized, serialized !== null && typeof serialized === 'object' ? 6 : 1) as ReturnType<typeof serializeError>
}
