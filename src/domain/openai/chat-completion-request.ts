import type { Problem } from '../errors.ts'
import type { InputItem, ResponsesRequest } from './request-to-turn.ts'

/**
 * A Chat Completions request (`POST /v1/chat/completions`) as the Responses request the facade
 * already runs as a native turn (docs/decisions/063-chat-completions.md). Pure: what the chat or the
 * held calls hold is asked through `options`.
 */
type TextPart = { type: 'text'; text: string }
type UserPart = TextPart | { type: 'image_url'; image_url: { url: string; detail?: string } } | { type: 'file'; file: { file_data?: string; filename?: string; file_id?: string } }
type AssistantPart = TextPart | { type: 'refusal'; refusal: string }
export type ToolCall = { id: string; type: 'function'; function: { name: string; arguments: string } }
export type ChatMessage =
  | { role: 'system' | 'developer'; content: string | TextPart[]; name?: string }
  | { role: 'user'; content: string | UserPart[]; name?: string }
  | { role: 'assistant'; content?: string | AssistantPart[] | null; refusal?: string | null; tool_calls?: ToolCall[] | null; name?: string }
  | { role: 'tool'; content: string | TextPart[]; tool_call_id: string }

export type ChatCompletionRequest = {
  model: string
  messages: ChatMessage[]
  tools?: { type: 'function'; function: { name: string; description?: string | null; parameters?: Record<string, unknown> | null; strict?: boolean | null } }[] | null
  tool_choice?: 'none' | 'auto' | 'required' | { type: 'function'; function: { name: string } } | null
  temperature?: number | null
  top_p?: number | null
  max_tokens?: number | null
  max_completion_tokens?: number | null
  reasoning_effort?: string | null
  response_format?: { type: 'text' } | { type: 'json_object' } | { type: 'json_schema'; json_schema: { name: string; schema?: Record<string, unknown>; description?: string; strict?: boolean | null } } | null
  metadata?: Record<string, string> | null
  user?: string
}

/** What the Responses facade runs: its request, stateless (`store: false`) or on a chat (`conversation`). */
export type ResponsesBody = ResponsesRequest & {
  input: InputItem[]
  store?: boolean
  conversation?: string
  previous_response_id?: string
  user?: string
}

export type ChatCompletionMode =
  /** Stateless: the messages are the whole conversation. `held` says whether a stateless run that made these calls is still held (their results continue it). */
  | { kind: 'stateless'; held: (callIds: string[]) => string | null }
  /** Appending to a Parley chat (`X-Parley-Chat`): the messages after the last assistant's are the turn's input; the rest is the chat's history. */
  | { kind: 'chat'; conversationId: string }

export type TranslatedCompletion = { body: ResponsesBody; problems: Problem[]; continues: string | null }

const at = (pointer: string, message: string): Problem => ({ in: 'body', pointer, message })

const textOf = (content: string | TextPart[]) => (typeof content === 'string' ? content : content.map((p) => p.text).join(''))

function userContent(content: string | UserPart[], pointer: string, problems: Problem[]): InputItem & { role: 'user' } {
  if (typeof content === 'string') return { type: 'message', role: 'user', content }
  const parts = content.map((part, i) => {
    switch (part.type) {
      case 'text':
        return { type: 'input_text' as const, text: part.text }
      case 'image_url':
        return { type: 'input_image' as const, image_url: part.image_url.url, ...(part.image_url.detail === undefined ? {} : { detail: part.image_url.detail }) }
      case 'file':
        if (part.file.file_data === undefined) problems.push(at(`${pointer}/${i}/file/file_data`, 'send the file inline as a data: URL (base64); Parley keeps no file ids'))
        return { type: 'input_file' as const, file_data: part.file.file_data ?? '', ...(part.file.filename === undefined ? {} : { filename: part.file.filename }) }
      default: {
        const unknown: never = part
        throw new Error(`unknown content part ${JSON.stringify(unknown)}`)
      }
    }
  })
  return { type: 'message', role: 'user', content: parts }
}

function assistantText(message: Extract<ChatMessage, { role: 'assistant' }>): string {
  const content = message.content
  const text = content == null ? '' : typeof content === 'string' ? content : content.map((p) => (p.type === 'text' ? p.text : p.refusal)).join('')
  return text === '' && message.refusal ? message.refusal : text
}

/** A tool call told in words, as a carried history holds it (compaction-item.ts `carriedMessagesOf`). */
export const carriedCallText = (call: ToolCall) => `Called ${call.function.name} with ${call.function.arguments}`
/** A tool's result told in words, as the user's. */
export const carriedResultText = (toolName: string, text: string) => `${toolName} returned: ${text}`

