import { expect, test } from 'vitest'
import { DEEPSEEK_PARALLEL_CALLS } from '../../e2e/vendor-fixtures/deepseek.ts'
import { FIXTURES } from '../../e2e/vendor-fixtures/index.ts'
import { blocksOf, nextTurnPrompt, runRecorded, userPrompt, WEATHER } from '../../helpers/recorded-vendor-run.ts'
import { ANTHROPIC_THINKING_TOOL_CALL } from '../../e2e/vendor-fixtures/anthropic-thinking.ts'

/**
 * DeepSeek's chat-completions stream through @ai-sdk/deepseek and Parley's run path, in process:
 * overlapping parallel calls sent one block after the other, and the reasoning_content its thinking
 * mode requires on an assistant message with tool calls.
 */

const only = <T>(items: T[], what: string): T => {
  expect(items, what).toHaveLength(1)
  return items[0]!
}

test('parallel tool calls overlap in the SDK stream; Parley sends their blocks one after the other', async () => {
  const t = await runRecorded('deepseek', [DEEPSEEK_PARALLEL_CALLS.response], { prompt: userPrompt('Weather in Oslo and in Bergen?'), tools: [WEATHER] })
  expect(blocksOf(t.frames)).toEqual([
    { kind: 'reasoning', text: DEEPSEEK_PARALLEL_CALLS.reasoning },
    ...DEEPSEEK_PARALLEL_CALLS.calls.map((call) => ({ kind: 'tool_call', tool_name: 'get_weather', tool_use_id: call.id, text: call.arguments })),
  ])
  expect(t.frames.at(-1)!.data).toMatchObject({
    stop_reason: 'tool_use',
    pending_tool_calls: DEEPSEEK_PARALLEL_CALLS.calls.map((call) => ({ tool_name: 'get_weather', tool_use_id: call.id })),
  })
  expect(t.persisted).toEqual([
    { type: 'reasoning', text: DEEPSEEK_PARALLEL_CALLS.reasoning },
    ...DEEPSEEK_PARALLEL_CALLS.calls.map((call) => ({ type: 'tool_call', arguments: call.arguments, tool_name: 'get_weather', tool_use_id: call.id })),
  ])
})

test('a call Claude made, answered on deepseek-reasoner: the assistant message with tool_calls carries reasoning_content', async () => {
  const call = await runRecorded('anthropic', [FIXTURES.anthropic.toolCall.response], { prompt: userPrompt('Weather in Oslo?'), tools: [WEATHER] })
  const toolUseId = call.outcome.pendingToolCalls[0]!.tool_use_id
  const prompt = nextTurnPrompt('deepseek', [
    { type: 'prompt', text: 'Weather in Oslo?' },
    ...call.persisted,
    { type: 'tool_result', text: 'sunny, 21 °C', is_error: false, tool_name: 'get_weather', tool_use_id: toolUseId, trust: 'customer_data' },
  ])
  const answer = await runRecorded('deepseek', [FIXTURES.deepseek.afterToolResult.response], { prompt, tools: [WEATHER] })
  const messages = only(answer.requests, 'deepseek request').body.messages as any[]
  const assistant = only(messages.filter((m) => m.role === 'assistant' && m.tool_calls), 'assistant messages with tool calls')
  expect(assistant.tool_calls.map((c: any) => c.id)).toEqual([toolUseId])
  // Claude left no reasoning: DeepSeek gets the empty reasoning its thinking mode requires.
  expect(assistant.reasoning_content).toBe('')
  expect(messages.at(-1)).toMatchObject({ role: 'tool', tool_call_id: toolUseId })
})

test("a call Claude made thinking, answered on deepseek-reasoner: Claude's thinking text goes as reasoning_content, its signature and redacted data not at all", async () => {
  const fixture = ANTHROPIC_THINKING_TOOL_CALL
  const call = await runRecorded('anthropic', [fixture.response], { prompt: userPrompt('Weather in Oslo?'), tools: [WEATHER], reasoningEffort: 'low', maxTokens: 4096 })
  const prompt = nextTurnPrompt('deepseek', [
    { type: 'prompt', text: 'Weather in Oslo?' },
    ...call.persisted,
    { type: 'tool_result', text: 'sunny, 21 °C', is_error: false, tool_name: 'get_weather', tool_use_id: fixture.toolUseId, trust: 'customer_data' },
  ])
  const answer = await runRecorded('deepseek', [FIXTURES.deepseek.afterToolResult.response], { prompt, tools: [WEATHER] })
  const body = only(answer.requests, 'deepseek request').body
  const assistant = only((body.messages as any[]).filter((m) => m.role === 'assistant' && m.tool_calls), 'assistant messages with tool calls')
  expect(assistant.reasoning_content).toBe(fixture.thinking)
  expect(JSON.stringify(body)).not.toContain(fixture.signature)
  expect(JSON.stringify(body)).not.toContain(fixture.redactedData)
})

test('strict never reaches DeepSeek (toolsForVendor); the call goes through', async () => {
  const t = await runRecorded('deepseek', [FIXTURES.deepseek.text.response], { tools: [{ ...WEATHER, strict: true }] })
  expect(t.frames.at(-1)!.event).toBe('done')
  const body = only(t.requests, 'deepseek request').body
  expect(body.tools).toHaveLength(1)
  expect(body.tools[0].function).not.toHaveProperty('strict')
})
