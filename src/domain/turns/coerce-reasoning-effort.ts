import { REASONING_EFFORTS, type ReasoningEffort } from './submission.ts'

export type TranslationWarning = { code: string; message: string; details?: Record<string, unknown> }

/**
 * docs/guide/turn-stream.md (translation warnings): an effort the model cannot honour is coerced with a warning, never rejected.
 * A model without reasoning runs with effort off; one above the model's maximum runs at the maximum.
 */
export function coerceReasoningEffort(
  requested: ReasoningEffort | null | undefined,
  model: { supports_reasoning: boolean; max_reasoning_effort?: string | null },
): { value: ReasoningEffort | null; warnings: TranslationWarning[] } {
  if (requested === null || requested === undefined) return { value: null, warnings: [] }
  if (!model.supports_reasoning) {
    if (requested === 'off') return { value: 'off', warnings: [] }
    return {
      value: 'off',
      warnings: [
        {
          code: 'reasoning_effort_coerced',
          message: `the model does not reason; reasoning_effort ${requested} was coerced to off`,
          details: { requested, applied: 'off' },
        },
      ],
    }
  }
  const max = (model.max_reasoning_effort ?? 'max') as ReasoningEffort
  if (REASONING_EFFORTS.indexOf(requested) <= REASONING_EFFORTS.indexOf(max)) return { value: requested, warnings: [] }
  return {
    value: max,
    warnings: [
      {
        code: 'reasoning_effort_coerced',
        message: `the model's highest reasoning effort is ${max}; ${requested} was coerced to it`,
        details: { requested, applied: max },
      },
    ],
  }
}
