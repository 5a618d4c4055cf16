import { describe, expect, it } from 'vitest'
import type { ConfigWarning, Level, RetentionRules } from '../../../src/domain/config/config-types.ts'
import { PLATFORM_DEFAULT_RETENTION } from '../../../src/domain/config/platform-defaults.ts'
import { resolveRetention, type RetentionVersion } from '../../../src/domain/config/resolve-retention.ts'

const SCOPES = [null, 'acme', 'acme/support', 'acme/support/tier1'] as const
type Scope = (typeof SCOPES)[number]
const label = (scope: Scope) => scope ?? 'global'
const idOf = (scope: Scope) => `retention-${label(scope)}`

/** Each scope's policy is distinguishable by its fields; nearer ones deliberately omit fields the farther ones set. */
const POLICY: Record<string, RetentionRules> = {
  global: { version: 1, anchor_parts: 4, reasoning: 0.5, media: { default: 0.2, rules: [] } },
  acme: { version: 1, anchor_parts: 3 },
  'acme/support': { version: 1, verbatim_within: 0.1 },
  'acme/support/tier1': { version: 1, text: { prompt: { mode: 'keep' } } },
}

function levels(published: Scope[]): Level<RetentionVersion>[] {
  return SCOPES.map((namespace) => ({
    namespace,
    active: published.includes(namespace) ? { id: idOf(namespace), rules: POLICY[label(namespace)]! } : null,
  }))
}

describe('resolveRetention (spec §4.3 rule 3)', () => {
  const cases: { name: string; published: Scope[]; chosen: Scope | 'default'; warnings: ConfigWarning[] }[] = [
    { name: 'nothing published applies the platform default', published: [], chosen: 'default', warnings: [] },
    { name: 'a global policy alone applies without a warning', published: [null], chosen: null, warnings: [] },
    { name: 'a namespace policy alone applies without a warning', published: ['acme/support'], chosen: 'acme/support', warnings: [] },
    {
      name: 'the nearest policy is taken whole and the global one is displaced',
      published: [null, 'acme/support'],
      chosen: 'acme/support',
      warnings: [{ code: 'retention_policy_overridden', namespace: 'acme/support', displaced: null }],
    },
    {
      name: 'displaced names the nearest level whose policy is not applied',
      published: [null, 'acme', 'acme/support/tier1'],
      chosen: 'acme/support/tier1',
      warnings: [{ code: 'retention_policy_overridden', namespace: 'acme/support/tier1', displaced: 'acme' }],
    },
    {
      name: 'with a policy at every level the chat level wins over acme/support',
      published: [null, 'acme', 'acme/support', 'acme/support/tier1'],
      chosen: 'acme/support/tier1',
      warnings: [{ code: 'retention_policy_overridden', namespace: 'acme/support/tier1', displaced: 'acme/support' }],
    },
    {
      name: 'a farther level wins when nearer levels published nothing',
      published: [null, 'acme'],
      chosen: 'acme',
      warnings: [{ code: 'retention_policy_overridden', namespace: 'acme', displaced: null }],
    },
  ]

  it.each(cases)('$name', ({ published, chosen, warnings }) => {
    const { value, warnings: got } = resolveRetention(levels(published))
    if (chosen === 'default') {
      expect(value.rules).toEqual(PLATFORM_DEFAULT_RETENTION)
      expect(value.policyId).toBeNull()
    } else {
      // Whole: exactly the chosen document, nothing merged in from farther levels.
      expect(value.rules).toEqual(POLICY[label(chosen)])
      expect(value.policyId).toBe(idOf(chosen))
    }
    expect(got).toEqual(warnings)
  })

  it('the platform default is a supported, complete document', () => {
    expect(PLATFORM_DEFAULT_RETENTION.version).toBe(1)
  })
})
