import type { ResponseObject, ResponseStatus } from './response-object.ts'

/**
 * A settled response as a Chat Completions `chat.completion` (docs/decisions/063-chat-completions.md):
 * the same ledger read, told as one choice. Its id names the run (`chatcmpl-<run hex>`), so the run
 * can be read at GET /api/v1/runs/{id}; reasoning and compaction items are not part of it.
 */
export const completionIdOf = (runId: string) => `chatcmpl-${runId.replaceAll('-', '')}`

/** The run a completion id names, or null when it is not one of this server's. */
export function runIdOfCompletion(completionId: string): string | null {
  const match = /^chatcmpl-([0-9a-f]{32})$/.exec(completionId)
  if (!match) return null
  const hex = match[1]!
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter'
export type CompletionToolCall = { id: string; type: 'function'; function: { name: string; arguments: string } }

/** Why a choice ended: its calls, its token limit, a refusal, else a plain stop. */
export function finishReasonOf(status: ResponseStatus, hasCalls: boolean, refused: boolean): FinishReason {
  switch (status) {
    case 'incomplete':
      return 'length'
    case 'completed':
    case 'cancelled':
    case 'failed':
    case 'queued':
    case 'in_progress':
      if (hasCalls) return 'tool_calls'
      return refused ? 'content_filter' : 'stop'
    default: {
      const unknown: never = status
      throw new Error(`unknown response status ${String(unknown)}`)
    }
  }
}

/** Responses usage as Chat Completions counts it. */
export function completionUsageOf(usage: ResponseObject['usage']) {
  if (usage === null) return null
  return {
    prompt_tokens: usage.input_tokens,
    completion_tokens: usage.output_tokens,
    total_tokens: usage.total_tokens,
    prompt_tokens_details: { cached_tokens: usage.input_tokens_details.cached_tokens },
    completion_tokens_details: { reasoning_tokens: usage.output_tokens_details.reasoning_tokens },
  }
}

type OutputItem = { type?: unknown; [key: string]: unknown }

/** The answer's text, refusal and calls, read from the response's output items. */
export function answerOf(output: readonly OutputItem[]): { text: string | null; refusal: string | null; calls: CompletionToolCall[] } {
  const texts: string[] = []
  const refusals: string[] = []
  const calls: CompletionToolCall[] = []
  for (const item of output) {
    if (item.type === 'message') {
      for (const c of (item.content as { type: string; text?: string; refusal?: string }[] | undefined) ?? []) {
        if (c.type === 'output_text') texts.push(c.text ?? '')
        else if (c.type === 'refusal') refusals.push(c.refusal ?? '')
      }
    } else if (item.type === 'function_call') {
      calls.push({ id: String(item.call_id), type: 'function', function: { name: String(item.name), arguments: String(item.arguments) } })
    }
  }
  return { text: texts.length > 0 ? texts.join('') : null, refusal: refusals.length > 0 ? refusals.join('') : null, calls }
}

export function toChatCompletion(runId: string, response: Pick<ResponseObject, 'created_at' | 'model' | 'status' | 'output' | 'usage'>) {
  const { text, refusal, calls } = answerOf(response.output as OutputItem[])
  return {
    id: completionIdOf(runId),
    object: 'chat.completion' as const,
    created: response.created_at,
    model: response.model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant' as const, content: text, refusal, ...(calls.length > 0 ? { tool_calls: calls } : {}) },
        logprobs: null,
        finish_reason: finishReasonOf(response.status, calls.length > 0, refusal !== null),
      },
    ],
    usage: completionUsageOf(response.usage),
    system_fingerprint: null,
    service_tier: 'default' as const,
  }
}
export type ChatCompletionObject = ReturnType<typeof toChatCompletion>
