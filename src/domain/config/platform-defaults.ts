import type { ContextBudget, RetentionRules } from './config-types.ts'

/** In force for an organisation that published nothing (GET /api/v1/config/defaults). */
export const PLATFORM_DEFAULT_BUDGET: ContextBudget = {
  version: 3,
  headroom: 0.1,
  history_mode: 'summarize',
  eager_compaction: { mode: 'off' },
  max_history_tokens: null,
}

export const SUPPORTED_RETENTION_VERSION = 1

export const PLATFORM_DEFAULT_RETENTION: RetentionRules = {
  version: SUPPORTED_RETENTION_VERSION,
  media: { default: 0.5, rules: [] },
  tools: {
    default: {
      arguments: { mode: 'over', over: 2000, to: 500, keep: 'head_and_tail' },
      result: { mode: 'over', over: 4000, to: 1000, keep: 'head_and_tail' },
    },
    rules: [],
    errors: null,
    mark_truncations: true,
  },
  text: { prompt: { mode: 'keep' }, message: { mode: 'keep' } },
  reasoning: 0.25,
  verbatim_within: 0.25,
  anchor_parts: 2,
}
