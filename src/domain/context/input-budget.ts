import type { ContextBudget } from '../config/config-types.ts'

/** decisions §5: input budget = floor(context_window × (1 − headroom)). */
export function inputBudget(contextWindow: number, budget: ContextBudget): number {
  return Math.floor(contextWindow * (1 - budget.headroom))
}

/**
 * History gets what is left after instructions, tools and the current exchange, capped by
 * `max_history_tokens`. Negative means the fixed parts alone do not fit.
 */
export function historyAllowance(contextWindow: number, budget: ContextBudget, fixedTokens: number): number {
  const left = inputBudget(contextWindow, budget) - fixedTokens
  const cap = budget.max_history_tokens ?? Number.POSITIVE_INFINITY
  return Math.min(left, cap)
}
