/** Namespaces are slash-separated scopes; configuration resolves root first. */
export const NAMESPACE_PATTERN = '^[a-z0-9_-]{1,64}(/[a-z0-9_-]{1,64})*$'
const namespaceRegex = new RegExp(NAMESPACE_PATTERN)

export function isNamespace(value: string): boolean {
  return value.length >= 1 && value.length <= 255 && namespaceRegex.test(value)
}

/**
 * Bounds of the half-open key range holding every strict descendant of `namespace`.
 * '/' is 0x2F and '0' is 0x30, so "acme/" <= d < "acme0" is exactly the subtree,
 * and an index can range-scan it (LIKE would treat '_' as a wildcard).
 */
export function descendantRange(namespace: string): { from: string; to: string } {
  return { from: `${namespace}/`, to: `${namespace}0` }
}

/** The namespace and its ancestors, root first: "a/b/c" gives ["a", "a/b", "a/b/c"]. */
export function namespaceLineage(namespace: string): string[] {
  const segments = namespace.split('/')
  return segments.map((_, i) => segments.slice(0, i + 1).join('/'))
}
