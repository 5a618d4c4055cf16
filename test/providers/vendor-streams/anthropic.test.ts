import { describe, expect, test } from 'vitest'
import { UpstreamError } from '../../../src/domain/errors.ts'
import { ANTHROPIC_OVERLOADED_FIRST, ANTHROPIC_OVERLOADED_MID, ANTHROPIC_USAGE_IN_MESSAGE_DELTA } from '../../e2e/vendor-fixtures/anthropic.ts'
import { ANTHROPIC_THINKING_ANSWER, ANTHROPIC_THINKING_EMPTY_LAST_DELTA, ANTHROPIC_THINKING_TOOL_CALL } from '../../e2e/vendor-fixtures/anthropic-thinking.ts'
import { FIXTURES } from '../../e2e/vendor-fixtures/index.ts'
import { expectThinkingReplayed } from '../../helpers/reasoning-replay.ts'
import { blocksOf, deltaText, nextTurnPrompt, PROMPT, runRecorded, userPrompt, WEATHER } from '../../helpers/recorded-vendor-run.ts'
import { only } from '../../helpers/vendor-cases.ts'

/**
 * Anthropic's Messages stream through @ai-sdk/anthropic and Parley's run path, in process: extended
 * thinking (signed, redacted), its replay on the next request, usage repeated in message_delta,
 * and the overloaded errors inside a 200 stream.
 */

const TOOL_PROMPT = 'What is the weather in Oslo right now?'

describe('extended thinking', () => {
  test('thinking + tool use: a signed reasoning block, a redacted one, the call; the next request carries both back unchanged before the tool_use', async () => {
    const fixture = ANTHROPIC_THINKING_TOOL_CALL
    const call = await runRecorded('anthropic', [fixture.response], { prompt: userPrompt(TOOL_PROMPT), tools: [WEATHER], reasoningEffort: 'low', maxTokens: 4096 })
    expect(call.frames.at(-1)!.event).toBe('done')
    expect(blocksOf(call.frames)).toEqual([
      { kind: 'reasoning', text: fixture.thinking },
      // Redacted thinking: a reasoning block with no text (hidden reasoning).
      { kind: 'reasoning', text: '' },
      { kind: 'tool_call', tool_name: 'get_weather', tool_use_id: fixture.toolUseId, text: fixture.arguments },
    ])
    expect(call.frames.at(-1)!.data).toMatchObject({ stop_reason: 'tool_use', pending_tool_calls: [{ tool_name: 'get_weather', tool_use_id: fixture.toolUseId }] })
    // The thinking budget (mapReasoningEffort: low is 2048) is asked for, on top of the answer's share.
    const first = only(call.requests, 'first request').body
    expect(first.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 })
    expect(first.max_tokens).toBe(4096)
    // The run records Anthropic's request id header, not the message id.
    expect(call.outcome.providerRequestId).toBe(fixture.requestId)
    // The replay data is in the ledger, never in a frame.
    expect(JSON.stringify(call.frames)).not.toContain(fixture.signature)
    expect(JSON.stringify(call.frames)).not.toContain(fixture.redactedData)
    expect(call.persisted.slice(0, 2)).toEqual([
      { type: 'reasoning', text: fixture.thinking, replay: { provider: 'anthropic', metadata: { anthropic: { signature: fixture.signature } } } },
      { type: 'reasoning', text: '', replay: { provider: 'anthropic', metadata: { anthropic: { redactedData: fixture.redactedData } } } },
    ])

    const prompt = nextTurnPrompt('anthropic', [
      { type: 'prompt', text: TOOL_PROMPT },
      ...call.persisted,
      { type: 'tool_result', text: 'sunny, 21 °C, light breeze', is_error: false, tool_name: 'get_weather', tool_use_id: fixture.toolUseId, trust: 'customer_data' },
    ])
    const answer = await runRecorded('anthropic', [ANTHROPIC_THINKING_ANSWER.response], { prompt, tools: [WEATHER], reasoningEffort: 'low', maxTokens: 4096 })
    expect(answer.frames.at(-1)!.event).toBe('done')
    expect(deltaText(answer.frames, 'text')).toBe(ANTHROPIC_THINKING_ANSWER.text)
    // Nothing was lost translating the replay: the package warned about no reasoning.
    expect(answer.frames.filter((f) => f.event === 'translation_warnings')).toEqual([])
    expect(answer.recordedWarnings).toEqual([])

    expectThinkingReplayed(only(answer.requests, 'second request').body, fixture, 'sunny, 21 °C, light breeze')
  })

  test('the signature goes only to the vendor that made it: the same ledger on OpenAI sends no Anthropic data, and the package’s own warnings are passed on', async () => {
    const fixture = ANTHROPIC_THINKING_TOOL_CALL
    const call = await runRecorded('anthropic', [fixture.response], { prompt: userPrompt('Weather in Oslo?'), tools: [WEATHER], reasoningEffort: 'low', maxTokens: 4096 })
    const prompt = nextTurnPrompt('openai', [
      { type: 'prompt', text: 'Weather in Oslo?' },
      ...call.persisted,
      { type: 'tool_result', text: 'sunny', is_error: false, tool_name: 'get_weather', tool_use_id: fixture.toolUseId, trust: 'customer_data' },
    ])
    const t = await runRecorded('openai', [FIXTURES.openai.afterToolResult.response], { prompt, tools: [WEATHER] })
    expect(t.frames.at(-1)!.event).toBe('done')
    const body = JSON.stringify(only(t.requests, 'openai request').body)
    expect(body).not.toContain(fixture.signature)
    expect(body).not.toContain(fixture.redactedData)
    // OpenAI's package skips reasoning it cannot replay, and says so: passed through as vendor warnings.
    const warnings = t.frames.filter((f) => f.event === 'translation_warnings').flatMap((f) => f.data.warnings as any[])
    const vendor = warnings.filter((w) => w.code === 'vendor_warning')
    expect(vendor.length).toBeGreaterThan(0)
    for (const w of vendor) {
      expect(w.details).toMatchObject({ provider: 'openai', type: 'other' })
      expect(w.message.length).toBeLessThanOrEqual(501)
    }
    // And recorded for the run's manifest, the same warnings.
    expect(t.recordedWarnings).toEqual(warnings)
  })

  test('an empty last thinking_delta before the signature: one signed reasoning block, then the answer; replayed whole and signed', async () => {
    const fixture = ANTHROPIC_THINKING_EMPTY_LAST_DELTA
    const t = await runRecorded('anthropic', [fixture.response], { reasoningEffort: 'low', maxTokens: 4096 })
    expect(only(t.requests, 'first request').body.thinking).toMatchObject({ type: 'enabled' })
    expect(blocksOf(t.frames)).toEqual([
      { kind: 'reasoning', text: fixture.thinking },
      { kind: 'text', text: fixture.text },
    ])
    expect(t.outcome).toMatchObject({ status: 'succeeded', stopReason: 'end_turn', pendingToolCalls: [] })
    expect(t.outcome.usage).toEqual({ input_tokens: fixture.usage.input_tokens, output_tokens: fixture.usage.output_tokens, reasoning_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0 })

    const next = await runRecorded('anthropic', [FIXTURES.anthropic.text.response], {
      prompt: nextTurnPrompt('anthropic', [{ type: 'prompt', text: PROMPT }, ...t.persisted, { type: 'prompt', text: 'And the capital of Sweden?' }]),
      reasoningEffort: 'low',
      maxTokens: 4096,
    })
    const body = only(next.requests, 'second request').body
    expect(body.messages.map((m: any) => m.role)).toEqual(['user', 'assistant', 'user'])
    expect(body.messages[1].content[0]).toEqual({ type: 'thinking', thinking: fixture.thinking, signature: fixture.signature })
    expect(body.messages[1].content[1]).toMatchObject({ type: 'text', text: fixture.text })
    // Nothing lost translating the replay: Anthropic's package would warn about unsigned reasoning.
    expect(next.frames.filter((f) => f.event === 'translation_warnings')).toEqual([])
  })
})

