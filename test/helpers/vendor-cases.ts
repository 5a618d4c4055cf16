import { expect } from 'vitest'
import type { Usage } from '../../src/domain/pricing/usage.ts'
import { ANTHROPIC_TEXT_ID } from '../e2e/vendor-fixtures/anthropic.ts'
import { DEEPSEEK_COMPLETION_ID } from '../e2e/vendor-fixtures/deepseek.ts'
import { GOOGLE_RESPONSE_ID } from '../e2e/vendor-fixtures/google.ts'
import type { ReplayResponse, Vendor } from '../e2e/vendor-fixtures/index.ts'
import { MISTRAL_COMPLETION_ID } from '../e2e/vendor-fixtures/mistral.ts'
import { OPENAI_RESPONSE_ID } from '../e2e/vendor-fixtures/openai.ts'
import { XAI_RESPONSE_ID } from '../e2e/vendor-fixtures/xai.ts'

/**
 * The six vendors as the recorded-fixture tests hold them: the catalogue model each vendor's
 * fixtures answer for, how its request looks, and what Parley must make of its fixtures. The same
 * table serves test/providers/vendor-streams/every-vendor.test.ts (in process, through a fetch test
 * double) and test/e2e/vendors.test.ts (through the real server process and the replay server).
 */

/**
 * One catalogue model per vendor: the one its fixtures answer for. The fixtures were recorded on earlier models
 * (their model_served says which); these are current models of the same wire behaviour (decision 041), so the
 * tests keep passing after the recorded models' retirement.
 */
export const VENDOR_MODELS: Record<Vendor, string> = {
  anthropic: 'anthropic/claude-haiku-4.5',
  openai: 'openai/gpt-5',
  google: 'google/gemini-3.8-flash',
  mistral: 'mistral/mistral-small-3.2',
  xai: 'xai/grok-4.3',
  deepseek: 'deepseek/deepseek-v4-pro',
}

/** The one item of `items`, asserting there is exactly one. */
export const only = <T>(items: T[], what: string): T => {
  expect(items, what).toHaveLength(1)
  return items[0]!
}

export type ToolCallSeen = { id: string; name: string; input: unknown }
export type ToolResultSeen = { id: string; content: unknown }

/** One vendor: which model to call, how its request looks, and what Parley must make of its fixtures. */
export type VendorCase = {
  vendor: Vendor
  /** Catalogue name and the vendor's id for it. */
  model: string
  vendorModelId: string
  /** The exact streaming endpoint the SDK must call, from the vendor's origin. */
  path: string
  /** Headers the vendor must receive when its API key is `key` (the key in the vendor's auth header). */
  auth: (key: string) => Record<string, string>
  /** The request asked for a stream; `endpoint` is the URL or the path and query it went to. */
  streamed: (body: any, endpoint: string) => boolean
  /** The conversation in the vendor's shape, and one user message with `text` in that shape. */
  conversation: (body: any) => unknown[]
  userMessage: (text: string) => unknown
  maxTokens: (body: any) => unknown
  toolNames: (body: any) => string[]
  /** The assistant's earlier tool call and the tool's result, read from a request's conversation. */
  toolCall: (body: any) => ToolCallSeen
  toolResult: (body: any) => ToolResultSeen
  /** The plain answer: Parley's blocks, its Usage, and the ids the SDK surfaces. */
  blocks: string[]
  usage: Usage
  modelServed: string | null
  responseId: string
  /** Parley's blocks for the tool-call answer. */
  toolBlocks: string[]
  /** The message the vendor's error JSON carries. */
  errorMessage: string
}

const bearer = (key: string) => ({ authorization: `Bearer ${key}` })

/** The Responses API request shape shared by OpenAI and xAI. */
const responsesApi = {
  conversation: (body: any) => body.input,
  toolNames: (body: any) => body.tools.map((t: any) => t.name),
  toolCall: (body: any): ToolCallSeen => {
    const item = only(body.input.filter((i: any) => i.type === 'function_call'), 'function_call items') as any
    return { id: item.call_id, name: item.name, input: JSON.parse(item.arguments) }
  },
  toolResult: (body: any): ToolResultSeen => {
    const item = body.input.at(-1)
    expect(item.type).toBe('function_call_output')
    return { id: item.call_id, content: item.output }
  },
}

