import { expect, test } from 'vitest'
import { FIXTURES } from '../../e2e/vendor-fixtures/index.ts'
import { OPENAI_REASONING_TOOL_CALL } from '../../e2e/vendor-fixtures/openai-reasoning.ts'
import { expectEncryptedReasoningReplayed } from '../../helpers/reasoning-replay.ts'
import { nextTurnPrompt, runRecorded, userPrompt, WEATHER } from '../../helpers/recorded-vendor-run.ts'
import { only } from '../../helpers/vendor-cases.ts'

/**
 * OpenAI's Responses stream through @ai-sdk/openai and Parley's run path, in process: the request
 * options executeRun adds (store: false, the chat as prompt_cache_key) and the encrypted reasoning
 * sent back before its function_call (decision 026).
 */

test('the chat keys the vendor’s prompt cache (prompt_cache_key)', async () => {
  const chatId = '0192a6f0-0000-7000-8000-00000000cafe'
  const t = await runRecorded('openai', [FIXTURES.openai.text.response], { chatId })
  expect(only(t.requests, 'vendor calls').body.prompt_cache_key).toBe(chatId)
})

test('gpt-5: the reasoning item goes back with its id and encrypted content before its function_call, with store: false', async () => {
  const fixture = OPENAI_REASONING_TOOL_CALL
  const call = await runRecorded('openai', [fixture.response], { prompt: userPrompt('Weather in Oslo?'), tools: [WEATHER] })
  expect(call.outcome.pendingToolCalls.map(({ tool_name, tool_use_id }) => ({ tool_name, tool_use_id }))).toEqual([{ tool_name: 'get_weather', tool_use_id: fixture.callId }])
  const first = only(call.requests, 'first request').body
  // Parley keeps the history: OpenAI keeps nothing and returns the reasoning encrypted.
  expect(first.store).toBe(false)
  expect(first.include).toContain('reasoning.encrypted_content')
  expect(JSON.stringify(call.frames)).not.toContain(fixture.encryptedContent)
  expect(call.persisted[0]).toMatchObject({
    type: 'reasoning',
    text: '',
    replay: { provider: 'openai', metadata: { openai: { itemId: fixture.reasoningItemId, reasoningEncryptedContent: fixture.encryptedContent } } },
  })

  const prompt = nextTurnPrompt('openai', [
    { type: 'prompt', text: 'Weather in Oslo?' },
    ...call.persisted,
    { type: 'tool_result', text: 'sunny, 21 °C', is_error: false, tool_name: 'get_weather', tool_use_id: fixture.callId, trust: 'customer_data' },
  ])
  const answer = await runRecorded('openai', [FIXTURES.openai.afterToolResult.response], { prompt, tools: [WEATHER] })
  expectEncryptedReasoningReplayed(only(answer.requests, 'request after the tool result').body, fixture)
  // The package skipped nothing.
  expect(answer.frames.filter((f) => f.event === 'translation_warnings')).toEqual([])
})
