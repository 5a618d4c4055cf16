/** Configuration documents and the warnings their resolution gives (docs/guide/namespaces-and-configuration.md). */
export type ConfigMode = 'append' | 'replace'
export type HistoryMode = 'summarize' | 'drop_oldest'

export type ToolDefinition = {
  name: string
  input_schema: Record<string, unknown>
  description?: string | null
  strict?: boolean | null
}

export type EagerCompaction = { mode: 'off' } | { mode: 'at_fill'; at: number }

export type ContextBudget = {
  version: 3
  headroom: number
  history_mode?: HistoryMode
  eager_compaction?: EagerCompaction
  max_history_tokens?: number | null
}

export type TruncationShape = 'head' | 'tail' | 'head_and_tail'
export type Truncation =
  | { mode: 'keep' }
  | { mode: 'always'; to: number; keep?: TruncationShape }
  | { mode: 'over'; over: number; to: number; keep?: TruncationShape }

export type ToolTreatment = { arguments?: Truncation; result?: Truncation }

export type RetentionRules = {
  version: number
  media?: { default?: number; rules?: { mime: string; retain: number }[] }
  tools?: {
    default?: ToolTreatment
    rules?: (ToolTreatment & { tool: string })[]
    errors?: Truncation | null
    mark_truncations?: boolean
  }
  text?: { prompt?: Truncation; message?: Truncation }
  reasoning?: number
  verbatim_within?: number
  anchor_parts?: number
}

export type ConfigWarning =
  | { code: 'tool_shadowed'; name: string; namespace: string | null }
  | { code: 'global_instruction_replaced'; namespace: string }
  | { code: 'global_tools_replaced'; namespace: string; dropped: number }
  | { code: 'retention_policy_overridden'; namespace: string | null; displaced: string | null }
  | { code: 'context_budget_resolved_at'; namespace: string | null; tagged_model: string | null }
  | {
      code: 'history_dropped'
      dropped: number
      start_ordinal: number
      end_ordinal: number
      /** Set when the budget asked for summaries that could not be made: what happened instead. */
      history_mode?: HistoryMode
      message?: string
    }

/** A configuration level, root first: `null` is the organisation-global scope. */
export type Level<T> = { namespace: string | null; active: T | null }
