/*
 * docs/decisions/032-attachment-checks.md: a declared MIME type is parsed as RFC 9110 §8.3.1 writes
 * it (`type/subtype *( OWS ";" OWS name=value )`, a value a token or a quoted string), compared
 * case-insensitively, and stored as its lower-case essence (`type/subtype`) without parameters.
 */

export type MediaType = {
  /** `type/subtype`, lower-case. */
  essence: string
  /** Parameter names lower-case; values as sent (unquoted). */
  parameters: Record<string, string>
}

/** RFC 9110 tchar: the characters of a token. */
const isTchar = (c: number): boolean =>
  (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || '!#$%&\'*+-.^_`|~'.includes(String.fromCharCode(c))
const isSpace = (c: number) => c === 0x20 || c === 0x09

/** The parsed type, or null when `value` is not a media type. Linear; no regular expression. */
export function parseMediaType(value: string): MediaType | null {
  let at = 0
  const token = (): string | null => {
    const start = at
    while (at < value.length && isTchar(value.charCodeAt(at))) at++
    return at > start ? value.slice(start, at) : null
  }
  const skipSpace = () => {
    while (at < value.length && isSpace(value.charCodeAt(at))) at++
  }
  const type = token()
  if (type === null || value[at] !== '/') return null
  at++
  const subtype = token()
  if (subtype === null) return null
  const parameters: Record<string, string> = {}
  for (;;) {
    skipSpace()
    if (at === value.length) break
    if (value[at] !== ';') return null
    at++
    skipSpace()
    const name = token()
    if (name === null || value[at] !== '=') return null
    at++
    let parameterValue: string | null
    if (value[at] === '"') {
      at++
      let text = ''
      for (;;) {
        if (at >= value.length) return null
        const c = value[at]!
        if (c === '"') break
        if (c === '\\') {
          at++
          if (at >= value.length) return null
        }
        text += value[at]
        at++
      }
      at++
      parameterValue = text
    } else {
      parameterValue = token()
      if (parameterValue === null) return null
    }
    const key = name.toLowerCase()
    if (!(key in parameters)) parameters[key] = parameterValue
  }
  return { essence: `${type}/${subtype}`.toLowerCase(), parameters }
}

/** Types whose bytes are text: they must be UTF-8 (or US-ASCII, a subset), whatever the charset says. */
export const isTextType = (essence: string) => essence.startsWith('text/')

/** The charsets a text attachment may declare: its bytes are stored and sent as UTF-8. */
export const TEXT_CHARSETS = ['utf-8', 'us-ascii'] as const
