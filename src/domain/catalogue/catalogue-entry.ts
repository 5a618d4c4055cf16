/** A catalogue model at provider cost; prices are decimal strings per million tokens in USD. */
export type MediaPolicy = {
  mime_types: string[]
  max_bytes_per_attachment: number
  max_attachments_per_request?: number | null
}

export type Rates = {
  input: string
  output: string
  currency: string
  cache_read?: string | null
  cache_write?: string | null
}

export type Tier = {
  id: string
  metric: string
  min: number
  mode: 'cliff' | 'graduated'
  max?: number | null
  input?: string | null
  output?: string | null
  cache_read?: string | null
  cache_write?: string | null
}

/** The header that opens a model's long context, and the window that holds without it. */
export type LongContextOptIn = { standard_window: number; header: string; value: string }

export type ModelStatus = 'active' | 'deprecated' | 'retired'

/** Where a figure was read and when (decision 041). */
export type FigureSource = { source: string; checked: string }

export type CatalogueEntry = {
  id: string
  name: string
  /** The vendor's own model id, sent upstream; never a lookup key for customers. */
  vendor_model_id: string
  display_name: string
  provider: string
  provider_label: string
  model_family: string
  /** The most tokens of input and output together, with the long-context opt-in when there is one. */
  context_window: number
  max_output_tokens: number
  /** The vendor's own cap on input tokens, where it is below the window; null or absent: the window alone. */
  max_input_tokens?: number | null
  /** A larger window the vendor opens only on request (docs/decisions/027-model-limits.md). */
  long_context?: LongContextOptIn | null
  /** The vendor's documented limit on one request's bytes (Anthropic's Messages API: 32 MB). */
  max_request_bytes: number
  /** As the catalogue file says; the service derives it against the clock (decision 041). */
  status: ModelStatus
  deprecated_at: string | null
  retires_at: string | null
  /** A catalogue name to move to; it exists in the same catalogue. */
  successor: string | null
  /** Where each figure was read, and when. */
  sources?: Record<string, FigureSource>
  supports_reasoning: boolean
  supports_tools: boolean
  thinking: string
  media: {
    user: MediaPolicy
    tool_result: MediaPolicy
    assistant: MediaPolicy
    max_attachments_per_part: number
    configured: boolean
  }
  rates: Rates
  tiers: Tier[]
  avg_time_to_first_token_ms?: number | null
  icon_url?: string | null
  max_reasoning_effort?: string | null
  max_tool_definitions?: number | null
  uptime?: string | null
}
