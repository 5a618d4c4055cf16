import { expect } from 'vitest'
import type { ANTHROPIC_THINKING_TOOL_CALL } from '../e2e/vendor-fixtures/anthropic-thinking.ts'
import type { OPENAI_REASONING_TOOL_CALL } from '../e2e/vendor-fixtures/openai-reasoning.ts'

/**
 * What the vendor's next request carries back of the reasoning an earlier answer came with
 * (decision 026), asserted the same way in process (test/providers/vendor-streams) and through the
 * server process (test/e2e).
 */

/**
 * The Anthropic request after the tool result answering ANTHROPIC_THINKING_TOOL_CALL's call: the
 * assistant message carries the signed and the redacted thinking back unchanged before its tool_use,
 * and the last message carries the tool result `toolResult`.
 */
export function expectThinkingReplayed(body: any, fixture: typeof ANTHROPIC_THINKING_TOOL_CALL, toolResult: string): void {
  const assistant = body.messages.find((m: any) => m.role === 'assistant')
  expect(assistant.content).toEqual([
    { type: 'thinking', thinking: fixture.thinking, signature: fixture.signature },
    { type: 'redacted_thinking', data: fixture.redactedData },
    { type: 'tool_use', id: fixture.toolUseId, name: 'get_weather', input: { city: 'Oslo' } },
  ])
  const result = body.messages.at(-1).content.find((b: any) => b.type === 'tool_result')
  expect(result).toMatchObject({ tool_use_id: fixture.toolUseId, content: toolResult })
}

/**
 * The OpenAI request after the tool result answering OPENAI_REASONING_TOOL_CALL's call: still
 * store: false, the encrypted reasoning item sent back right before its function_call, then the
 * function_call_output.
 */
export function expectEncryptedReasoningReplayed(body: any, fixture: typeof OPENAI_REASONING_TOOL_CALL): void {
  expect(body.store).toBe(false)
  const input = body.input as any[]
  const reasoningAt = input.findIndex((i) => i.type === 'reasoning')
  const callAt = input.findIndex((i) => i.type === 'function_call')
  expect(input[reasoningAt]).toEqual({ type: 'reasoning', id: fixture.reasoningItemId, encrypted_content: fixture.encryptedContent, summary: [] })
  expect(reasoningAt).toBeGreaterThanOrEqual(0)
  expect(callAt).toBe(reasoningAt + 1)
  // The call goes without its item id: under store: false the API kept no item to name.
  expect(input[callAt]).toEqual({ type: 'function_call', call_id: fixture.callId, name: 'get_weather', arguments: fixture.arguments })
  expect(input.at(-1)).toMatchObject({ type: 'function_call_output', call_id: fixture.callId })
}