test('usage repeated whole in message_delta, differing from message_start: the run is billed for message_delta’s; the request id is the header’s', async () => {
  const fixture = ANTHROPIC_USAGE_IN_MESSAGE_DELTA
  const t = await runRecorded('anthropic', [fixture.response])
  expect(blocksOf(t.frames)).toEqual([{ kind: 'text', text: fixture.text }])
  expect(t.outcome).toMatchObject({ stopReason: 'end_turn', providerResponseId: fixture.responseId, providerRequestId: fixture.requestId, pendingToolCalls: [] })
  expect(t.outcome.usage).toEqual({
    input_tokens: fixture.finalUsage.input_tokens,
    output_tokens: fixture.finalUsage.output_tokens,
    reasoning_tokens: 0,
    cache_read_tokens: fixture.finalUsage.cache_read_input_tokens,
    cache_write_tokens: fixture.finalUsage.cache_creation_input_tokens,
  })
  expect(t.persisted).toEqual([{ type: 'message', text: fixture.text }])
})

describe('errors inside a 200 stream', () => {
  test('an overloaded_error as the first event: upstream_error before the stream, the run failed', async () => {
    const t = await runRecorded('anthropic', [ANTHROPIC_OVERLOADED_FIRST])
    expect(t.opening.ok).toBe(false)
    const error = (t.opening as { ok: false; error: UpstreamError }).error
    expect(error).toBeInstanceOf(UpstreamError)
    expect(error.code).toBe('upstream_error')
    expect(error.message).toContain('Overloaded')
    expect(t.outcome).toMatchObject({ status: 'failed', streamOpened: false, error: { code: 'upstream_error' } })
    expect(t.frames).toEqual([])
  })

  test('an overloaded_error mid-answer: an error frame naming the run, the partial text kept, the run failed', async () => {
    const t = await runRecorded('anthropic', [ANTHROPIC_OVERLOADED_MID.response])
    const last = t.frames.at(-1)!
    expect(last.event).toBe('error')
    expect(last.data).toMatchObject({ code: 'upstream_error', details: { run_id: expect.any(String) } })
    // The SDK hands Parley Anthropic's error object itself, not an APICallError.
    expect(last.data.message).toContain('Overloaded')
    expect(deltaText(t.frames, 'text')).toBe(ANTHROPIC_OVERLOADED_MID.partialText)
    expect(t.outcome).toMatchObject({ status: 'failed', streamOpened: true, usageLost: true })
    expect(t.outcome.error!.message).toContain('Overloaded')
    expect(t.persisted).toEqual([{ type: 'message', text: ANTHROPIC_OVERLOADED_MID.partialText }])
  })
})
