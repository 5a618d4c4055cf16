import { describe, expect, it } from 'vitest'
import { descendantRange, isNamespace, namespaceLineage } from '../../src/domain/namespace.ts'

/** What the SQL filter does: the namespace itself, or a key inside the half-open range. */
function inSubtree(scope: string, candidate: string): boolean {
  const { from, to } = descendantRange(scope)
  return candidate === scope || (candidate >= from && candidate < to)
}

describe('descendantRange', () => {
  it('is the half-open range ["ns/", "ns0")', () => {
    expect(descendantRange('acme')).toEqual({ from: 'acme/', to: 'acme0' })
    expect(descendantRange('a/b')).toEqual({ from: 'a/b/', to: 'a/b0' })
  })

  it('contains every descendant and nothing that merely shares a prefix', () => {
    for (const inside of ['acme', 'acme/support', 'acme/support/tier1', 'acme/-', 'acme/_', 'acme/z', 'acme/0/9']) {
      expect(inSubtree('acme', inside), inside).toBe(true)
    }
    for (const outside of ['acme2', 'acmex', 'acme-x', 'acme_x', 'acm', 'acme0', 'acme0/x', 'other/acme', 'a', 'acmf']) {
      expect(inSubtree('acme', outside), outside).toBe(false)
    }
  })

  it('treats _ and - literally', () => {
    expect(inSubtree('a_b', 'a_b/c')).toBe(true)
    expect(inSubtree('a_b', 'axb')).toBe(false)
    expect(inSubtree('a_b', 'axb/c')).toBe(false)
    expect(inSubtree('a-b', 'a_b/c')).toBe(false)
  })
})

describe('isNamespace', () => {
  it('accepts the pattern of spec §2.1 within 1-255 characters', () => {
    for (const ok of ['a', 'acme', 'acme/support', 'a_b-c/0-9', 'x'.repeat(64), ['a'.repeat(63), 'b'.repeat(63), 'c'.repeat(63), 'd'.repeat(63)].join('/')]) {
      expect(isNamespace(ok), ok).toBe(true)
    }
  })

  it('rejects empty, upper case, bad slashes, long segments and long namespaces', () => {
    for (const bad of ['', 'Acme', 'acme/', '/acme', 'acme//x', 'a b', 'a.b', 'x'.repeat(65), ['a'.repeat(64), 'b'.repeat(64), 'c'.repeat(64), 'd'.repeat(61)].join('/')]) {
      expect(isNamespace(bad), bad).toBe(false)
    }
  })
})

describe('namespaceLineage', () => {
  it('lists the namespace and its ancestors, root first', () => {
    expect(namespaceLineage('a/b/c')).toEqual(['a', 'a/b', 'a/b/c'])
    expect(namespaceLineage('solo')).toEqual(['solo'])
  })
})
