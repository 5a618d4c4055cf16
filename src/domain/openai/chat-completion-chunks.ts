import { completionIdOf, completionUsageOf, finishReasonOf, type ChatCompletionObject } from './chat-completion-object.ts'
import type { ResponseObject } from './response-object.ts'

/**
 * Parley's turn stream as `chat.completion.chunk` objects (docs/decisions/063-chat-completions.md):
 * one translator per stream, fed the run's frames in order. The first chunk names the assistant's
 * role; a text block streams as `content`, a refusal as `refusal`, a tool call as one entry of
 * `tool_calls` (its id and name first, then its arguments in pieces). Reasoning and compaction are
 * not part of a completion. The last chunk carries the `finish_reason` of the settled response,
 * and, when asked (`stream_options.include_usage`), a chunk with no choices carries the usage.
 */
export type ChatCompletionChunk = {
  id: string
  object: 'chat.completion.chunk'
  created: number
  model: string
  choices: { index: 0; delta: Record<string, unknown>; logprobs: null; finish_reason: ChatCompletionObject['choices'][0]['finish_reason'] | null }[]
  usage?: ChatCompletionObject['usage']
  system_fingerprint: null
}

type Frame = { event: string; data: unknown }
type Open = { kind: 'text' | 'refusal' | 'skipped' } | { kind: 'tool_call'; index: number }

export function createChunkTranslator(runId: string, model: string, created: number, options: { includeUsage?: boolean } = {}) {
  const id = completionIdOf(runId)
  let open: Open | null = null
  let calls = 0
  let refused = false
  const chunk = (delta: Record<string, unknown>, finish: ChatCompletionChunk['choices'][0]['finish_reason'] = null): ChatCompletionChunk => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    ...(options.includeUsage ? { usage: null } : {}),
    system_fingerprint: null,
  })

  const start = (data: { kind?: string; tool_name?: string; tool_use_id?: string }): ChatCompletionChunk[] => {
    switch (data.kind) {
      case 'text':
        open = { kind: 'text' }
        return []
      case 'refusal':
        open = { kind: 'refusal' }
        refused = true
        return []
      case 'tool_call': {
        const index = calls++
        open = { kind: 'tool_call', index }
        return [chunk({ tool_calls: [{ index, id: data.tool_use_id ?? '', type: 'function', function: { name: data.tool_name ?? '', arguments: '' } }] })]
      }
      default:
        // Reasoning, and any block kind a completion has no place for, sends nothing.
        open = { kind: 'skipped' }
        return []
    }
  }

  const delta = (text: string): ChatCompletionChunk[] => {
    const block: Open | null = open
    if (block === null || text === '') return []
    switch (block.kind) {
      case 'text':
        return [chunk({ content: text })]
      case 'refusal':
        return [chunk({ refusal: text })]
      case 'tool_call':
        return [chunk({ tool_calls: [{ index: block.index, function: { arguments: text } }] })]
      case 'skipped':
        return []
      default: {
        const unknown: never = block
        throw new Error(`unknown block ${JSON.stringify(unknown)}`)
      }
    }
  }

  return {
    /** The first chunk: the assistant's role, no content yet. */
    opening(): ChatCompletionChunk[] {
      return [chunk({ role: 'assistant', content: '' })]
    },
    /** A frame of the run's stream as chunks; the opening and terminal frames give none. */
    frame({ event, data }: Frame): ChatCompletionChunk[] {
      switch (event) {
        case 'block_start':
          return start(data as { kind?: string })
        case 'delta':
          return delta(String((data as { text?: unknown }).text ?? ''))
        case 'block_stop':
          open = null
          return []
        default:
          return []
      }
    },
    /** The last chunks, from the settled response: the finish reason, then the usage when asked. */
    terminal(response: Pick<ResponseObject, 'status' | 'usage'>): ChatCompletionChunk[] {
      const last = chunk({}, finishReasonOf(response.status, calls > 0, refused))
      if (!options.includeUsage) return [last]
      return [last, { id, object: 'chat.completion.chunk', created, model, choices: [], usage: completionUsageOf(response.usage), system_fingerprint: null }]
    },
  }
}
