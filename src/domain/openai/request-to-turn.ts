import type { Problem } from '../errors.ts'
import type { PartBody } from '../parts.ts'
import type { ReasoningEffort, ResponseFormat, SubmittedMedia, SubmittedPart, ToolChoice, TurnRequest } from '../turns/submission.ts'
import type { ToolDefinition } from '../config/config-types.ts'
import { itemRefOf, type ItemRef } from './openai-ids.ts'
import { carriedSummaryText, contentOf } from './compaction-item.ts'

/** The Responses request as the facade's schema admits it (src/http/schemas/openai-responses.ts). */
type ContentPart =
  | { type: 'input_text'; text: string }
  | { type: 'input_image'; image_url?: string | null; file_id?: string | null; detail?: string }
  | { type: 'input_file'; file_data?: string; filename?: string; file_url?: string; file_id?: string | null }
  | { type: 'output_text'; text: string }
  | { type: 'refusal'; refusal: string }
export type InputItem =
  | { type?: 'message'; role: 'user' | 'assistant' | 'system' | 'developer'; content: string | ContentPart[] }
  | { type: 'function_call'; call_id: string; name: string; arguments: string }
  | { type: 'function_call_output'; call_id: string; output: string | ContentPart[] }
  | { type: 'reasoning' }
  | { type: 'compaction'; encrypted_content: string; id?: string }
  | { type?: 'item_reference' | null; id: string }

export type ResponsesRequest = {
  model: string
  input?: string | InputItem[]
  instructions?: string | null
  tools?: { type: 'function'; name: string; description?: string | null; parameters?: Record<string, unknown> | null; strict?: boolean | null }[]
  tool_choice?: 'none' | 'auto' | 'required' | { type: 'function'; name: string }
  temperature?: number | null
  top_p?: number | null
  max_output_tokens?: number | null
  reasoning?: { effort?: string | null } | null
  text?: { format?: { type: 'text' } | { type: 'json_object' } | { type: 'json_schema'; name: string; schema: Record<string, unknown>; description?: string } }
  metadata?: Record<string, string> | null
}

/** What the facade reads of the chat a response continues: pure lookups, so the translation stays pure. */
export type ChatLookups = {
  /** The tool name of a call of this chat, by its call id; null when the chat has no such call. */
  toolNameOf(callId: string): string | null
  /** Whether this chat holds the item an item id names. */
  holdsItem(ref: ItemRef): boolean
  /** Whether a compaction item's id names one of this chat's own (a response of it that summarised history). */
  holdsCompaction(compactionId: string): boolean
}

export type TranslatedTurn = { request: Omit<TurnRequest, 'model'> & { model: string }; problems: Problem[] }

const EFFORTS: Record<string, ReasoningEffort> = { none: 'off', minimal: 'low', low: 'low', medium: 'medium', high: 'high', xhigh: 'x_high' }

const DATA_URL = /^data:([^,;]+)((?:;[^,;]*)*?);base64,/i

/** A `data:` URL's type and base64 bytes; null for any other URL (Parley fetches nothing). */
export function parseDataUrl(url: string): { mime: string; data_base64: string } | null {
  const match = DATA_URL.exec(url)
  if (!match) return null
  return { mime: match[1]!.trim(), data_base64: url.slice(match[0].length) }
}

const at = (pointer: string, message: string): Problem => ({ in: 'body', pointer, message })

/** A user content list as a prompt's text and attachments. */
function userContent(content: string | ContentPart[], pointer: string, problems: Problem[]): { text: string; media: SubmittedMedia[] } {
  if (typeof content === 'string') return { text: content, media: [] }
  const texts: string[] = []
  const media: SubmittedMedia[] = []
  content.forEach((part, i) => {
    const here = `${pointer}/${i}`
    switch (part.type) {
      case 'input_text':
        texts.push(part.text)
        break
      case 'input_image': {
        const data = part.image_url ? parseDataUrl(part.image_url) : null
        if (!data) problems.push(at(`${here}/image_url`, 'send the image inline as a data: URL (base64); Parley fetches no URL and keeps no file ids'))
        else media.push({ mime: data.mime, data_base64: data.data_base64 })
        break
      }
      case 'input_file': {
        const data = part.file_data ? parseDataUrl(part.file_data) : null
        if (!data) problems.push(at(`${here}/file_data`, 'send the file inline as a data: URL (base64); Parley fetches no URL and keeps no file ids'))
        else media.push({ mime: data.mime, data_base64: data.data_base64, filename: part.filename ?? null })
        break
      }
      case 'output_text':
      case 'refusal':
        problems.push(at(`${here}/type`, `${part.type} is an assistant's content, not a user's`))
        break
      default: {
        const unknown: never = part
        problems.push(at(`${here}/type`, `unknown content type ${JSON.stringify(unknown)}`))
      }
    }
  })
  return { text: texts.join('\n\n'), media }
}

