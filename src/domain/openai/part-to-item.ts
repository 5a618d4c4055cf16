import { tombstoneText } from '../context/render-part.ts'
import type { PartBody, PartKind } from '../parts.ts'
import { outputItemIdOf, partItemIdOf, type ItemPrefix } from './openai-ids.ts'

/**
 * A ledger part as the facade reads it: its id, kind and parsed body, its place in its run's answer
 * (null when it is no run's answer), and its attachments' descriptions.
 */
export type LedgerPart = {
  id: string
  run_id: string | null
  kind: PartKind
  body: PartBody
  answer_index: number | null
  media?: readonly { mime: string; filename: string | null }[]
}

export type InputContent =
  | { type: 'input_text'; text: string }
  | { type: 'input_image'; image_url: string | null; file_id: string | null; detail: 'auto' }
  | { type: 'input_file'; filename: string | null; file_id: string | null }
export type OutputContent = { type: 'output_text'; text: string; annotations: []; logprobs: [] } | { type: 'refusal'; refusal: string }

export type MessageItem =
  | { type: 'message'; id: string; status: 'completed'; role: 'user'; content: InputContent[] }
  | { type: 'message'; id: string; status: 'completed'; role: 'assistant'; content: OutputContent[] }
export type FunctionCallItem = { type: 'function_call'; id: string; call_id: string; name: string; arguments: string; status: 'completed' }
export type FunctionCallOutputItem = { type: 'function_call_output'; id: string; call_id: string; output: string; status: 'completed' }
export type ReasoningItem = {
  type: 'reasoning'
  id: string
  summary: { type: 'summary_text'; text: string }[]
  content: { type: 'reasoning_text'; text: string }[]
  /** Present only where the vendor gave it (Open Responses allows a string or nothing, not null). */
  encrypted_content?: string
  status: 'completed'
}
export type Item = MessageItem | FunctionCallItem | FunctionCallOutputItem | ReasoningItem

/** OpenAI's encrypted reasoning, where the vendor gave it (kept for replay, decision 026). */
function encryptedContentOf(body: Extract<PartBody, { type: 'reasoning' }>): string | null {
  const value = body.replay?.metadata.openai?.reasoningEncryptedContent
  return typeof value === 'string' ? value : null
}

/**
 * One ledger part as a Responses item (docs/decisions/055-openai-facade.md): a prompt is a user
 * message, an answer an assistant message, a tool call a `function_call` and its result a
 * `function_call_output` (a tombstone's output says why the call was closed without one).
 * Attachments are described, not returned: their bytes stay in the ledger. A run's answer part is
 * named by its run and its place in the answer, as its stream named it; any other part by its id.
 */
export function partToItem(part: LedgerPart): Item {
  const { body } = part
  const place = part.run_id === null ? null : part.answer_index
  const itemIdOf = (prefix: ItemPrefix) => (place === null ? partItemIdOf(prefix, part.id) : outputItemIdOf(prefix, part.run_id!, place))
  switch (body.type) {
    case 'prompt': {
      const content: InputContent[] = body.text === '' ? [] : [{ type: 'input_text', text: body.text }]
      for (const m of part.media ?? []) {
        content.push(m.mime.startsWith('image/') ? { type: 'input_image', image_url: null, file_id: null, detail: 'auto' } : { type: 'input_file', filename: m.filename, file_id: null })
      }
      return { type: 'message', id: itemIdOf('msg'), status: 'completed', role: 'user', content }
    }
    case 'message': {
      const content: OutputContent[] = []
      if (body.text !== '' || !body.refusal) content.push({ type: 'output_text', text: body.text, annotations: [], logprobs: [] })
      if (body.refusal) content.push({ type: 'refusal', refusal: body.refusal })
      return { type: 'message', id: itemIdOf('msg'), status: 'completed', role: 'assistant', content }
    }
    case 'reasoning': {
      const encrypted = encryptedContentOf(body)
      return {
        type: 'reasoning',
        id: itemIdOf('rs'),
        summary: [],
        content: body.text === '' ? [] : [{ type: 'reasoning_text', text: body.text }],
        ...(encrypted === null ? {} : { encrypted_content: encrypted }),
        status: 'completed',
      }
    }
    case 'tool_call':
      return { type: 'function_call', id: itemIdOf('fc'), call_id: body.tool_use_id, name: body.tool_name, arguments: body.arguments, status: 'completed' }
    case 'tool_result':
      return {
        type: 'function_call_output',
        id: itemIdOf('fco'),
        call_id: body.tool_use_id,
        output: body.tombstone_reason ? tombstoneText(body.tombstone_reason) : body.text,
        status: 'completed',
      }
    default: {
      const unknown: never = body
      throw new Error(`unknown part body ${JSON.stringify(unknown)}`)
    }
  }
}
