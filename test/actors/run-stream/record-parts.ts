import { createAnthropic } from '@ai-sdk/anthropic'
import { createDeepSeek } from '@ai-sdk/deepseek'
import { createGoogleGenerativeAI } from '@ai-sdk/google'
import { createMistral } from '@ai-sdk/mistral'
import { createOpenAI } from '@ai-sdk/openai'
import type { LanguageModelV4, LanguageModelV4FunctionTool, LanguageModelV4StreamPart } from '@ai-sdk/provider'
import { createXai } from '@ai-sdk/xai'
import type { ReplayResponse, Vendor } from '../../e2e/vendor-fixtures/index.ts'

/**
 * The stream parts the real vendor packages make of a fixture's bytes: the fixture is answered by a
 * `fetch` that returns it whole (no server, no network), and the model's `doStream` is read to the
 * end. These are the sequences executeRun's reducer sees in production, recorded in milliseconds.
 */

const MODELS: Record<Vendor, (fetch: typeof globalThis.fetch) => LanguageModelV4> = {
  anthropic: (fetch) => createAnthropic({ apiKey: 'k', baseURL: 'http://replay/anthropic/v1', fetch })('claude-sonnet-4-5'),
  openai: (fetch) => createOpenAI({ apiKey: 'k', baseURL: 'http://replay/openai/v1', fetch })('gpt-5'),
  google: (fetch) => createGoogleGenerativeAI({ apiKey: 'k', baseURL: 'http://replay/google/v1beta', fetch })('gemini-2.5-flash'),
  mistral: (fetch) => createMistral({ apiKey: 'k', baseURL: 'http://replay/mistral/v1', fetch })('mistral-large-latest'),
  xai: (fetch) => createXai({ apiKey: 'k', baseURL: 'http://replay/xai/v1', fetch })('grok-4'),
  deepseek: (fetch) => createDeepSeek({ apiKey: 'k', baseURL: 'http://replay/deepseek', fetch })('deepseek-reasoner'),
}

const WEATHER: LanguageModelV4FunctionTool = {
  type: 'function',
  name: 'get_weather',
  description: 'The weather in a city',
  inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
}

function responseOf(response: ReplayResponse): Response {
  if (response.kind === 'json') return new Response(JSON.stringify(response.body), { status: response.status, headers: response.headers })
  if (response.kind === 'hang') throw new Error('a hanging answer has no parts to record')
  const bytes = new TextEncoder().encode(response.events.join(''))
  return new Response(
    new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(bytes)
        if (response.end !== 'destroy') controller.close()
      },
      // The connection drops once the bytes before it are read (an error at once would discard them).
      pull(controller) {
        controller.error(new TypeError('terminated'))
      },
    }),
    { status: 200, headers: response.headers },
  )
}

/**
 * Every stream part the vendor's package makes of `response`, in order; with `includeRawChunks`,
 * its `raw` parts too (as executeRun asks for them from the providers it reads usage from). A
 * stream that breaks (`end: 'destroy'`) gives its parts up to the break.
 */
export async function recordParts(vendor: Vendor, response: ReplayResponse, options: { includeRawChunks?: boolean } = {}): Promise<LanguageModelV4StreamPart[]> {
  const fetch = (async () => responseOf(response)) as typeof globalThis.fetch
  const { stream } = await MODELS[vendor](fetch).doStream({
    prompt: [{ role: 'user', content: [{ type: 'text', text: 'What is the weather in Oslo?' }] }],
    tools: [WEATHER],
    ...(options.includeRawChunks ? { includeRawChunks: true } : {}),
  })
  const parts: LanguageModelV4StreamPart[] = []
  const reader = stream.getReader()
  for (;;) {
    let next: ReadableStreamReadResult<LanguageModelV4StreamPart>
    try {
      next = await reader.read()
    } catch (error) {
      if (response.kind === 'stream' && response.end === 'destroy') return parts
      throw error
    }
    if (next.done) return parts
    parts.push(next.value)
  }
}