function assistantText(content: string | ContentPart[], pointer: string, problems: Problem[]): string {
  if (typeof content === 'string') return content
  return content
    .flatMap((part, i) => {
      if (part.type === 'output_text' || part.type === 'input_text') return [part.text]
      if (part.type === 'refusal') return [part.refusal]
      problems.push(at(`${pointer}/${i}/type`, `an assistant's message carries text only, not ${part.type}`))
      return []
    })
    .join('')
}

function toolOutput(output: string | ContentPart[], pointer: string, problems: Problem[]): { text: string; media: SubmittedMedia[] } {
  return typeof output === 'string' ? { text: output, media: [] } : userContent(output, pointer, problems)
}

function responseFormatOf(format: NonNullable<ResponsesRequest['text']>['format']): ResponseFormat | null {
  if (!format) return null
  switch (format.type) {
    case 'text':
      return null
    case 'json_object':
      return { type: 'json_object' }
    case 'json_schema':
      return { type: 'json_schema', name: format.name, schema: format.schema, ...(format.description === undefined ? {} : { description: format.description }) }
    default: {
      const unknown: never = format
      throw new Error(`unknown text.format ${JSON.stringify(unknown)}`)
    }
  }
}

function toolChoiceOf(choice: ResponsesRequest['tool_choice']): ToolChoice | null {
  if (choice === undefined) return null
  return typeof choice === 'string' ? choice : { type: 'tool', name: choice.name }
}

function toolsOf(tools: ResponsesRequest['tools']): ToolDefinition[] | null {
  if (!tools || tools.length === 0) return null
  return tools.map((t) => ({
    name: t.name,
    input_schema: t.parameters ?? { type: 'object', properties: {} },
    ...(t.description == null ? {} : { description: t.description }),
    ...(t.strict == null ? {} : { strict: t.strict }),
  }))
}

/**
 * A Responses request as a Parley turn (docs/decisions/055-openai-facade.md). The input's user
 * messages are prompts, its `function_call_output`s tool results, its assistant messages carried
 * history; system and developer messages join `instructions`, which hold for this response only.
 * Items the chat already holds (a `function_call` it made, an `item_reference` to its own item,
 * reasoning) are history already in the ledger and add nothing. What the turn's rules decide (is the
 * call pending, does the model take the image) is left to them: nothing is decided twice.
 */
