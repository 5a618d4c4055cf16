import { outputItemIdOf } from './openai-ids.ts'
import type { CompactionItem } from './compaction-item.ts'
import type { ResponseObject } from './response-object.ts'

/** One Responses streaming event: its `type` and fields; `sequence_number` is set as it is sent. */
export type ResponsesEvent = { type: string; sequence_number: number } & Record<string, unknown>

type Block =
  | { kind: 'text' | 'refusal' | 'reasoning'; id: string; index: number; text: string }
  | { kind: 'tool_call'; id: string; index: number; text: string; name: string; callId: string }

type Frame = { event: string; data: unknown }

/**
 * Parley's turn stream as the Responses event sequence (docs/decisions/055-openai-facade.md), with
 * Open Responses' event names where they differ from OpenAI's (a reasoning block's text streams as
 * `response.reasoning.delta`, OpenAI's `response.reasoning_text.delta`): one
 * translator per stream, fed the run's frames in order. Each block becomes one output item, opened
 * with `response.output_item.added` (and its content part), filled by deltas, closed with the
 * `.done` events; the terminal `done` or `error` frame is left to the caller, which answers it with
 * `terminal` and the response as the ledger holds it once settled.
 */
export function createEventTranslator(runId: string, options: { compactionItem?: () => CompactionItem | null } = {}) {
  let sequence = 0
  /** Output items so far: the answer's blocks, after the compaction item when there is one. */
  let outputs = 0
  /** The answer's blocks so far: an answer item's id is its run and this place (decision 055). */
  let answers = 0
  let open: Block | null = null
  /** Whether the turn said it summarises history (`compacting`) and its compaction item is yet to be sent. */
  let compactionDue = false
  const event = (type: string, fields: Record<string, unknown>): ResponsesEvent => ({ type, sequence_number: sequence++, ...fields })

  /**
   * Decision 058: a turn that summarised history answers with a `compaction` item first. Its
   * summaries are made before the answer's first block, so it is sent whole then (or before the end
   * of a turn that answered nothing).
   */
  const compaction = (): ResponsesEvent[] => {
    if (!compactionDue) return []
    compactionDue = false
    const item = options.compactionItem?.() ?? null
    if (!item) return []
    const index = outputs++
    return [event('response.output_item.added', { output_index: index, item }), event('response.output_item.done', { output_index: index, item })]
  }

  const startBlock = (data: { kind: string; tool_name?: string; tool_use_id?: string }): ResponsesEvent[] => {
    const before = compaction()
    return [...before, ...openBlock(data)]
  }

  const openBlock = (data: { kind: string; tool_name?: string; tool_use_id?: string }): ResponsesEvent[] => {
    const index = outputs++
    const place = answers++
    switch (data.kind) {
      case 'text':
      case 'refusal': {
        const block: Block = { kind: data.kind, id: outputItemIdOf('msg', runId, place), index, text: '' }
        open = block
        const part = data.kind === 'text' ? { type: 'output_text', text: '', annotations: [], logprobs: [] } : { type: 'refusal', refusal: '' }
        return [
          event('response.output_item.added', { output_index: index, item: { type: 'message', id: block.id, status: 'in_progress', role: 'assistant', content: [] } }),
          event('response.content_part.added', { item_id: block.id, output_index: index, content_index: 0, part }),
        ]
      }
      case 'reasoning': {
        const block: Block = { kind: 'reasoning', id: outputItemIdOf('rs', runId, place), index, text: '' }
        open = block
        return [
          event('response.output_item.added', { output_index: index, item: { type: 'reasoning', id: block.id, summary: [], content: [], status: 'in_progress' } }),
          event('response.content_part.added', { item_id: block.id, output_index: index, content_index: 0, part: { type: 'reasoning_text', text: '' } }),
        ]
      }
      case 'tool_call': {
        const block: Block = { kind: 'tool_call', id: outputItemIdOf('fc', runId, place), index, text: '', name: data.tool_name ?? '', callId: data.tool_use_id ?? '' }
        open = block
        return [
          event('response.output_item.added', {
            output_index: index,
            item: { type: 'function_call', id: block.id, call_id: block.callId, name: block.name, arguments: '', status: 'in_progress' },
          }),
        ]
      }
      default:
        // A block kind this translation does not know sends nothing, never a guess.
        outputs--
        answers--
        return []
    }
  }

  const delta = (text: string): ResponsesEvent[] => {
    if (!open) return []
    open.text += text
    const at = { item_id: open.id, output_index: open.index }
    switch (open.kind) {
      case 'text':
        return [event('response.output_text.delta', { ...at, content_index: 0, delta: text, logprobs: [] })]
      case 'refusal':
        return [event('response.refusal.delta', { ...at, content_index: 0, delta: text })]
      case 'reasoning':
        return [event('response.reasoning.delta', { ...at, content_index: 0, delta: text })]
      case 'tool_call':
        return [event('response.function_call_arguments.delta', { ...at, delta: text })]
      default: {
        const unknown: never = open
        throw new Error(`unknown block ${JSON.stringify(unknown)}`)
      }
    }
  }

  const stopBlock = (): ResponsesEvent[] => {
    const block = open
    if (!block) return []
    open = null
    const at = { item_id: block.id, output_index: block.index }
    switch (block.kind) {
      case 'text': {
        const part = { type: 'output_text', text: block.text, annotations: [], logprobs: [] }
        return [
          event('response.output_text.done', { ...at, content_index: 0, text: block.text, logprobs: [] }),
          event('response.content_part.done', { ...at, content_index: 0, part }),
          event('response.output_item.done', { output_index: block.index, item: { type: 'message', id: block.id, status: 'completed', role: 'assistant', content: [part] } }),
        ]
      }
      case 'refusal': {
        const part = { type: 'refusal', refusal: block.text }
        return [
          event('response.refusal.done', { ...at, content_index: 0, refusal: block.text }),
          event('response.content_part.done', { ...at, content_index: 0, part }),
          event('response.output_item.done', { output_index: block.index, item: { type: 'message', id: block.id, status: 'completed', role: 'assistant', content: [part] } }),
        ]
      }
      case 'reasoning': {
        const part = { type: 'reasoning_text', text: block.text }
        return [
          event('response.reasoning.done', { ...at, content_index: 0, text: block.text }),
          event('response.content_part.done', { ...at, content_index: 0, part }),
          event('response.output_item.done', {
            output_index: block.index,
            item: { type: 'reasoning', id: block.id, summary: [], content: [part], status: 'completed' },
          }),
        ]
      }
      case 'tool_call':
        return [
          event('response.function_call_arguments.done', { ...at, name: block.name, arguments: block.text }),
          event('response.output_item.done', {
            output_index: block.index,
            item: { type: 'function_call', id: block.id, call_id: block.callId, name: block.name, arguments: block.text, status: 'completed' },
          }),
        ]
      default: {
        const unknown: never = block
        throw new Error(`unknown block ${JSON.stringify(unknown)}`)
      }
    }
  }

  return {
    /** The opening events, with the response as it stands when the run is admitted. */
    opening(response: ResponseObject): ResponsesEvent[] {
      return [event('response.created', { response }), event('response.in_progress', { response })]
    },
    /** A frame of the run's stream as Responses events; the opening and terminal frames give none. */
    frame({ event: name, data }: Frame): ResponsesEvent[] {
      switch (name) {
        case 'compacting':
          compactionDue = true
          return []
        case 'block_start':
          return startBlock(data as { kind: string })
        case 'delta':
          return delta(String((data as { text?: unknown }).text ?? ''))
        case 'block_stop':
          return stopBlock()
        default:
          return []
      }
    },
    /**
     * The last events, ending with the settled response: `response.completed`, `response.incomplete` (cut
     * off by its token limit, never called a success) or `response.failed` (a failure or a cancel).
     */
    terminal(response: ResponseObject): ResponsesEvent[] {
      const closing = stopBlock()
      if (closing.length > 0) throw new Error('a block was left open at the end of the stream')
      const before = compaction()
      switch (response.status) {
        case 'completed':
          return [...before, event('response.completed', { response })]
        case 'incomplete':
          return [...before, event('response.incomplete', { response })]
        case 'failed':
        case 'cancelled':
        case 'queued':
        case 'in_progress':
          return [...before, event('response.failed', { response })]
        default: {
          const unknown: never = response.status
          throw new Error(`unknown response status ${String(unknown)}`)
        }
      }
    },
  }
}
