/**
 * Whether every name matched by `later` is already matched by `earlier`, for the glob patterns of
 * retention rules (`*` matches any run of characters). Exact for duplicates, the universal pattern
 * and single trailing-star prefixes; other shapes are only compared for equality.
 */
export function globCovers(earlier: string, later: string): boolean {
  if (earlier === later || earlier === '*') return true
  const star = earlier.indexOf('*')
  if (star !== earlier.length - 1) return false
  const prefix = earlier.slice(0, -1)
  const laterStar = later.indexOf('*')
  const laterLiteralPrefix = laterStar === -1 ? later : later.slice(0, laterStar)
  return laterLiteralPrefix.startsWith(prefix)
}

const normaliseMime = (pattern: string) => {
  const lower = pattern.toLowerCase()
  return lower === '*' ? '*/*' : lower
}

/** MIME patterns: `*` and `*\/*` match everything, `type/*` every subtype of `type`. */
export function mimeCovers(earlier: string, later: string): boolean {
  const a = normaliseMime(earlier)
  const b = normaliseMime(later)
  if (a === b || a === '*/*') return true
  if (!a.endsWith('/*')) return false
  return b.startsWith(a.slice(0, -1))
}

/** Index pairs [covered, coveredBy] of patterns that can never match because an earlier one covers them. */
export function unreachablePatterns(patterns: string[], covers: (a: string, b: string) => boolean): [number, number][] {
  const found: [number, number][] = []
  patterns.forEach((pattern, i) => {
    const by = patterns.slice(0, i).findIndex((earlier) => covers(earlier, pattern))
    if (by !== -1) found.push([i, by])
  })
  return found
}
