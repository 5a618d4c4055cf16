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

/**
 * What `unreachablePatterns` needs of a kind of pattern, besides `covers` itself: an earlier pattern
 * covers a later one exactly when both have the same `key`, or the earlier one has a `coveredPrefix`
 * that the later one's `matchedText` starts with (`''` for a pattern that covers everything).
 */
export type PatternKind = {
  covers: (earlier: string, later: string) => boolean
  key: (pattern: string) => string
  coveredPrefix: (earlier: string) => string | null
  matchedText: (later: string) => string
}

/** Tool-name globs (globCovers): the same text, or `prefix*` with no other star over the later one's text before its first star. */
export const GLOB_PATTERNS: PatternKind = {
  covers: globCovers,
  key: (pattern) => pattern,
  coveredPrefix: (earlier) => (earlier.indexOf('*') === earlier.length - 1 ? earlier.slice(0, -1) : null),
  matchedText: (later) => {
    const star = later.indexOf('*')
    return star === -1 ? later : later.slice(0, star)
  },
}

/** MIME patterns (mimeCovers): the same type, case-insensitively; `*\/*` (or `*`) everything; `type/*` what starts `type/`. */
export const MIME_PATTERNS: PatternKind = {
  covers: mimeCovers,
  key: normaliseMime,
  coveredPrefix: (earlier) => {
    const a = normaliseMime(earlier)
    return a === '*/*' ? '' : a.endsWith('/*') ? a.slice(0, -1) : null
  },
  matchedText: normaliseMime,
}

/**
 * Index pairs [covered, coveredBy] of patterns that can never match because an earlier one covers
 * them, coveredBy the first such. Linear in the patterns' total length: comparing each with every
 * earlier one took 5.8 s for 20,000 tool rules (340 KiB of a 1 MiB body), and was quadratic (issue
 * 36, decision 061). Each earlier pattern's key and covered prefix are indexed (the prefixes in a
 * trie of UTF-16 units), so a later pattern is looked up along its own text only; `covers` is asked
 * once, to confirm the pattern found, and if it ever disagreed the earlier patterns would be
 * compared one by one as before.
 */
export function unreachablePatterns(patterns: string[], kind: PatternKind): [number, number][] {
  const found: [number, number][] = []
  const firstWithKey = new Map<string, number>()
  // Trie node 0 is the empty prefix; an edge is keyed node × 65,536 + the next UTF-16 unit.
  const edges = new Map<number, number>()
  const firstWithPrefix: number[] = [-1]
  patterns.forEach((pattern, i) => {
    const key = kind.key(pattern)
    let by = firstWithKey.get(key) ?? -1
    const text = kind.matchedText(pattern)
    for (let node = 0, at = 0; ; at++) {
      const first = firstWithPrefix[node]!
      if (first !== -1 && (by === -1 || first < by)) by = first
      const next = at < text.length ? edges.get(node * 65_536 + text.charCodeAt(at)) : undefined
      if (next === undefined) break
      node = next
    }
    if (by !== -1 && !kind.covers(patterns[by]!, pattern)) by = patterns.slice(0, i).findIndex((earlier) => kind.covers(earlier, pattern))
    if (by !== -1) found.push([i, by])

    if (!firstWithKey.has(key)) firstWithKey.set(key, i)
    const prefix = kind.coveredPrefix(pattern)
    if (prefix === null) return
    let node = 0
    for (let at = 0; at < prefix.length; at++) {
      const edge = node * 65_536 + prefix.charCodeAt(at)
      let next = edges.get(edge)
      if (next === undefined) {
        next = firstWithPrefix.length
        firstWithPrefix.push(-1)
        edges.set(edge, next)
      }
      node = next
    }
    if (firstWithPrefix[node] === -1) firstWithPrefix[node] = i
  })
  return found
}
