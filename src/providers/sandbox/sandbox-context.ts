import type { LanguageModelV4FunctionTool, LanguageModelV4Prompt, SharedV4FileData } from '@ai-sdk/provider'

/** Attachment bytes are not echoed: their MIME type and size stand in. */
const describeBytes = (mediaType: string, file: SharedV4FileData) => {
  const data = file.type === 'data' ? file.data : null
  const size = typeof data === 'string' ? Buffer.from(data, 'base64').length : data instanceof Uint8Array ? data.length : 0
  return `<${mediaType}, ${size} bytes>`
}

/**
 * The `/context` answer (docs/guide/sandbox.md): the context the model received as JSON, the system message,
 * the tools and the messages in the AI SDK's prompt form, so a user can see what packing sent.
 */
export function describeContext(prompt: LanguageModelV4Prompt, tools: readonly LanguageModelV4FunctionTool[]): string {
  const system = prompt.filter((m) => m.role === 'system').map((m) => m.content)
  const messages = prompt
    .filter((m) => m.role !== 'system')
    .map((m) => ({
      role: m.role,
      content: m.content.map((item) => {
        if (item.type === 'file') return { ...item, data: describeBytes(item.mediaType, item.data) }
        if (item.type === 'tool-result' && item.output.type === 'content') {
          return { ...item, output: { ...item.output, value: item.output.value.map((v) => (v.type === 'file' ? { ...v, data: describeBytes(v.mediaType, v.data) } : v)) } }
        }
        return item
      }),
    }))
  return JSON.stringify({ system: system.length > 0 ? system.join('\n') : null, tools: tools.map((t) => ({ name: t.name, description: t.description ?? null, input_schema: t.inputSchema })), messages })
}
