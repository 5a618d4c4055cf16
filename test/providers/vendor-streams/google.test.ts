import { expect, test } from 'vitest'
import { GOOGLE_ANSWER_SIGNATURE, GOOGLE_THOUGHT_SIGNATURE, GOOGLE_THOUGHT_SUMMARIES, GOOGLE_THOUGHTS_RESPONSE_ID } from '../../e2e/vendor-fixtures/google.ts'
import { GEMINI_SIGNED_ANSWER, GEMINI_SIGNED_TOOL_CALL } from '../../e2e/vendor-fixtures/google-signatures.ts'
import { blocksOf, nextTurnPrompt, PROMPT, runRecorded, userPrompt, WEATHER } from '../../helpers/recorded-vendor-run.ts'

/**
 * Gemini's stream through @ai-sdk/google and Parley's run path, in process: thought summaries as a
 * reasoning block, and the thought signatures on thoughts, calls and texts sent back on the next
 * request (decision 026).
 */

const only = <T>(items: T[], what: string): T => {
  expect(items, what).toHaveLength(1)
  return items[0]!
}
const modelParts = (body: any) => body.contents.filter((c: any) => c.role === 'model').flatMap((c: any) => c.parts)

test('thought summaries: a reasoning block, then the answer; usage counts the thinking as output; the thought goes back signed', async () => {
  const fixture = GOOGLE_THOUGHT_SUMMARIES
  const t = await runRecorded('google', [fixture.response], { reasoningEffort: 'medium', maxTokens: 16_384 })
  // Thought summaries are asked for, so Gemini streams them; Gemini 3.8 Flash takes a thinking level, not a budget.
  const first = only(t.requests, 'first request').body
  expect(first.generationConfig.thinkingConfig).toMatchObject({ includeThoughts: true })
  expect(first.generationConfig.thinkingConfig.thinkingLevel).toBeDefined()
  expect(first.generationConfig.maxOutputTokens).toBe(16_384)
  expect(blocksOf(t.frames)).toEqual([
    { kind: 'reasoning', text: fixture.reasoning },
    { kind: 'text', text: fixture.text },
  ])
  expect(t.outcome).toMatchObject({ stopReason: 'end_turn', providerResponseId: GOOGLE_THOUGHTS_RESPONSE_ID })
  expect(t.outcome.usage).toEqual({
    input_tokens: fixture.usage.prompt,
    output_tokens: fixture.usage.candidates + fixture.usage.thoughts,
    reasoning_tokens: fixture.usage.thoughts,
    cache_read_tokens: 0,
    cache_write_tokens: 0,
  })
  expect(JSON.stringify(t.frames)).not.toContain(GOOGLE_THOUGHT_SIGNATURE)
  expect(JSON.stringify(t.frames)).not.toContain(GOOGLE_ANSWER_SIGNATURE)

  const next = await runRecorded('google', [GEMINI_SIGNED_ANSWER.response], {
    prompt: nextTurnPrompt('google', [{ type: 'prompt', text: PROMPT }, ...t.persisted, { type: 'prompt', text: 'And the capital of Sweden?' }]),
    reasoningEffort: 'medium',
    maxTokens: 16_384,
  })
  const contents = only(next.requests, 'second request').body.contents
  expect(contents.map((c: any) => c.role)).toEqual(['user', 'model', 'user'])
  expect(contents[1].parts[0]).toEqual({ text: fixture.reasoning, thought: true, thoughtSignature: GOOGLE_THOUGHT_SIGNATURE })
  expect(contents[1].parts[1]).toMatchObject({ text: fixture.text })
})

test("the functionCall's thoughtSignature goes back on the functionCall part, and a text's on its text part", async () => {
  const call = await runRecorded('google', [GEMINI_SIGNED_TOOL_CALL.response], { prompt: userPrompt('Weather in Oslo?'), tools: [WEATHER], reasoningEffort: 'low' })
  const toolUseId = call.outcome.pendingToolCalls[0]!.tool_use_id
  expect(JSON.stringify(call.frames)).not.toContain(GEMINI_SIGNED_TOOL_CALL.signature)

  const afterCall = [
    { type: 'prompt' as const, text: 'Weather in Oslo?' },
    ...call.persisted,
    { type: 'tool_result' as const, text: 'sunny, 21 °C', is_error: false, tool_name: 'get_weather', tool_use_id: toolUseId, trust: 'customer_data' as const },
  ]
  const answer = await runRecorded('google', [GEMINI_SIGNED_ANSWER.response], { prompt: nextTurnPrompt('google', afterCall), tools: [WEATHER], reasoningEffort: 'low' })
  const sent = only(answer.requests, 'request after the tool result').body
  expect(modelParts(sent).find((p: any) => p.functionCall)).toEqual({
    functionCall: { id: toolUseId, name: 'get_weather', args: GEMINI_SIGNED_TOOL_CALL.arguments },
    thoughtSignature: GEMINI_SIGNED_TOOL_CALL.signature,
  })
  // Nothing was lost: no warning from the package about a missing signature.
  expect(answer.frames.filter((f) => f.event === 'translation_warnings')).toEqual([])
  expect(JSON.stringify(answer.frames)).not.toContain(GEMINI_SIGNED_ANSWER.signature)

  // The next turn sends the answer's text back with its signature, the call's still on its call.
  const next = await runRecorded('google', [GEMINI_SIGNED_ANSWER.response], {
    prompt: nextTurnPrompt('google', [...afterCall, ...answer.persisted, { type: 'prompt', text: 'Thanks!' }]),
    tools: [WEATHER],
  })
  const nextParts = modelParts(only(next.requests, 'next request').body)
  expect(nextParts).toContainEqual({ text: GEMINI_SIGNED_ANSWER.text, thoughtSignature: GEMINI_SIGNED_ANSWER.signature })
  expect(nextParts.find((p: any) => p.functionCall).thoughtSignature).toBe(GEMINI_SIGNED_TOOL_CALL.signature)
})