/** The chat-completions request shape shared by Mistral and DeepSeek. */
const chatCompletions = {
  conversation: (body: any) => body.messages,
  toolNames: (body: any) => body.tools.map((t: any) => t.function.name),
  toolCall: (body: any): ToolCallSeen => {
    const call = only(body.messages.flatMap((m: any) => (m.role === 'assistant' ? m.tool_calls ?? [] : [])), 'assistant tool calls') as any
    expect(call.type).toBe('function')
    // `arguments` is a JSON-encoded arguments object.
    return { id: call.id, name: call.function.name, input: JSON.parse(call.function.arguments) }
  },
  toolResult: (body: any): ToolResultSeen => {
    const message = body.messages.at(-1)
    expect(message.role).toBe('tool')
    return { id: message.tool_call_id, content: message.content }
  },
}

export const VENDOR_CASES: VendorCase[] = [
  {
    vendor: 'anthropic',
    model: VENDOR_MODELS.anthropic,
    vendorModelId: 'claude-haiku-4-5-20251001',
    path: '/anthropic/v1/messages',
    auth: (key) => ({ 'x-api-key': key, 'anthropic-version': '2023-06-01' }),
    streamed: (body) => body.stream === true,
    conversation: (body) => body.messages,
    userMessage: (text) => ({ role: 'user', content: [{ type: 'text', text }] }),
    maxTokens: (body) => body.max_tokens,
    toolNames: (body) => body.tools.map((t: any) => t.name),
    toolCall: (body) => {
      const block = only(
        body.messages.flatMap((m: any) => (m.role === 'assistant' ? m.content.filter((c: any) => c.type === 'tool_use') : [])),
        'tool_use blocks',
      ) as any
      return { id: block.id, name: block.name, input: block.input }
    },
    toolResult: (body) => {
      // The result is a tool_result content block of the last (user) message.
      const message = body.messages.at(-1)
      expect(message.role).toBe('user')
      const block = only(message.content, 'the last message') as any
      expect(block.type).toBe('tool_result')
      return { id: block.tool_use_id, content: block.content }
    },
    blocks: ['text'],
    // Fresh input excludes the 1536 cache-read and 2104 cache-write tokens.
    usage: { input_tokens: 19, output_tokens: 14, reasoning_tokens: 0, cache_read_tokens: 1536, cache_write_tokens: 2104 },
    modelServed: 'claude-sonnet-4-5-20250929',
    responseId: ANTHROPIC_TEXT_ID,
    toolBlocks: ['text', 'tool_call'],
    errorMessage: 'Overloaded',
  },
  {
    vendor: 'openai',
    model: VENDOR_MODELS.openai,
    vendorModelId: 'gpt-5',
    path: '/openai/v1/responses',
    auth: bearer,
    streamed: (body) => body.stream === true,
    ...responsesApi,
    userMessage: (text) => ({ role: 'user', content: [{ type: 'input_text', text }] }),
    maxTokens: (body) => body.max_output_tokens,
    // The reasoning item carries no summary: an empty reasoning block (spec §2.4: hidden reasoning).
    blocks: ['reasoning', 'text'],
    // 1320 input, 1152 of them cached; 204 output, 192 of them reasoning.
    usage: { input_tokens: 168, output_tokens: 204, reasoning_tokens: 192, cache_read_tokens: 1152, cache_write_tokens: 0 },
    modelServed: 'gpt-5-2025-08-07',
    responseId: OPENAI_RESPONSE_ID,
    toolBlocks: ['reasoning', 'tool_call'],
    errorMessage: 'The server had an error while processing your request. Sorry about that!',
  },
  {
    vendor: 'google',
    model: VENDOR_MODELS.google,
    vendorModelId: 'gemini-3.8-flash',
    path: '/google/v1beta/models/gemini-3.8-flash:streamGenerateContent?alt=sse',
    auth: (key) => ({ 'x-goog-api-key': key }),
    streamed: (_body, endpoint) => endpoint.endsWith(':streamGenerateContent?alt=sse'),
    conversation: (body) => body.contents,
    userMessage: (text) => ({ role: 'user', parts: [{ text }] }),
    maxTokens: (body) => body.generationConfig.maxOutputTokens,
    toolNames: (body) => body.tools.flatMap((t: any) => t.functionDeclarations.map((f: any) => f.name)),
    toolCall: (body) => {
      const part = only(
        body.contents.flatMap((c: any) => (c.role === 'model' ? c.parts.filter((p: any) => p.functionCall) : [])),
        'functionCall parts',
      ) as any
      return { id: part.functionCall.id, name: part.functionCall.name, input: part.functionCall.args }
    },
    toolResult: (body) => {
      const content = body.contents.at(-1)
      expect(content.role).toBe('user')
      const part = only(content.parts, 'the last content') as any
      return { id: part.functionResponse.id, content: part.functionResponse.response.content }
    },
    blocks: ['text'],
    // 1290 prompt tokens, 1024 cached; output is 16 answer tokens plus 437 thinking.
    usage: { input_tokens: 266, output_tokens: 453, reasoning_tokens: 437, cache_read_tokens: 1024, cache_write_tokens: 0 },
    // @ai-sdk/google reports responseId but not modelVersion.
    modelServed: null,
    responseId: GOOGLE_RESPONSE_ID,
    toolBlocks: ['tool_call'],
    errorMessage: 'The model is overloaded. Please try again later.',
  },
  {
    vendor: 'mistral',
    model: VENDOR_MODELS.mistral,
    vendorModelId: 'mistral-small-2506',
    path: '/mistral/v1/chat/completions',
    auth: bearer,
    streamed: (body) => body.stream === true,
    ...chatCompletions,
    userMessage: (text) => ({ role: 'user', content: [{ type: 'text', text }] }),
    maxTokens: (body) => body.max_tokens,
    blocks: ['text'],
    usage: { input_tokens: 14, output_tokens: 9, reasoning_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0 },
    modelServed: 'mistral-medium-2508',
    responseId: MISTRAL_COMPLETION_ID,
    toolBlocks: ['tool_call'],
    errorMessage: 'Internal server error',
  },
  {
    vendor: 'xai',
    model: VENDOR_MODELS.xai,
    vendorModelId: 'grok-4.3',
    path: '/xai/v1/responses',
    auth: bearer,
    streamed: (body) => body.stream === true,
    ...responsesApi,
    userMessage: (text) => ({ role: 'user', content: [{ type: 'input_text', text }] }),
    maxTokens: (body) => body.max_output_tokens,
    blocks: ['reasoning', 'text'],
    // 180 input tokens, 128 cached; 231 output tokens, 223 of them reasoning.
    usage: { input_tokens: 52, output_tokens: 231, reasoning_tokens: 223, cache_read_tokens: 128, cache_write_tokens: 0 },
    // xAI answers requests for retired Grok 4 snapshots with grok-4.3 (docs.x.ai, May 15 retirement).
    modelServed: 'grok-4.3',
    responseId: XAI_RESPONSE_ID,
    toolBlocks: ['tool_call'],
    errorMessage: 'Service temporarily unavailable. The model is at capacity',
  },
  {
    vendor: 'deepseek',
    model: VENDOR_MODELS.deepseek,
    vendorModelId: 'deepseek-v4-pro',
    path: '/deepseek/chat/completions',
    auth: bearer,
    streamed: (body) => body.stream === true && body.stream_options?.include_usage === true,
    ...chatCompletions,
    userMessage: (text) => ({ role: 'user', content: text }),
    maxTokens: (body) => body.max_tokens,
    blocks: ['reasoning', 'text'],
    // 1046 prompt tokens, 1024 cache hits; 62 completion tokens, 48 of them reasoning.
    usage: { input_tokens: 22, output_tokens: 62, reasoning_tokens: 48, cache_read_tokens: 1024, cache_write_tokens: 0 },
    modelServed: 'deepseek-reasoner',
    responseId: DEEPSEEK_COMPLETION_ID,
    toolBlocks: ['reasoning', 'tool_call'],
    errorMessage: 'Server overloaded, please try again later.',
  },
]

/** The `done` frame's data for the case's plain answer, which cost `cost`. */
export const plainAnswerDone = (c: VendorCase, cost: string) => ({
  compaction: null,
  cost,
  cost_currency: 'USD',
  model_served: c.modelServed,
  pending_tool_calls: [],
  provider_response_id: c.responseId,
  server_tools: null,
  stop_reason: 'end_turn',
  usage: c.usage,
})

/**
 * The vendor's request id header (decision 017): what a run records as provider_request_id. Google
 * sends none (null), so its run records the response id.
 */
export const REQUEST_ID_HEADER: Record<Vendor, string | null> = {
  anthropic: 'request-id',
  openai: 'x-request-id',
  google: null,
  mistral: 'mistral-correlation-id',
  xai: 'x-request-id',
  deepseek: 'x-ds-trace-id',
}

/** The header of a recorded answer. */
export const headerOf = (response: ReplayResponse, name: string): string | undefined => ('headers' in response ? response.headers[name] : undefined)
