import { estimateToolTokens } from '../tokens/estimate-tool-tokens.ts'
import { saturatingAdd } from '../tokens/estimate-tokens.ts'
import type { ToolDefinition } from './config-types.ts'
import type { DocumentProblem } from './validate-retention-rules.ts'
import { validateToolBundle } from './validate-tool-bundle.ts'

/**
 * What publishing a tool bundle needs worked out of its definitions before it is written: its
 * problems (validateToolBundle, pointers under `/definitions`), and when there are none, the
 * estimate it is stored with and the JSON text the store writes (`JSON.stringify(definitions)`,
 * what the store would make of it itself; 0 and '' when there are problems). One function, so a
 * bundle checked on the body-work pool's threads (src/http/body-work, decision 061) answers
 * exactly as one checked in place.
 */
export type ToolBundleCheck = { problems: DocumentProblem[]; estimatedTokens: number; documentJson: string }

export function checkToolBundle(definitions: ToolDefinition[]): ToolBundleCheck {
  const problems = validateToolBundle(definitions)
  if (problems.length > 0) return { problems, estimatedTokens: 0, documentJson: '' }
  // saturatingAdd of the tools' estimates one at a time: the same sum as of them all at once (none is negative).
  let estimatedTokens = 0
  for (const definition of definitions) estimatedTokens = saturatingAdd(estimatedTokens, estimateToolTokens(definition))
  return { problems, estimatedTokens, documentJson: JSON.stringify(definitions) }
}

/**
 * How many values (objects, arrays, strings, numbers…) `value` holds, `cap` once it holds that many:
 * the walk stops there, so telling a large bundle from a small one costs at most `cap` steps, however
 * large the bundle or wide one of its objects.
 */
export function countValuesUpTo(value: unknown, cap: number): number {
  let seen = 1
  const stack: unknown[] = [value]
  const visit = (child: unknown) => {
    seen++
    if (child !== null && typeof child === 'object') stack.push(child)
  }
  while (stack.length > 0 && seen < cap) {
    const v = stack.pop() as object
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length && seen < cap; i++) visit(v[i])
      continue
    }
    for (const key in v) {
      if (seen >= cap) break
      visit((v as Record<string, unknown>)[key])
    }
  }
  return Math.min(seen, cap)
}