export function requestToTurn(body: ResponsesRequest, chat: ChatLookups, options: { allowEmpty?: boolean } = {}): TranslatedTurn {
  const problems: Problem[] = []
  const input: SubmittedPart[] = []
  const instructions: string[] = body.instructions ? [body.instructions] : []
  const message = (item: Extract<InputItem, { role: string }>, pointer: string) => {
    const content = item.content
    switch (item.role) {
      case 'user': {
        const { text, media } = userContent(content, `${pointer}/content`, problems)
        input.push({ type: 'prompt', text, ...(media.length > 0 ? { media } : {}) })
        return
      }
      case 'assistant':
        input.push({ type: 'assistant_message', text: assistantText(content, `${pointer}/content`, problems) })
        return
      case 'system':
      case 'developer': {
        const { text, media } = userContent(content, `${pointer}/content`, problems)
        if (media.length > 0) problems.push(at(`${pointer}/content`, `a ${item.role} message carries text only`))
        instructions.push(text)
        return
      }
      default: {
        const unknown: never = item.role
        problems.push(at(`${pointer}/role`, `unknown role ${String(unknown)}`))
      }
    }
  }
  const items: InputItem[] = typeof body.input === 'string' ? [{ type: 'message', role: 'user', content: body.input }] : (body.input ?? [])
  // The latest compaction item stands for everything before it (decision 058): what came before is
  // left out, as OpenAI's server-side compaction lets a client send its whole chain.
  let from = 0
  items.forEach((item, i) => {
    if ('type' in item && item.type === 'compaction') from = i
  })
  items.forEach((item, i) => {
    if (i < from) return
    const pointer = `/input/${i}`
    if ('role' in item) {
      message(item, pointer)
      return
    }
    if (!('type' in item) || item.type === undefined || item.type === null || item.type === 'item_reference') {
      const ref = itemRefOf((item as { id: string }).id)
      if (ref === null || !chat.holdsItem(ref)) problems.push(at(`${pointer}/id`, `no item ${(item as { id: string }).id} in this conversation`))
      return
    }
    switch (item.type) {
      case 'function_call':
        if (chat.toolNameOf(item.call_id) === null) {
          problems.push(at(`${pointer}/call_id`, 'names no function call of this conversation: a call is made by the model, not sent; continue with previous_response_id'))
        }
        return
      case 'function_call_output': {
        const { text, media } = toolOutput(item.output, `${pointer}/output`, problems)
        // An unknown call id is the turn's rule to refuse (unknown_tool_use_id), with the pending ids named.
        input.push({ type: 'tool_result', tool_use_id: item.call_id, tool_name: chat.toolNameOf(item.call_id) ?? 'unknown', text, ...(media.length > 0 ? { media } : {}) })
        return
      }
      case 'reasoning':
        return
      case 'compaction': {
        // A summary this server made (POST /v1/responses/compact, or a response that summarised
        // history), carried as history with the window it holds; this chat's own adds nothing.
        const content = contentOf(item.encrypted_content)
        if (content === null) problems.push(at(`${pointer}/encrypted_content`, 'is not a compaction this server made'))
        else if (item.id === undefined || !chat.holdsCompaction(item.id)) {
          input.push({ type: 'assistant_message', text: carriedSummaryText(content.summary) })
          for (const m of content.window) input.push(m.role === 'user' ? { type: 'prompt', text: m.text } : { type: 'assistant_message', text: m.text })
        }
        return
      }
      default:
        problems.push(at(`${pointer}/type`, `unknown item type ${JSON.stringify((item as { type: unknown }).type)}`))
    }
  })
  if (input.length === 0 && !options.allowEmpty) problems.push(at('/input', 'adds nothing to answer: send a user message or a function_call_output'))
  const effort = body.reasoning?.effort
  const request: TranslatedTurn['request'] = {
    model: body.model,
    input,
    instructions: instructions.length > 0 ? instructions.join('\n\n') : null,
    tools: toolsOf(body.tools),
    tool_choice: toolChoiceOf(body.tool_choice),
    temperature: body.temperature ?? null,
    top_p: body.top_p ?? null,
    max_tokens: body.max_output_tokens ?? null,
    reasoning_effort: effort == null ? null : (EFFORTS[effort] ?? null),
    response_format: responseFormatOf(body.text?.format),
    user_metadata: body.metadata ?? {},
  }
  return { request, problems }
}

/**
 * Items added outside a turn (a conversation's items, the input of a compaction) as ledger parts:
 * user and assistant messages of text, and summaries carried back. What belongs to a response
 * (system or developer instructions, a function call's output, attachments) is refused here.
 */
export function itemsToParts(items: InputItem[], chat: ChatLookups, pointer = '/items'): { parts: PartBody[]; problems: Problem[] } {
  const translated = requestToTurn({ model: '', input: items }, chat, { allowEmpty: true })
  const problems = translated.problems.map((p) => ({ ...p, pointer: p.pointer.replace(/^\/input/, pointer) }))
  if (translated.request.instructions) problems.push(at(pointer, 'system and developer messages instruct one response: send them as instructions with it'))
  const parts: PartBody[] = []
  for (const part of translated.request.input) {
    if (part.media && part.media.length > 0) problems.push(at(pointer, 'attachments are sent in a response\'s input, where the model that reads them is known'))
    if (part.type === 'prompt') parts.push({ type: 'prompt', text: part.text ?? '' })
    else if (part.type === 'assistant_message') parts.push({ type: 'message', text: part.text })
    else problems.push(at(pointer, "a function_call_output answers a call: send it in a response's input"))
  }
  return { parts, problems }
}
