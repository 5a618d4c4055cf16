import type { LanguageModelV4StreamPart } from '@ai-sdk/provider'
import { describe, expect, it } from 'vitest'
import { endOfStream, initialRunStream, step, type Effect, type RunStreamState } from '../../../src/actors/run-stream/order-blocks.ts'
import { ANTHROPIC_CUT_AFTER_START, ANTHROPIC_CUT_BY_ERROR, ANTHROPIC_CUT_DROPPED, ANTHROPIC_USAGE_IN_MESSAGE_DELTA } from '../../e2e/vendor-fixtures/anthropic.ts'
import { ANTHROPIC_THINKING_EMPTY_LAST_DELTA } from '../../e2e/vendor-fixtures/anthropic-thinking.ts'
import { DEEPSEEK_USAGE_NULL_UNTIL_LAST } from '../../e2e/vendor-fixtures/deepseek.ts'
import { GOOGLE_FINISH_IN_OWN_CHUNK, GOOGLE_THOUGHT_SIGNATURE, GOOGLE_THOUGHT_SUMMARIES } from '../../e2e/vendor-fixtures/google.ts'
import type { Vendor } from '../../e2e/vendor-fixtures/index.ts'
import { MISTRAL_TOOL_CALLS_WITHOUT_INDEX } from '../../e2e/vendor-fixtures/mistral.ts'
import { XAI_USAGE_IN_COMPLETED } from '../../e2e/vendor-fixtures/xai.ts'
import type { ReplayResponse } from '../../e2e/vendor-fixtures/wire.ts'
import { recordParts } from './record-parts.ts'

/**
 * The run-stream reducer over today's vendor wire shapes (issue 19), as the real vendor packages
 * parse them: the lowest layer at which Parley reads usage, finishes and reasoning replay data.
 * test/e2e/vendor-wire-shapes.test.ts takes the same fixtures through the whole server.
 */

async function reduce(
  vendor: Vendor,
  response: ReplayResponse,
  options: { includeRawChunks?: boolean } = {},
): Promise<{ state: RunStreamState; effects: Effect[]; parts: LanguageModelV4StreamPart[] }> {
  const parts = await recordParts(vendor, response, options)
  let state = initialRunStream(vendor)
  const effects: Effect[] = []
  for (const part of parts) {
    const next = step(state, part)
    state = next.state
    effects.push(...next.effects)
  }
  const ended = endOfStream(state)
  return { state: ended.state, effects: [...effects, ...ended.effects], parts }
}

const persisted = (effects: Effect[]) => effects.flatMap((e) => (e.type === 'persist' ? [e.body as Record<string, unknown>] : []))

describe('usage is the last the vendor reported', () => {
  it('Anthropic: message_delta’s whole usage, not message_start’s', async () => {
    const fixture = ANTHROPIC_USAGE_IN_MESSAGE_DELTA
    const { state } = await reduce('anthropic', fixture.response)
    expect(state).toMatchObject({ finished: true, stopReason: 'end_turn', failure: null })
    expect(state.usage).toEqual({
      input_tokens: fixture.finalUsage.input_tokens,
      output_tokens: fixture.finalUsage.output_tokens,
      reasoning_tokens: 0,
      cache_read_tokens: fixture.finalUsage.cache_read_input_tokens,
      cache_write_tokens: fixture.finalUsage.cache_creation_input_tokens,
    })
  })

  it('xAI Responses: response.completed’s usage, whose output_tokens already count the reasoning', async () => {
    const c = XAI_USAGE_IN_COMPLETED.counts
    const { state } = await reduce('xai', XAI_USAGE_IN_COMPLETED.response)
    expect(state).toMatchObject({ finished: true, stopReason: 'end_turn' })
    expect(state.usage).toEqual({ input_tokens: c.input - c.cached, output_tokens: c.output, reasoning_tokens: c.reasoning, cache_read_tokens: c.cached, cache_write_tokens: 0 })
  })

  it('DeepSeek: `usage: null` until the last chunk is no usage; the last chunk’s counts are', async () => {
    const c = DEEPSEEK_USAGE_NULL_UNTIL_LAST.counts
    const { state } = await reduce('deepseek', DEEPSEEK_USAGE_NULL_UNTIL_LAST.response)
    expect(state).toMatchObject({ finished: true, stopReason: 'end_turn' })
    expect(state.usage).toEqual({ input_tokens: c.prompt - c.hit, output_tokens: c.completion, reasoning_tokens: c.reasoning, cache_read_tokens: c.hit, cache_write_tokens: 0 })
  })

  it('Gemini: finishReason alone in a last chunk ends the answer, with that chunk’s usage', async () => {
    const u = GOOGLE_FINISH_IN_OWN_CHUNK.usage
    const { state, effects } = await reduce('google', GOOGLE_FINISH_IN_OWN_CHUNK.response)
    expect(state).toMatchObject({ finished: true, stopReason: 'end_turn' })
    expect(state.usage).toEqual({ input_tokens: u.prompt - u.cached, output_tokens: u.candidates + u.thoughts, reasoning_tokens: u.thoughts, cache_read_tokens: u.cached, cache_write_tokens: 0 })
    expect(persisted(effects)).toEqual([{ type: 'message', text: GOOGLE_FINISH_IN_OWN_CHUNK.text }])
  })
})

