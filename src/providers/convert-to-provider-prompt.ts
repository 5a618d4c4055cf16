import type {
  LanguageModelV4FilePart,
  LanguageModelV4Message,
  LanguageModelV4Prompt,
  LanguageModelV4TextPart,
  LanguageModelV4ToolResultOutput,
} from '@ai-sdk/provider'
import type { PackedPart, RenderedPart, SentAttachment } from '../domain/context/context-types.ts'
import { needsReasoningWithToolCalls, replaysTo, type ReplayKind } from './vendor-fidelity.ts'

type NonSystemMessage = Exclude<LanguageModelV4Message, { role: 'system' }>
type AssistantItem = Extract<NonSystemMessage, { role: 'assistant' }>['content'][number]
type ToolItem = Extract<NonSystemMessage, { role: 'tool' }>['content'][number]
type Converted = { kind: 'message'; message: NonSystemMessage } | { kind: 'item'; role: 'assistant'; item: AssistantItem } | { kind: 'item'; role: 'tool'; item: ToolItem }

/** Where an item sits in the prompt: its message's index and its own within the message. */
type ItemAt = { message: number; item: number }

export type ConvertOptions = {
  /**
   * Anthropic cache breakpoints: n marks the end of the first n packed parts as a cached prefix.
   * With the option, the system message is marked too; four marks at most (Anthropic's limit), so
   * the system's and the last three requested are kept.
   */
  cacheBreakpointsAfter?: readonly number[]
  /**
   * The catalogue provider the prompt is for: a part's replay data (a thinking signature, encrypted
   * reasoning) goes only to the vendor that produced it (decisions 017 and 026). Without it, none is
   * sent.
   */
  provider?: string
}

const MAX_BREAKPOINTS = 4
const CACHE_BREAKPOINT = { anthropic: { cacheControl: { type: 'ephemeral' } } } as const

/**
 * Whether Anthropic honours a breakpoint on the item: not on reasoning (thinking blocks refuse
 * cache_control, and unsigned reasoning is not sent at all), nor on an empty text block.
 */
