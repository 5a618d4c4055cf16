import type {
  LanguageModelV3FilePart,
  LanguageModelV3Message,
  LanguageModelV3Prompt,
  LanguageModelV3TextPart,
  LanguageModelV3ToolResultOutput,
} from '@ai-sdk/provider'
import type { PackedPart, RenderedPart, SentAttachment } from '../domain/context/context-types.ts'

type NonSystemMessage = Exclude<LanguageModelV3Message, { role: 'system' }>
type AssistantItem = Extract<NonSystemMessage, { role: 'assistant' }>['content'][number]
type ToolItem = Extract<NonSystemMessage, { role: 'tool' }>['content'][number]
type Converted = { kind: 'message'; message: NonSystemMessage } | { kind: 'item'; role: 'assistant'; item: AssistantItem } | { kind: 'item'; role: 'tool'; item: ToolItem }

/**
 * Converted forms of rendered parts without attachment bytes, shared between turns. Vendor packages
 * read prompts and never change them; messages that group items are made anew each turn.
 */
const converted = new WeakMap<RenderedPart, Converted>()

/**
 * The packed context (src/domain/context/pack-context.ts) as an AI SDK prompt: instructions as the
 * system message, prompts and tool results as user and tool messages, assistant parts grouped into
 * assistant messages. It adds no text: fences, notices and markers were decided by packing, so the
 * prompt's estimate (estimate-prompt-tokens.ts) is packing's.
 */
export function convertToProviderPrompt(
  instructions: string | null,
  parts: readonly PackedPart[],
  bytesOf: (mediaId: string) => Uint8Array,
): LanguageModelV3Prompt {
  const messages: LanguageModelV3Message[] = instructions === null ? [] : [{ role: 'system', content: instructions }]
  const appendTo = <M extends NonSystemMessage>(role: M['role'], item: M['content'][number]) => {
    const last = messages.at(-1)
    if (last?.role === role) (last.content as M['content'][number][]).push(item)
    else messages.push({ role, content: [item] } as M)
  }
  const attachment = (a: SentAttachment): LanguageModelV3TextPart | LanguageModelV3FilePart => {
    if (a.kind === 'marker') return { type: 'text', text: a.text }
    const bytes = bytesOf(a.media.mediaId)
    return {
      type: 'file',
      mediaType: a.media.mime,
      // A view, not a copy.
      data: new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length),
      ...(a.media.filename ? { filename: a.media.filename } : {}),
    }
  }

  for (const part of parts) {
    const content = part.content
    if (content === null) continue
    // Packing hands the same rendered parts turn after turn: their converted form is made once.
    const known = converted.get(content)
    if (known !== undefined) {
      if (known.kind === 'message') messages.push(known.message)
      else appendTo(known.role, known.item)
      continue
    }
    const withoutFiles = !('attachments' in content) || content.attachments.every((a) => a.kind === 'marker')
    switch (content.type) {
      case 'prompt': {
        const items = [...(content.text ? [{ type: 'text' as const, text: content.text }] : []), ...content.attachments.map(attachment)]
        const message: NonSystemMessage = { role: 'user', content: items.length > 0 ? items : [{ type: 'text', text: '' }] }
        if (withoutFiles) converted.set(content, { kind: 'message', message })
        messages.push(message)
        break
      }
      case 'tool_result': {
        const output: LanguageModelV3ToolResultOutput =
          content.attachments.length > 0
            ? {
                type: 'content',
                value: [
                  { type: 'text', text: content.text },
                  ...content.attachments.map((a) => {
                    const item = attachment(a)
                    return item.type === 'file'
                      ? { type: 'file-data' as const, data: Buffer.from(item.data as Uint8Array).toString('base64'), mediaType: item.mediaType }
                      : item
                  }),
                ],
              }
            : content.isError
              ? { type: 'error-text', value: content.text }
              : { type: 'text', value: content.text }
        const item = { type: 'tool-result' as const, toolCallId: content.toolUseId, toolName: content.toolName, output }
        if (withoutFiles) converted.set(content, { kind: 'item', role: 'tool', item })
        appendTo('tool', item)
        break
      }
      case 'summary': {
        // Summaries stand where the history they replace stood: told to the model as user text.
        const message: NonSystemMessage = { role: 'user', content: [{ type: 'text', text: content.text }] }
        converted.set(content, { kind: 'message', message })
        messages.push(message)
        break
      }
      case 'message':
      case 'reasoning':
      case 'tool_call': {
        const item: AssistantItem =
          content.type === 'tool_call'
            ? { type: 'tool-call', toolCallId: content.toolUseId, toolName: content.toolName, input: JSON.parse(content.arguments) }
            : { type: content.type === 'message' ? 'text' : 'reasoning', text: content.text }
        converted.set(content, { kind: 'item', role: 'assistant', item })
        appendTo('assistant', item)
        break
      }
      default: {
        const unknown: never = content
        throw new Error(`unknown part ${JSON.stringify(unknown)}`)
      }
    }
  }
  return messages
}
