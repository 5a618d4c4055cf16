import type { LanguageModelV3FunctionTool, LanguageModelV3Prompt } from '@ai-sdk/provider'
import { imageSize } from 'image-size'
import { estimateMediaTokens } from '../domain/context/estimate-part-tokens.ts'
import { estimateToolTokens } from '../domain/tokens/estimate-tool-tokens.ts'
import { estimateTokens, saturatingAdd } from '../domain/tokens/estimate-tokens.ts'

function dimensionsOf(bytes: Uint8Array, mime: string): { width: number | null; height: number | null } {
  if (!mime.startsWith('image/')) return { width: null, height: null }
  try {
    const size = imageSize(bytes)
    return { width: size.width ?? null, height: size.height ?? null }
  } catch {
    return { width: null, height: null }
  }
}

export function estimateFileTokens(mime: string, data: unknown): number {
  const bytes = typeof data === 'string' ? Buffer.from(data, 'base64') : data instanceof Uint8Array ? data : new Uint8Array()
  return estimateMediaTokens({ mime, byte_len: bytes.length, page_count: null, ...dimensionsOf(bytes, mime) })
}

/**
 * The input tokens of a provider call by the project's one estimator: what packing budgets and
 * what the sandbox reports as usage, computed from the same prompt.
 */
export function estimatePromptTokens(prompt: LanguageModelV3Prompt, tools: LanguageModelV3FunctionTool[] = []): number {
  const counts: number[] = tools.map((t) =>
    estimateToolTokens({ name: t.name, description: t.description ?? null, input_schema: t.inputSchema as Record<string, unknown> }),
  )
  for (const message of prompt) {
    if (message.role === 'system') {
      counts.push(estimateTokens(message.content))
      continue
    }
    for (const part of message.content) {
      switch (part.type) {
        case 'text':
        case 'reasoning':
          counts.push(estimateTokens(part.text))
          break
        case 'file':
          counts.push(estimateFileTokens(part.mediaType, part.data))
          break
        case 'tool-call':
          counts.push(estimateTokens(part.toolName), estimateTokens(typeof part.input === 'string' ? part.input : JSON.stringify(part.input)))
          break
        case 'tool-result': {
          counts.push(estimateTokens(part.toolName))
          const output = part.output
          if (output.type === 'text' || output.type === 'error-text') counts.push(estimateTokens(output.value))
          else if (output.type === 'content') {
            for (const item of output.value) {
              if (item.type === 'text') counts.push(estimateTokens(item.text))
              else if (item.type === 'file-data') counts.push(estimateFileTokens(item.mediaType, item.data))
            }
          } else counts.push(estimateTokens(JSON.stringify(output)))
          break
        }
        default:
          break
      }
    }
  }
  return saturatingAdd(...counts)
}