/**
 * The messages as Responses input. `system` and `developer` messages are this turn's instructions
 * wherever they are. The tail (the messages after the last assistant's) is the turn's input: user
 * messages as prompts, tool messages as results of that assistant's calls. What comes before is
 * history: on a chat, the chat's own (left out); stateless, carried as text messages, a tool call
 * and its result told in words. A stateless tail answering calls that a held run made continues it
 * (`continues`), so its results are real tool results; otherwise they are carried in words too.
 */
export function chatCompletionToResponses(body: ChatCompletionRequest, mode: ChatCompletionMode): TranslatedCompletion {
  const problems: Problem[] = []
  const input: InputItem[] = []
  const messages = body.messages
  let last = -1
  messages.forEach((m, i) => {
    if (m.role === 'assistant') last = i
  })
  const lastAssistant = last >= 0 ? (messages[last] as Extract<ChatMessage, { role: 'assistant' }>) : null
  const lastCalls = lastAssistant?.tool_calls ?? []
  const continues = mode.kind === 'stateless' && lastCalls.length > 0 ? mode.held(lastCalls.map((c) => c.id)) : null
  /** Whether the history before the tail is carried here (stateless, not continuing a held run). */
  const carried = mode.kind === 'stateless' && continues === null
  const toolNames = new Map<string, string>()
  for (const m of messages) if (m.role === 'assistant') for (const c of m.tool_calls ?? []) toolNames.set(c.id, c.function.name)

  messages.forEach((message, i) => {
    const pointer = `/messages/${i}`
    const inTail = i > last
    switch (message.role) {
      case 'system':
      case 'developer':
        input.push({ type: 'message', role: message.role, content: textOf(message.content) })
        return
      case 'user':
        if (inTail || carried) input.push(userContent(message.content, `${pointer}/content`, problems))
        return
      case 'assistant': {
        if (!carried) return
        const text = assistantText(message)
        if (text !== '') input.push({ type: 'message', role: 'assistant', content: text })
        for (const call of message.tool_calls ?? []) input.push({ type: 'message', role: 'assistant', content: carriedCallText(call) })
        return
      }
      case 'tool': {
        const name = toolNames.get(message.tool_call_id)
        if (name === undefined) {
          problems.push(at(`${pointer}/tool_call_id`, 'names no tool call of an earlier assistant message'))
          return
        }
        if (inTail && !carried) input.push({ type: 'function_call_output', call_id: message.tool_call_id, output: textOf(message.content) })
        else if (carried) input.push({ type: 'message', role: 'user', content: carriedResultText(name, textOf(message.content)) })
        return
      }
      default: {
        const unknown: never = message
        problems.push(at(`${pointer}/role`, `unknown role ${JSON.stringify(unknown)}`))
      }
    }
  })
  if (!input.some((item) => 'role' in item ? item.role === 'user' || item.role === 'assistant' : true)) {
    problems.push(at('/messages', 'adds nothing to answer: end with a user message or the results of the last tool calls'))
  }

  const maxTokens = body.max_completion_tokens ?? body.max_tokens ?? null
  const translated: ResponsesBody = {
    model: body.model,
    input,
    ...(body.tools && body.tools.length > 0
      ? { tools: body.tools.map((t) => ({ type: 'function' as const, name: t.function.name, description: t.function.description ?? null, parameters: t.function.parameters ?? null, strict: t.function.strict ?? null })) }
      : {}),
    ...(body.tool_choice == null ? {} : { tool_choice: typeof body.tool_choice === 'string' ? body.tool_choice : { type: 'function' as const, name: body.tool_choice.function.name } }),
    ...(body.temperature == null ? {} : { temperature: body.temperature }),
    ...(body.top_p == null ? {} : { top_p: body.top_p }),
    ...(maxTokens === null ? {} : { max_output_tokens: maxTokens }),
    ...(body.reasoning_effort == null ? {} : { reasoning: { effort: body.reasoning_effort } }),
    ...(body.response_format == null ? {} : { text: { format: formatOf(body.response_format) } }),
    ...(body.metadata == null ? {} : { metadata: body.metadata }),
    ...(body.user === undefined ? {} : { user: body.user }),
    ...(mode.kind === 'chat' ? { conversation: mode.conversationId } : { store: false }),
    ...(continues === null ? {} : { previous_response_id: continues }),
  }
  return { body: translated, problems, continues }
}

function formatOf(format: NonNullable<ChatCompletionRequest['response_format']>): NonNullable<NonNullable<ResponsesRequest['text']>['format']> {
  switch (format.type) {
    case 'text':
      return { type: 'text' }
    case 'json_object':
      return { type: 'json_object' }
    case 'json_schema':
      return {
        type: 'json_schema',
        name: format.json_schema.name,
        schema: format.json_schema.schema ?? { type: 'object' },
        ...(format.json_schema.description === undefined ? {} : { description: format.json_schema.description }),
      }
    default: {
      const unknown: never = format
      throw new Error(`unknown response_format ${JSON.stringify(unknown)}`)
    }
  }
}
