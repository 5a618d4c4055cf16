/** A tool-name pattern of retention rules: `*` matches any run of characters, anything else itself. */
export function globMatches(pattern: string, name: string): boolean {
  if (!pattern.includes('*')) return pattern === name
  const pieces = pattern.split('*')
  const first = pieces[0]!
  const last = pieces.at(-1)!
  if (!name.startsWith(first) || name.length < first.length + last.length || !name.endsWith(last)) return false
  let at = first.length
  for (const piece of pieces.slice(1, -1)) {
    const found = name.indexOf(piece, at)
    if (found === -1 || found + piece.length > name.length - last.length) return false
    at = found + piece.length
  }
  return true
}

/** A MIME pattern: `*` and `*\/*` match every type, `type/*` every subtype of `type`; case-insensitive. */
export function mimeMatches(pattern: string, mime: string): boolean {
  const p = pattern.toLowerCase()
  const m = mime.toLowerCase()
  if (p === '*' || p === '*/*') return true
  if (p.endsWith('/*')) return m.startsWith(p.slice(0, -1))
  return p === m
}
