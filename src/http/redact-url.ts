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
export function looksLikeSecret(raw: string, plusIsSpace = false): boolean {
  return SECRET_SHAPE.test(raw) || SECRET_SHAPE.test(decodeLoosely(raw, plusIsSpace))
}

function isSecretParam(rawName: string): boolean {
  const name = decodeLoosely(rawName, true).trim().toLowerCase().replace(/-/g, '_').replace(/\[[^\]]*\]$/, '')
  return SECRET_PARAMS.has(name)
}

function redactPath(path: string): string {
  return path
    .split('/')
    .map((segment) => (looksLikeSecret(segment) ? REDACTED : segment))
    .join('/')
}

function redactQuery(query: string): string {
  return query
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=')
      if (eq === -1) return looksLikeSecret(pair, true) ? REDACTED : pair
      const name = pair.slice(0, eq)
      const value = pair.slice(eq + 1)
      const safeName = looksLikeSecret(name, true) ? REDACTED : name
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
