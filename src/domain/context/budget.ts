import { Decimal } from 'decimal.js'
import type { ContextBudget } from '../config/config-types.ts'

// Fractions are read as the decimals they were written as (0.9, not 0.900000000000000022…).
const Exact = Decimal.clone({ precision: 40, rounding: Decimal.ROUND_FLOOR })

// Every turn asks the same few questions (its budget and thresholds): answers are remembered.
const MAX_REMEMBERED = 4096
const remembered = new Map<string, number>()
function remember(key: string, compute: () => number): number {
  let value = remembered.get(key)
  if (value === undefined) {
    if (remembered.size >= MAX_REMEMBERED) remembered.clear()
    remembered.set(key, (value = compute()))
  }
  return value
}

/** floor(n × f), with f taken as the shortest decimal that prints as it. */
export function floorTimes(n: number, fraction: number): number {
  return remember(`${n}×${fraction}`, () => new Exact(n).mul(new Exact(String(fraction))).floor().toNumber())
}

/** docs/guide/context.md: input budget = floor(context_window × (1 − headroom)), exactly. */
export function inputBudget(contextWindow: number, budget: Pick<ContextBudget, 'headroom'>): number {
  return remember(`${contextWindow}×(1−${budget.headroom})`, () =>
    new Exact(contextWindow).mul(new Exact(1).minus(new Exact(String(budget.headroom)))).floor().toNumber(),
  )
}

/**
 * docs/guide/context.md: what the history may take once the fixed parts are in, capped by
 * `max_history_tokens`. Negative when the fixed parts alone do not fit.
 */
export function historyBudget(input: number, fixedTokens: number, budget: Pick<ContextBudget, 'max_history_tokens'>): number {
  const left = input - fixedTokens
  return budget.max_history_tokens === null || budget.max_history_tokens === undefined ? left : Math.min(left, budget.max_history_tokens)
}
