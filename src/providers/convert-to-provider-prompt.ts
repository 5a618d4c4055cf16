import type {
  LanguageModelV3FilePart,
  LanguageModelV3Message,
  LanguageModelV3Prompt,
  LanguageModelV3TextPart,
  LanguageModelV3ToolResultOutput,
} from '@ai-sdk/provider'
import type { PackedPart, SentAttachment } from '../domain/context/context-types.ts'

type NonSystemMessage = Exclude<LanguageModelV3Message, { role: 'system' }>

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
    switch (content.type) {
      case 'prompt': {
        const items = [...(content.text ? [{ type: 'text' as const, text: content.text }] : []), ...content.attachments.map(attachment)]
        messages.push({ role: 'user', content: items.length > 0 ? items : [{ type: 'text', text: '' }] })
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
        appendTo('tool', { type: 'tool-result', toolCallId: content.toolUseId, toolName: content.toolName, output })
        break
      }
      case 'message':
        appendTo('assistant', { type: 'text', text: content.text })
        break
      case 'reasoning':
        appendTo('assistant', { type: 'reasoning', text: content.text })
        break
      case 'tool_call':
        appendTo('assistant', { type: 'tool-call', toolCallId: content.toolUseId, toolName: content.toolName, input: JSON.parse(content.arguments) })
        break
      default: {
        const unknown: never = content
        throw new Error(`unknown part ${JSON.stringify(unknown)}`)
      }
    }
  }
  return messages
}