function canCarryBreakpoint(item: NonSystemMessage['content'][number]): boolean {
  switch (item.type) {
    case 'reasoning':
      return false
    case 'text':
      return item.text !== ''
    case 'file':
    case 'tool-call':
    case 'tool-result':
      return true
    case 'tool-approval-response':
      // Anthropic's conversion skips these.
      return false
    case 'custom':
    case 'reasoning-file':
      // Parley never sends these (vendor-specific content, reasoning images).
      return false
    default: {
      const unknown: never = item
      throw new Error(`unknown content item ${JSON.stringify(unknown)}`)
    }
  }
}

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
  options: ConvertOptions = {},
): LanguageModelV4Prompt {
  const breakpoints = options.cacheBreakpointsAfter
  // An empty system text cannot carry a breakpoint (Anthropic refuses cache_control on an empty block).
  const systemBreakpoint = breakpoints !== undefined && instructions !== null && instructions !== ''
  const messages: LanguageModelV4Message[] =
    instructions === null ? [] : [{ role: 'system', content: instructions, ...(systemBreakpoint ? { providerOptions: CACHE_BREAKPOINT } : {}) }]
  // Where each part ends as sent: the last item that can carry a breakpoint, at or before it.
  const endOf: (ItemAt | null)[] = []
  let lastMarkable: ItemAt | null = null
  const sent = (message: number, items: readonly NonSystemMessage['content'][number][], from: number) => {
    for (let i = items.length - 1; i >= from; i--) {
      if (canCarryBreakpoint(items[i]!)) {
        lastMarkable = { message, item: i }
        return
      }
    }
  }
  const push = (message: NonSystemMessage) => {
    messages.push(message)
    sent(messages.length - 1, message.content, 0)
  }
  const appendTo = <M extends NonSystemMessage>(role: M['role'], item: M['content'][number]) => {
    const last = messages.at(-1)
    // Only grouped assistant and tool messages are appended to, and those are made anew each turn:
    // the shared user messages are never changed.
    if (last?.role === role) (last.content as M['content'][number][]).push(item)
    else messages.push({ role, content: [item] } as M)
    const content = (messages.at(-1) as M).content
    sent(messages.length - 1, content, content.length - 1)
  }
  const attachment = (a: SentAttachment): LanguageModelV4TextPart | LanguageModelV4FilePart => {
    if (a.kind === 'marker') return { type: 'text', text: a.text }
    const bytes = bytesOf(a.media.mediaId)
    return {
      type: 'file',
      mediaType: a.media.mime,
      // A view, not a copy.
      data: { type: 'data', data: new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length) },
      ...(a.media.filename ? { filename: a.media.filename } : {}),
    }
  }

  for (const part of parts) {
    convertPart(part)
    endOf.push(lastMarkable)
  }
  if (breakpoints !== undefined) placeBreakpoints(messages, breakpoints, endOf, systemBreakpoint ? MAX_BREAKPOINTS - 1 : MAX_BREAKPOINTS)
  return needsReasoningWithToolCalls(options.provider) ? withReasoningBesideToolCalls(messages) : messages

  /**
   * An assistant part's item, with its replay data as the producing vendor's package provider options
   * when the prompt is for that vendor (decision 026), to no other. An item with replay data depends
   * on the vendor, so it is not shared between turns.
   */
  function assistantItem(content: Extract<RenderedPart, { type: 'reasoning' | 'message' | 'tool_call' }>, item: AssistantItem, kind: ReplayKind) {
    const replayed = replaysTo(options.provider, kind, content.replay)
    const sent = replayed ? ({ ...item, providerOptions: content.replay!.metadata } as AssistantItem) : item
    if (content.replay === undefined) converted.set(content, { kind: 'item', role: 'assistant', item: sent })
    appendTo('assistant', sent)
  }

  function convertPart(part: PackedPart) {
    const content = part.content
    if (content === null) return
    // Packing hands the same rendered parts turn after turn: their converted form is made once.
    const known = converted.get(content)
    if (known !== undefined) {
      if (known.kind === 'message') push(known.message)
      else appendTo(known.role, known.item)
      return
    }
    const withoutFiles = !('attachments' in content) || content.attachments.every((a) => a.kind === 'marker')
    switch (content.type) {
      case 'prompt': {
        const items = [...(content.text ? [{ type: 'text' as const, text: content.text }] : []), ...content.attachments.map(attachment)]
        const message: NonSystemMessage = { role: 'user', content: items.length > 0 ? items : [{ type: 'text', text: '' }] }
        if (withoutFiles) converted.set(content, { kind: 'message', message })
        push(message)
        break
      }
      case 'tool_result': {
        const output: LanguageModelV4ToolResultOutput =
          content.attachments.length > 0
            ? {
                type: 'content',
                value: [
                  { type: 'text', text: content.text },
                  ...content.attachments.map(attachment),
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
        push(message)
        break
      }
      case 'reasoning': {
        // Hidden reasoning (no text) without data this vendor takes carries nothing: not sent, so no
        // vendor package skips it with a warning each turn (decision 017).
        if (content.text === '' && !replaysTo(options.provider, 'reasoning', content.replay)) break
        assistantItem(content, { type: 'reasoning', text: content.text }, 'reasoning')
        break
      }
      case 'message':
        assistantItem(content, { type: 'text', text: content.text }, 'message')
        break
      case 'tool_call':
        assistantItem(content, { type: 'tool-call', toolCallId: content.toolUseId, toolName: content.toolName, input: JSON.parse(content.arguments) }, 'tool_call')
        break
      default: {
        const unknown: never = content
        throw new Error(`unknown part ${JSON.stringify(unknown)}`)
      }
    }
  }
}

/**
 * Marks the items that end the requested prefixes, the last `budget` of them by position. The
 * marked item and its message are copies: the shared ones stay as every other turn sees them.
 */
function placeBreakpoints(messages: LanguageModelV4Message[], after: readonly number[], endOf: readonly (ItemAt | null)[], budget: number) {
  const chosen = new Map<string, ItemAt>()
  for (const n of after) {
    // A prefix of no parts, or of more parts than were packed, marks nothing.
    if (!Number.isInteger(n) || n < 1 || n > endOf.length) continue
    const at = endOf[n - 1]
    if (at) chosen.set(`${at.message}:${at.item}`, at)
  }
  const kept = [...chosen.values()].sort((a, b) => a.message - b.message || a.item - b.item)
  for (const at of kept.slice(Math.max(0, kept.length - budget))) {
    const message = messages[at.message] as NonSystemMessage
    const content = message.content.map((item, i) =>
      i === at.item
        ? { ...item, providerOptions: { ...item.providerOptions, anthropic: { ...item.providerOptions?.anthropic, ...CACHE_BREAKPOINT.anthropic } } }
        : item,
    )
    messages[at.message] = { ...message, content } as NonSystemMessage
  }
}

/**
 * DeepSeek's thinking mode answers 400 when an assistant message with tool calls in the current tool
 * loop comes without `reasoning_content`. Its package sends `reasoning_content` for an assistant
 * message after the last user message only when the message has a reasoning item: a message with
 * tool calls and none (a call made by another model, or whose reasoning retention omitted) gets an
 * empty one, sent as `reasoning_content: ""`. The package leaves it out where it does not apply. New
 * messages: the grouped ones are made each turn, and no shared item changes.
 */
function withReasoningBesideToolCalls(messages: LanguageModelV4Message[]): LanguageModelV4Message[] {
  return messages.map((message) => {
    if (message.role !== 'assistant') return message
    const items = message.content
    if (!items.some((i) => i.type === 'tool-call') || items.some((i) => i.type === 'reasoning')) return message
    return { ...message, content: [{ type: 'reasoning', text: '' }, ...items] }
  })
}
