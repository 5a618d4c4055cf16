import type { LanguageModelV3FunctionTool, LanguageModelV3Message, LanguageModelV3Prompt } from '@ai-sdk/provider'
import { imageSize } from 'image-size'
import { estimateMediaTokens } from '../domain/context/estimate-part-tokens.ts'
import { estimateToolTokens } from '../domain/tokens/estimate-tool-tokens.ts'
import { estimateTokens, saturatingAdd } from '../domain/tokens/estimate-tokens.ts'

type ContentItem = Exclude<LanguageModelV3Message, { role: 'system' }>['content'][number]

function dimensionsOf(bytes: Uint8Array, mime: string): { width: number | null; height: number | null } {
  if (!mime.startsWith('image/')) return { width: null, height: null }
  try {
    const size = imageSize(bytes)
    return { width: size.width ?? null, height: size.height ?? null }
  } catch {
    return { width: null, height: null }
  }
}

/** An attachment's estimate from its bytes, as packing made it from the stored description. */
export function estimateFileTokens(mime: string, data: unknown): number {
  const bytes = typeof data === 'string' ? Buffer.from(data, 'base64') : data instanceof Uint8Array ? data : new Uint8Array()
  return estimateMediaTokens({ mime, byteLen: bytes.length, pageCount: null, ...dimensionsOf(bytes, mime) })
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
          ...output.value.map((v) => (v.type === 'text' ? estimateTokens(v.text) : v.type === 'file-data' ? estimateFileTokens(v.mediaType, v.data) : 0)),
        )
      } else outputTokens = estimateTokens(JSON.stringify(output))
      return saturatingAdd(estimateTokens(item.toolName), outputTokens)
    }
    default:
      return 0
  }
}

export function estimateToolsTokens(tools: readonly LanguageModelV3FunctionTool[]): number {
  return saturatingAdd(
    ...tools.map((t) =>
      estimateToolTokens({ name: t.name, description: t.description || null, input_schema: t.inputSchema as Record<string, unknown>, strict: t.strict ?? null }),
    ),
  )
}

/**
 * The input tokens of a vendor call by the project's one estimator: the sandbox reports them as
 * usage, and they equal what packing budgeted for the same context (test/providers covers it).
 */
export function estimatePromptTokens(prompt: LanguageModelV3Prompt, tools: readonly LanguageModelV3FunctionTool[] = []): number {
  let tokens = estimateToolsTokens(tools)
  for (const message of prompt) {
    if (message.role === 'system') tokens = saturatingAdd(tokens, estimateTokens(message.content))
    else for (const item of message.content) tokens = saturatingAdd(tokens, estimateContentTokens(item))
  }
  return tokens
}
