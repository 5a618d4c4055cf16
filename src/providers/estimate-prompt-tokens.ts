import type { LanguageModelV4FunctionTool, LanguageModelV4Message, LanguageModelV4Prompt, SharedV4FileData } from '@ai-sdk/provider'
import { imageSize } from 'image-size'
import { estimateMediaTokens } from '../domain/context/estimate-part-tokens.ts'
import { imageRuleOf } from '../domain/context/image-tokens.ts'
import { estimateToolTokens } from '../domain/tokens/estimate-tool-tokens.ts'
import { estimateTokens, saturatingAdd } from '../domain/tokens/estimate-tokens.ts'
import { countPdfPages } from '../domain/turns/count-pdf-pages.ts'

type ContentItem = Exclude<LanguageModelV4Message, { role: 'system' }>['content'][number]

function dimensionsOf(bytes: Uint8Array, mime: string): { width: number | null; height: number | null } {
  if (!mime.startsWith('image/')) return { width: null, height: null }
  try {
    const size = imageSize(bytes)
    return { width: size.width ?? null, height: size.height ?? null }
  } catch {
    return { width: null, height: null }
  }
}

/** The sandbox's usage counts images as packing does for sandbox models. */
const SANDBOX_IMAGES = imageRuleOf('sandbox')

/** An attachment's estimate from its bytes, as packing made it from the stored description. */
export function estimateFileTokens(mime: string, file: SharedV4FileData): number {
  const data = file.type === 'data' ? file.data : null
  const bytes = typeof data === 'string' ? Buffer.from(data, 'base64') : data instanceof Uint8Array ? data : new Uint8Array()
  return estimateMediaTokens({ mime, byteLen: bytes.length, pageCount: mime === 'application/pdf' ? countPdfPages(bytes) : null, ...dimensionsOf(bytes, mime) }, SANDBOX_IMAGES)
}

/**
 * Counts already made, by content item. Conversion hands the same immutable items turn after turn
 * (src/providers/convert-to-provider-prompt.ts), so a long chat's prompt is counted once per item,
 * not once per turn.
 */
const counted = new WeakMap<ContentItem, number>()

/** One content item of a user, assistant or tool message, by the rules of src/domain/context/estimate-part-tokens.ts. */
export function estimateContentTokens(item: ContentItem): number {
  let tokens = counted.get(item)
  if (tokens === undefined) counted.set(item, (tokens = countContent(item)))
  return tokens
}

function countContent(item: ContentItem): number {
  switch (item.type) {
    case 'text':
    case 'reasoning':
      return estimateTokens(item.text)
    case 'file':
      return estimateFileTokens(item.mediaType, item.data)
    case 'tool-call':
      return saturatingAdd(estimateTokens(item.toolName), estimateTokens(typeof item.input === 'string' ? item.input : JSON.stringify(item.input)))
    case 'tool-result': {
      const output = item.output
      let outputTokens: number
      if (output.type === 'text' || output.type === 'error-text') outputTokens = estimateTokens(output.value)
      else if (output.type === 'content') {
        outputTokens = saturatingAdd(
          ...output.value.map((v) => (v.type === 'text' ? estimateTokens(v.text) : v.type === 'file' ? estimateFileTokens(v.mediaType, v.data) : 0)),
        )
      } else outputTokens = estimateTokens(JSON.stringify(output))
      return saturatingAdd(estimateTokens(item.toolName), outputTokens)
    }
    default:
      return 0
  }
}

export function estimateToolsTokens(tools: readonly LanguageModelV4FunctionTool[]): number {
  return saturatingAdd(
    ...tools.map((t) =>
      estimateToolTokens({ name: t.name, description: t.description || null, input_schema: t.inputSchema as Record<string, unknown>, strict: t.strict ?? null }),
    ),
  )
}

/**
 * One countable item of a vendor call, in prompt order: the tools block, each system message, then
 * each content item of each user, assistant or tool message. `startsMessage` says the item opens a
 * message, so two prompts with the same items grouped differently can be told apart.
 */
export type PromptTokenItem =
  | { kind: 'tools'; tools: readonly LanguageModelV4FunctionTool[]; tokens: number }
  | { kind: 'system'; text: string; tokens: number }
  | { kind: 'content'; role: Exclude<LanguageModelV4Message['role'], 'system'>; startsMessage: boolean; item: ContentItem; tokens: number }

/**
 * The prompt's items with their estimates. estimatePromptTokens is their saturating sum, so a
 * count over a leading run of them (the sandbox's prefix cache) never exceeds the whole.
 */
export function* promptTokenItems(prompt: LanguageModelV4Prompt, tools: readonly LanguageModelV4FunctionTool[] = []): Generator<PromptTokenItem> {
  yield { kind: 'tools', tools, tokens: estimateToolsTokens(tools) }
  for (const message of prompt) {
    switch (message.role) {
      case 'system':
        yield { kind: 'system', text: message.content, tokens: estimateTokens(message.content) }
        break
      case 'user':
      case 'assistant':
      case 'tool':
        for (const [i, item] of message.content.entries()) {
          yield { kind: 'content', role: message.role, startsMessage: i === 0, item, tokens: estimateContentTokens(item) }
        }
        break
      default: {
        const unknown: never = message
        throw new Error(`unknown message ${JSON.stringify(unknown)}`)
      }
    }
  }
}

/**
 * The input tokens of a vendor call by the project's one estimator: the sandbox reports them as
 * usage, and they equal what packing budgeted for the same context (test/providers covers it).
 */
export function estimatePromptTokens(prompt: LanguageModelV4Prompt, tools: readonly LanguageModelV4FunctionTool[] = []): number {
  let tokens = 0
  for (const item of promptTokenItems(prompt, tools)) tokens = saturatingAdd(tokens, item.tokens)
  return tokens
}
