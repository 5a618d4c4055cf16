import type { LanguageModelV4, LanguageModelV4CallOptions, LanguageModelV4Prompt } from '@ai-sdk/provider'

/**
 * Hands a vendor package every attachment already in base64, encoded by Node's native Buffer.
 * Some vendor packages (xAI, DeepSeek, Mistral and OpenAI-compatible ones bundle an older
 * provider-utils) encode bytes in a JavaScript loop that holds the event loop about 1.2 s for a
 * 20 MiB attachment; a base64 string is used as it is. The spec's file part takes either form.
 */
export function encodeFilesNatively(model: LanguageModelV4): LanguageModelV4 {
  return {
    specificationVersion: model.specificationVersion,
    get provider() {
      return model.provider
    },
    get modelId() {
      return model.modelId
    },
    get supportedUrls() {
      return model.supportedUrls
    },
    doGenerate: (options) => model.doGenerate(withBase64Files(options)),
    doStream: (options) => model.doStream(withBase64Files(options)),
  }
}

function withBase64Files(options: LanguageModelV4CallOptions): LanguageModelV4CallOptions {
  if (!options.prompt.some((m) => m.role !== 'system' && m.content.some((c) => c.type === 'file' && c.data.type === 'data' && c.data.data instanceof Uint8Array))) return options
  const prompt = options.prompt.map((message) => {
    if (message.role === 'system' || !message.content.some((c) => c.type === 'file' && c.data.type === 'data' && c.data.data instanceof Uint8Array)) return message
    return {
      ...message,
      content: message.content.map((c) =>
        c.type === 'file' && c.data.type === 'data' && c.data.data instanceof Uint8Array
          ? { ...c, data: { type: 'data' as const, data: Buffer.from(c.data.data.buffer, c.data.data.byteOffset, c.data.data.byteLength).toString('base64') } }
          : c,
      ),
    }
  }) as LanguageModelV4Prompt
  return { ...options, prompt }
}
