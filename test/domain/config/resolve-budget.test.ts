import { describe, expect, it } from 'vitest'
import type { ConfigWarning, ContextBudget } from '../../../src/domain/config/config-types.ts'
import { PLATFORM_DEFAULT_BUDGET } from '../../../src/domain/config/platform-defaults.ts'
import { resolveBudget, type BudgetLevel, type BudgetSource } from '../../../src/domain/config/resolve-budget.ts'

const SCOPES = [null, 'acme', 'acme/support', 'acme/support/tier1'] as const
type Scope = (typeof SCOPES)[number]
const label = (scope: Scope) => scope ?? 'global'
const MODEL = '0b6f1a9e-7c1d-4f43-9a58-2b1d3c4e5f60'

const idOf = (scope: Scope, tagged: boolean) => `budget-${label(scope)}-${tagged ? 'tagged' : 'default'}`
const ALL_IDS = SCOPES.flatMap((scope) => [idOf(scope, false), idOf(scope, true)])
/** Distinct budgets per candidate so the winner is visible from the document too. */
const budgetOf = (id: string): ContextBudget => ({
  version: 3,
  headroom: 0.2,
  history_mode: 'drop_oldest',
  max_history_tokens: 32_000 + 1_000 * ALL_IDS.indexOf(id),
})

/** Candidates by scope: 'u' untagged scope default, 't' a tag for MODEL. */
type Published = Partial<Record<'global' | 'acme' | 'acme/support' | 'acme/support/tier1', ('u' | 't')[]>>

function levels(published: Published): BudgetLevel[] {
  return SCOPES.map((namespace) => {
    const here = published[label(namespace) as keyof Published] ?? []
    const version = (tagged: boolean) => {
      const id = idOf(namespace, tagged)
      return { id, budget: budgetOf(id) }
    }
    return { namespace, untagged: here.includes('u') ? version(false) : null, tagged: here.includes('t') ? version(true) : null }
  })
}

type Expected = { source: BudgetSource; warnings: ConfigWarning[] }
const policy = (namespace: Scope, tagged: boolean): BudgetSource => ({
  kind: 'policy',
  id: idOf(namespace, tagged),
  namespace,
  tagged_model: tagged ? MODEL : null,
})
const resolvedAt = (namespace: Scope, tagged: boolean): ConfigWarning => ({
  code: 'context_budget_resolved_at',
  namespace,
  tagged_model: tagged ? MODEL : null,
})

describe('resolveBudget (spec §4.3 rule 4)', () => {
  const cases: ({ name: string; published: Published; model: string | null } & Expected)[] = [
    {
      name: 'nothing published: platform_default source, no warning',
      published: {},
      model: MODEL,
      source: { kind: 'platform_default' },
      warnings: [],
    },
    {
      name: 'the org-global untagged policy is the plainest place: no warning',
      published: { global: ['u'] },
      model: MODEL,
      source: policy(null, false),
      warnings: [],
    },
    {
      name: 'at one level a tag for the model beats the untagged policy (and warns: not the plainest place)',
      published: { global: ['u', 't'] },
      model: MODEL,
      source: policy(null, true),
      warnings: [resolvedAt(null, true)],
    },
    {
      name: 'a nearer untagged policy beats a farther tagged one',
      published: { global: ['u', 't'], acme: ['u'] },
      model: MODEL,
      source: policy('acme', false),
      warnings: [resolvedAt('acme', false)],
    },
    {
      name: 'the deepest level answers over every farther level',
      published: { global: ['u', 't'], acme: ['u', 't'], 'acme/support': ['t'], 'acme/support/tier1': ['u'] },
      model: MODEL,
      source: policy('acme/support/tier1', false),
      warnings: [resolvedAt('acme/support/tier1', false)],
    },
    {
      name: 'the deepest level’s tag beats its own untagged policy',
      published: { global: ['u'], 'acme/support/tier1': ['u', 't'] },
      model: MODEL,
      source: policy('acme/support/tier1', true),
      warnings: [resolvedAt('acme/support/tier1', true)],
    },
    {
      name: 'levels with nothing are skipped towards the root',
      published: { acme: ['t'] },
      model: MODEL,
      source: policy('acme', true),
      warnings: [resolvedAt('acme', true)],
    },
    {
      name: 'no model asked: tags are ignored, the nearest untagged policy answers',
      published: { global: ['u'], 'acme/support': ['t'], 'acme/support/tier1': ['t'] },
      model: null,
      source: policy(null, false),
      warnings: [],
    },
    {
      name: 'no model asked and only tags published: platform default',
      published: { acme: ['t'], 'acme/support/tier1': ['t'] },
      model: null,
      source: { kind: 'platform_default' },
      warnings: [],
    },
    {
      name: 'no model asked: a namespace untagged policy warns with tagged_model null',
      published: { global: ['u'], 'acme/support': ['u', 't'] },
      model: null,
      source: policy('acme/support', false),
      warnings: [resolvedAt('acme/support', false)],
    },
  ]

  it.each(cases)('$name', ({ published, model, source, warnings }) => {
    const { value, warnings: got } = resolveBudget(levels(published), model)
    expect(value.source).toEqual(source)
    expect(value.budget).toEqual(source.kind === 'policy' ? budgetOf(source.id) : PLATFORM_DEFAULT_BUDGET)
    expect(got).toEqual(warnings)
  })

  it('the platform default is a valid version 3 budget', () => {
    expect(PLATFORM_DEFAULT_BUDGET.version).toBe(3)
    expect(PLATFORM_DEFAULT_BUDGET.headroom).toBeGreaterThanOrEqual(0)
    expect(PLATFORM_DEFAULT_BUDGET.headroom).toBeLessThanOrEqual(0.9)
  })
})