describe('a stream cut before its final usage keeps what the vendor reported (issue 22)', () => {
  for (const [how, response] of [
    ['the connection drops', ANTHROPIC_CUT_DROPPED],
    ['an error event', ANTHROPIC_CUT_BY_ERROR],
  ] as const) {
    it(`Anthropic, ${how} after message_start: its input counts, from the raw chunks`, async () => {
      const start = ANTHROPIC_CUT_AFTER_START.startUsage
      const { state } = await reduce('anthropic', response, { includeRawChunks: true })
      expect(state).toMatchObject({ finished: false, usage: null })
      // (Here the drop comes as the bytes are parsed, and may take the parts not yet read with it.)
      expect(ANTHROPIC_CUT_AFTER_START.partialText.startsWith(state.emitted)).toBe(true)
      expect(state.reportedUsage).toEqual({
        input_tokens: start.input_tokens,
        cache_read_tokens: start.cache_read_input_tokens,
        cache_write_tokens: start.cache_creation_input_tokens,
      })
    })
  }

  it('a finished stream is billed for its finish’s usage, whatever the raw chunks said', async () => {
    const fixture = ANTHROPIC_USAGE_IN_MESSAGE_DELTA
    const { state } = await reduce('anthropic', fixture.response, { includeRawChunks: true })
    expect(state.usage).toMatchObject({ input_tokens: fixture.finalUsage.input_tokens, output_tokens: fixture.finalUsage.output_tokens })
  })
})

describe('reasoning keeps its replay data', () => {
  it('Anthropic: an empty last thinking_delta before the signature_delta: one reasoning block, signed', async () => {
    const fixture = ANTHROPIC_THINKING_EMPTY_LAST_DELTA
    const { effects, parts } = await reduce('anthropic', fixture.response)
    // As recorded: the empty delta reaches the reducer, without metadata, before the signed one.
    const deltas = parts.filter((p) => p.type === 'reasoning-delta')
    expect(deltas.map((p) => p.delta).join('')).toBe(fixture.thinking)
    expect(deltas.at(-2)).toEqual({ type: 'reasoning-delta', id: '0', delta: '' })
    expect(deltas.at(-1)).toEqual({ type: 'reasoning-delta', id: '0', delta: '', providerMetadata: { anthropic: { signature: fixture.signature } } })
    const [reasoning, message, ...rest] = persisted(effects)
    expect(reasoning).toEqual({ type: 'reasoning', text: fixture.thinking, replay: { provider: 'anthropic', metadata: { anthropic: { signature: fixture.signature } } } })
    expect(message).toMatchObject({ type: 'message', text: fixture.text })
    expect(rest).toEqual([])
  })

  it('Gemini: thought parts make one reasoning block with the thought part’s signature', async () => {
    const fixture = GOOGLE_THOUGHT_SUMMARIES
    const { state, effects } = await reduce('google', fixture.response)
    expect(state).toMatchObject({ finished: true, stopReason: 'end_turn' })
    const [reasoning, message, ...rest] = persisted(effects)
    expect(reasoning).toEqual({ type: 'reasoning', text: fixture.reasoning, replay: { provider: 'google', metadata: { google: { thoughtSignature: GOOGLE_THOUGHT_SIGNATURE } } } })
    // The answer's own signature (on the last, empty part) is not the reasoning's: it is never merged into it.
    expect(message).toMatchObject({ type: 'message', text: fixture.text })
    expect(rest).toEqual([])
  })
})

it('Mistral: tool calls without `index` are two calls, each persisted with its own arguments', async () => {
  const fixture = MISTRAL_TOOL_CALLS_WITHOUT_INDEX
  const { state, effects } = await reduce('mistral', fixture.response)
  expect(state).toMatchObject({ finished: true, stopReason: 'tool_use' })
  expect(persisted(effects)).toEqual(fixture.calls.map((call) => ({ type: 'tool_call', tool_name: 'get_weather', tool_use_id: call.id, arguments: call.arguments })))
})
