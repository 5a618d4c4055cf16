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

export type CatalogueEntry = {
  id: string
  name: string
  /** The vendor's own model id, sent upstream; never a lookup key for customers. */
  vendor_model_id: string
  display_name: string
  provider: string
  provider_label: string
  model_family: string
  context_window: number
  max_output_tokens: number
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
