import type { Usage } from '../pricing/usage.ts'
import { conversationIdOf, responseIdOf } from './openai-ids.ts'
import type { Item } from './part-to-item.ts'
import type { CompactionItem } from './compaction-item.ts'

/** What a response echoes of the request that made it (kept in its run's manifest as `openai_request`). */
export type ResponseEcho = {
  instructions: string | null
  tools: unknown[]
  tool_choice: unknown
  parallel_tool_calls: boolean
  temperature: number
  top_p: number
  max_output_tokens: number | null
  max_tool_calls: number | null
  reasoning: { effort: string | null; summary: string | null }
  text: { format: unknown; verbosity: string | null }
  metadata: Record<string, string>
  previous_response_id: string | null
  /** Whether the request named its conversation: a response shows the conversation only then, as OpenAI's do. */
  conversation: boolean
  background: boolean
  store: boolean
  truncation: 'auto' | 'disabled'
  prompt_cache_key: string | null
  safety_identifier: string | null
  service_tier: string
  top_logprobs: number
  user: string | null
}

export type RunFacts = {
  id: string
  chat_id: string
  model_name: string
  status: 'running' | 'succeeded' | 'failed' | 'cancelled'
  created_at: string
  completed_at: string | null
  error: string | null
  stop_reason: string | null
  usage: Usage | null
}

export type ResponseStatus = 'queued' | 'in_progress' | 'completed' | 'failed' | 'cancelled' | 'incomplete'

const seconds = (iso: string) => Math.floor(Date.parse(iso) / 1000)

/** A run's status as a response's: a run cut off by its token limit is `incomplete`, never `completed`. */
export function statusOf(run: Pick<RunFacts, 'status' | 'stop_reason'>): ResponseStatus {
  switch (run.status) {
    case 'running':
      return 'in_progress'
    case 'succeeded':
      return run.stop_reason === 'max_tokens' ? 'incomplete' : 'completed'
    case 'failed':
      return 'failed'
    case 'cancelled':
      return 'cancelled'
    default: {
      const unknown: never = run.status
      throw new Error(`unknown run status ${String(unknown)}`)
    }
  }
}

/** Parley's usage as OpenAI counts it: input includes the cached tokens, output the reasoning ones. */
export function usageOf(usage: Usage) {
  const input = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: usage.cache_read_tokens },
    output_tokens: usage.output_tokens,
    output_tokens_details: { reasoning_tokens: usage.reasoning_tokens },
    total_tokens: input + usage.output_tokens,
  }
}

/** A failed run's `error` as a response's: its code is the run's reason (`upstream_error`, `interrupted`, …). */
function errorOf(run: RunFacts) {
  if (run.status !== 'failed') return null
  const code = run.error ?? 'server_error'
  return { code, message: `the run failed: ${code}` }
}

/**
 * A run as a Responses `response` object (docs/decisions/055-openai-facade.md), built from what the
 * ledger holds, so a streamed response's last event, the non-streaming answer and a later GET are
 * the same document.
 */
export function toResponseObject(run: RunFacts, output: readonly (Item | CompactionItem)[], echo: ResponseEcho) {
  const status = statusOf(run)
  const text = output.flatMap((item) => (item.type === 'message' && item.role === 'assistant' ? item.content.flatMap((c) => (c.type === 'output_text' ? [c.text] : [])) : [])).join('')
  return {
    id: responseIdOf(run.id),
    object: 'response' as const,
    created_at: seconds(run.created_at),
    completed_at: status === 'completed' && run.completed_at ? seconds(run.completed_at) : null,
    status,
    background: echo.background,
    error: errorOf(run),
    incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' as const } : null,
    instructions: echo.instructions,
    max_output_tokens: echo.max_output_tokens,
    max_tool_calls: echo.max_tool_calls,
    model: run.model_name,
    output: [...output],
    output_text: text,
    parallel_tool_calls: echo.parallel_tool_calls,
    previous_response_id: echo.previous_response_id,
    conversation: echo.conversation ? { id: conversationIdOf(run.chat_id) } : null,
    reasoning: echo.reasoning,
    store: echo.store,
    temperature: echo.temperature,
    text: echo.text,
    tool_choice: echo.tool_choice,
    tools: echo.tools,
    top_logprobs: echo.top_logprobs,
    top_p: echo.top_p,
    truncation: echo.truncation,
    usage: run.usage === null ? null : usageOf(run.usage),
    user: echo.user,
    metadata: echo.metadata,
    prompt_cache_key: echo.prompt_cache_key,
    safety_identifier: echo.safety_identifier,
    service_tier: echo.service_tier,
    presence_penalty: 0,
    frequency_penalty: 0,
  }
}
export type ResponseObject = ReturnType<typeof toResponseObject>
