import type { ConfigWarning, ContextBudget } from './config-types.ts'
import { PLATFORM_DEFAULT_BUDGET } from './platform-defaults.ts'

export type BudgetVersion = { id: string; budget: ContextBudget }
/** One level's candidates: its scope default and, when a model was asked, that model's tag. */
export type BudgetLevel = { namespace: string | null; untagged: BudgetVersion | null; tagged: BudgetVersion | null }

export type BudgetSource =
  | { kind: 'platform_default' }
  | { kind: 'policy'; id: string; namespace: string | null; tagged_model: string | null }

export type ResolvedBudget = { budget: ContextBudget; source: BudgetSource }

/**
 * docs/guide/namespaces-and-configuration.md: the nearest level with a candidate answers; at that level a tag for the model
 * beats the untagged policy. The plainest place is the organisation-global scope default: an answer
 * from anywhere else (a namespace, or a model tag) carries `context_budget_resolved_at`.
 */
export function resolveBudget(
  levels: BudgetLevel[],
  modelId: string | null,
): { value: ResolvedBudget; warnings: ConfigWarning[] } {
  for (let i = levels.length - 1; i >= 0; i--) {
    const level = levels[i]!
    const tagged = modelId === null ? null : level.tagged
    const winner = tagged ?? level.untagged
    if (!winner) continue
    const taggedModel = tagged ? modelId : null
    const warnings: ConfigWarning[] =
      level.namespace === null && taggedModel === null
        ? []
        : [{ code: 'context_budget_resolved_at', namespace: level.namespace, tagged_model: taggedModel }]
    return {
      value: {
        budget: winner.budget,
        source: { kind: 'policy', id: winner.id, namespace: level.namespace, tagged_model: taggedModel },
      },
      warnings,
    }
  }
  return { value: { budget: PLATFORM_DEFAULT_BUDGET, source: { kind: 'platform_default' } }, warnings: [] }
}
