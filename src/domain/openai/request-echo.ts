import type { ResponseEcho } from './response-object.ts'

/** The request fields a response echoes, as the facade's schema admits them. */
export type EchoedRequest = {
  instructions?: string | null
  tools?: readonly unknown[]
  tool_choice?: unknown
  parallel_tool_calls?: boolean | null
  temperature?: number | null
  top_p?: number | null
  max_output_tokens?: number | null
  max_tool_calls?: number | null
  reasoning?: { effort?: string | null; summary?: string | null; generate_summary?: string | null } | null
  text?: { format?: unknown; verbosity?: string | null }
  metadata?: Record<string, string> | null
  previous_response_id?: string | null
  conversation?: unknown
  background?: boolean | null
  store?: boolean | null
  truncation?: 'auto' | 'disabled' | null
  prompt_cache_key?: string | null
  safety_identifier?: string | null
  service_tier?: string | null
  top_logprobs?: number | null
  user?: string
}

/** What a response will echo of its request (OpenAI's defaults where it sent nothing), kept with its run. */
export function echoOfRequest(body: EchoedRequest): ResponseEcho {
  return {
    instructions: body.instructions ?? null,
    tools: (body.tools ?? []).map((tool) => ({ strict: null, description: null, parameters: null, ...(tool as object) })),
    tool_choice: body.tool_choice ?? 'auto',
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    // OpenAI's defaults as its responses state them: a response always says what it ran with.
    temperature: body.temperature ?? 1,
    top_p: body.top_p ?? 1,
    max_output_tokens: body.max_output_tokens ?? null,
    max_tool_calls: body.max_tool_calls ?? null,
    reasoning: { effort: body.reasoning?.effort ?? null, summary: body.reasoning?.summary ?? body.reasoning?.generate_summary ?? null },
    text: { format: body.text?.format ?? { type: 'text' }, verbosity: body.text?.verbosity ?? 'medium' },
    metadata: body.metadata ?? {},
    previous_response_id: body.previous_response_id ?? null,
    conversation: body.conversation !== undefined && body.conversation !== null,
    background: body.background ?? false,
    store: body.store ?? true,
    truncation: body.truncation ?? 'auto',
    prompt_cache_key: body.prompt_cache_key ?? null,
    safety_identifier: body.safety_identifier ?? null,
    service_tier: body.service_tier === 'auto' || body.service_tier == null ? 'default' : body.service_tier,
    top_logprobs: body.top_logprobs ?? 0,
    user: body.user ?? null,
  }
}
