import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Decimal } from 'decimal.js'
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest'
import type { Usage } from '../../src/domain/pricing/usage.ts'
import { estimateTokens } from '../../src/domain/tokens/estimate-tokens.ts'
import { REPO_ROOT } from './server-process.ts'
import { completedBlocks, deltaText, postTurn, type SseFrame } from './turn-client.ts'
import { ANTHROPIC_CUT_AFTER_START, ANTHROPIC_CUT_BY_ERROR, ANTHROPIC_CUT_DROPPED, ANTHROPIC_TEXT_ID, ANTHROPIC_USAGE_IN_MESSAGE_DELTA } from './vendor-fixtures/anthropic.ts'
import { ANTHROPIC_THINKING_EMPTY_LAST_DELTA } from './vendor-fixtures/anthropic-thinking.ts'
import { DEEPSEEK_USAGE_NULL_UNTIL_LAST, DEEPSEEK_USAGE_NULL_UNTIL_LAST_ID } from './vendor-fixtures/deepseek.ts'
import {
  GOOGLE_ANSWER_SIGNATURE,
  GOOGLE_FINISH_IN_OWN_CHUNK,
  GOOGLE_FINISH_IN_OWN_CHUNK_ID,
  GOOGLE_THOUGHT_SIGNATURE,
  GOOGLE_THOUGHT_SUMMARIES,
  GOOGLE_THOUGHTS_RESPONSE_ID,
} from './vendor-fixtures/google.ts'
import type { Vendor } from './vendor-fixtures/index.ts'
import { MISTRAL_TOOL_CALLS_WITHOUT_INDEX } from './vendor-fixtures/mistral.ts'
import { XAI_USAGE_IN_COMPLETED, XAI_USAGE_IN_COMPLETED_ID } from './vendor-fixtures/xai.ts'
import type { RecordedRequest } from './vendor-replay-server.ts'
import { startVendorServer, VENDOR_MODELS, type VendorServer } from './vendor-server.ts'

/**
 * The vendors' wire shapes of today (issue 19), each through a whole turn in the real server
 * process, with every `<VENDOR>_BASE_URL` on the loopback replay server: what the turn streams,
 * what the chat's history keeps, and the usage and cost the run records. Each fixture is a shape
 * the older fixtures do not show: usage repeated whole in Anthropic's message_delta, an empty last
 * thinking_delta, Gemini's thought summaries and its finish in a chunk of its own, xAI's usage
 * on response.completed with reasoning already in its output tokens, Mistral's tool calls without `index`, DeepSeek's `usage: null`.
 */

const PROMPT = 'What is the capital of Norway? One sentence, please.'
const WEATHER = {
  name: 'get_weather',
  description: 'Current weather for a city.',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
}
const DELTA_KIND: Record<string, string> = { text: 'text', reasoning: 'reasoning', refusal: 'refusal', tool_call: 'tool_input' }

const only = <T>(items: T[], what: string): T => {
  expect(items, what).toHaveLength(1)
  return items[0]!
}

/** The catalogue as shipped, read here apart from the server: the rates the cost must come from. */
const CATALOGUE = JSON.parse(readFileSync(join(REPO_ROOT, 'catalogue/models.json'), 'utf8')) as { models: any[] }

/**
 * What the run must cost, worked out here with decimal arithmetic from the catalogue's rates (per
 * million tokens): each kind of token at its rate, reasoning not again (it is part of output), times
 * (1 + markup/100), rounded once, half to even, to money's 10 places. The fixtures' contexts are far
 * below every tier's threshold, and the test says so, so the base rates are the ones that apply.
 */
function expectedCost(model: string, usage: Usage, markupPercent: string): string {
  const entry = CATALOGUE.models.find((m) => m.name === model)
  if (!entry) throw new Error(`no catalogue model ${model}`)
  const context = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
  for (const tier of entry.tiers ?? []) expect(context, `tier ${tier.id} of ${model} would apply`).toBeLessThanOrEqual(tier.min)
  const rate = (kind: string) => new Decimal(entry.rates[kind] ?? 0)
  const provider = rate('input')
    .mul(usage.input_tokens)
    .plus(rate('output').mul(usage.output_tokens))
    .plus(rate('cache_read').mul(usage.cache_read_tokens))
    .plus(rate('cache_write').mul(usage.cache_write_tokens))
    .div(1_000_000)
  return provider
    .mul(new Decimal(markupPercent).div(100).plus(1))
    .toDecimalPlaces(10, Decimal.ROUND_HALF_EVEN)
    .toFixed(10)
}

/**
 * The stream's grammar (docs/guide/streaming.md): `run`, `config_warnings`, `translation_warnings`
 * (again with the vendor's own, before any block), blocks one at a time, each its start, deltas of
 * its kind and stop, then `done`.
 */
function expectWellFormed(frames: SseFrame[]): void {
  const events = frames.map((f) => f.event)
  const trace = events.join(',')
  expect(events.slice(0, 3), trace).toEqual(['run', 'config_warnings', 'translation_warnings'])
  expect(events.at(-1), JSON.stringify(frames.at(-1)?.data)).toBe('done')
  let open: string | null = null
  let started = false
  for (const f of frames.slice(3, -1)) {
    if (f.event === 'translation_warnings') expect(started, `translation_warnings after content: ${trace}`).toBe(false)
    else if (f.event === 'block_start') {
      expect(open, `block_start inside a block: ${trace}`).toBeNull()
      open = f.data.kind
      started = true
    } else if (f.event === 'delta') {
      expect(open, `delta outside a block: ${trace}`).not.toBeNull()
      expect(f.data.kind, trace).toBe(DELTA_KIND[open!])
    } else if (f.event === 'block_stop') {
      expect(open, `block_stop without a block: ${trace}`).not.toBeNull()
      open = null
    } else throw new Error(`unexpected ${f.event} frame inside the stream: ${trace}`)
  }
  expect(open, trace).toBeNull()
}

describe("today's vendor wire shapes through the real server process (issue 19)", () => {
  let vendors: VendorServer

  /** The chat's history as served: the raw text (to look for what must not be there) and its parts. */
  const history = async (chatId: string) => {
    const res = await vendors.api(`/api/v1/chats/${chatId}/history`)
    expect(res.status, res.text).toBe(200)
    return { text: res.text, parts: (res.json().data as any[]).map((p) => p.part) }
  }
  /** A turn that streams, well formed, to its `done`, with the vendor requests it caused. */
  const turn = async (vendor: Vendor, chatId: string, body: Record<string, unknown>) => {
    const before = vendors.replay.requestsTo(vendor).length
    const answer = await postTurn(vendors.server.url, vendors.devKey, chatId, { model: VENDOR_MODELS[vendor], ...body })
    if (!answer.ok) throw new Error(`expected a stream, got HTTP ${answer.status}: ${answer.text}\n${vendors.server.stderr()}`)
    expect(await answer.closed).toBe('end')
    expectWellFormed(answer.frames)
    return {
      frames: answer.frames,
      runId: answer.frames[0]!.data.run_id as string,
      done: answer.frames.at(-1)!.data,
      vendorRequests: vendors.replay.requestsTo(vendor).slice(before) as RecordedRequest[],
    }
  }
  /**
   * The run agrees with the stream's `done` and with `usage`: succeeded, that usage exactly, and a
   * cost of the catalogue's rates for it with the run's markup.
   */
  const expectBilled = async (runId: string, done: any, model: string, usage: Usage) => {
    const run = await vendors.getRun(runId)
    expect(run).toMatchObject({ id: runId, model, status: 'succeeded', usage })
    expect(done.usage).toEqual(usage)
    expect(run.manifest.markup_percent).toMatch(/^\d+(\.\d+)?$/)
    const cost = expectedCost(model, usage, run.manifest.markup_percent)
    expect(new Decimal(run.cost).toFixed(10)).toBe(cost)
    expect(new Decimal(done.cost).toFixed(10)).toBe(cost)
    expect(new Decimal(cost).greaterThan(0)).toBe(true)
    return run
  }

  beforeAll(async () => {
    vendors = await startVendorServer({ name: 'wire-shapes' })
  })
  afterEach(() => vendors?.replay.clearQueues())
  afterAll(() => vendors?.stop())

  describe('Anthropic', () => {
    test('usage repeated whole in message_delta, differing from message_start: the run is billed for message_delta’s', async () => {
      const fixture = ANTHROPIC_USAGE_IN_MESSAGE_DELTA
      // The fixture is worth something only while every count differs.
      for (const [count, value] of Object.entries(fixture.startUsage)) {
        expect(fixture.finalUsage[count as keyof typeof fixture.finalUsage], count).not.toBe(value)
      }
      const chatId = await vendors.newChat()
      vendors.replay.respondNext('anthropic', fixture.response)
      const t = await turn('anthropic', chatId, { input: [{ type: 'prompt', text: PROMPT }] })

      expect(completedBlocks(t.frames)).toEqual([{ kind: 'text', text: fixture.text }])
      expect(t.done).toMatchObject({ stop_reason: 'end_turn', provider_response_id: fixture.responseId, pending_tool_calls: [] })
      // Anthropic's input_tokens are the fresh ones; the cache counts come beside them.
      const run = await expectBilled(t.runId, t.done, VENDOR_MODELS.anthropic, {
        input_tokens: fixture.finalUsage.input_tokens,
        output_tokens: fixture.finalUsage.output_tokens,
        reasoning_tokens: 0,
        cache_read_tokens: fixture.finalUsage.cache_read_input_tokens,
        cache_write_tokens: fixture.finalUsage.cache_creation_input_tokens,
      })
      expect(run.provider_request_id).toBe(fixture.requestId)
      expect((await history(chatId)).parts).toEqual([
        { type: 'prompt', text: PROMPT },
        { type: 'message', text: fixture.text },
      ])
    })

    for (const [how, response] of [
      ['the connection drops', ANTHROPIC_CUT_DROPPED],
      ['an error event ends it', ANTHROPIC_CUT_BY_ERROR],
    ] as const) {
      test(`a stream cut after message_start (${how}): billed for message_start's input counts, the output estimated (issue 22)`, async () => {
        const fixture = ANTHROPIC_CUT_AFTER_START
        const chatId = await vendors.newChat()
        vendors.replay.respondNext('anthropic', response)
        const answer = await postTurn(vendors.server.url, vendors.devKey, chatId, { model: VENDOR_MODELS.anthropic, input: [{ type: 'prompt', text: PROMPT }] })
        if (!answer.ok) throw new Error(`expected a stream, got HTTP ${answer.status}: ${answer.text}`)
        expect(await answer.closed).toBe('end')
        const runId = answer.frames[0]!.data.run_id as string
        expect(answer.frames.at(-1)).toMatchObject({ event: 'error', data: { code: 'upstream_error', details: { run_id: runId } } })
        const streamed = deltaText(answer.frames, 'text')
        expect(fixture.partialText.startsWith(streamed)).toBe(true)

        const run = await vendors.getRun(runId)
        // Still reported as lost (the output is an estimate), but billed for the vendor's input.
        expect(run).toMatchObject({ status: 'failed', usage: null })
        const billed: Usage = {
          input_tokens: fixture.startUsage.input_tokens,
          output_tokens: estimateTokens(streamed),
          reasoning_tokens: 0,
          cache_read_tokens: fixture.startUsage.cache_read_input_tokens,
          cache_write_tokens: fixture.startUsage.cache_creation_input_tokens,
        }
        const report = await vendors.api('/api/v1/usage?range=24h&group_by=run')
        expect(report.status, report.text).toBe(200)
        const row = only((report.json().rows as any[]).filter((r) => r.group.run_id === runId), 'the run’s usage row')
        expect(row).toMatchObject({ runs: 1, ...billed })
        const cost = expectedCost(VENDOR_MODELS.anthropic, billed, run.manifest.markup_percent)
        expect(new Decimal(run.cost).toFixed(10)).toBe(cost)
      })
    }

    test('thinking whose last thinking_delta is empty, then its signature: stored signed, kept out of history, replayed on the next turn', async () => {
      const fixture = ANTHROPIC_THINKING_EMPTY_LAST_DELTA
      const chatId = await vendors.newChat()
      vendors.replay.respondNext('anthropic', fixture.response)
      const t = await turn('anthropic', chatId, { input: [{ type: 'prompt', text: PROMPT }], reasoning_effort: 'low' })

      expect(only(t.vendorRequests, 'first request').body.thinking).toMatchObject({ type: 'enabled' })
      // One reasoning block, not ended early by the empty delta, then the answer.
      expect(completedBlocks(t.frames)).toEqual([
        { kind: 'reasoning', text: fixture.thinking },
        { kind: 'text', text: fixture.text },
      ])
      expect(t.done).toMatchObject({ stop_reason: 'end_turn', pending_tool_calls: [] })
      await expectBilled(t.runId, t.done, VENDOR_MODELS.anthropic, {
        input_tokens: fixture.usage.input_tokens,
        output_tokens: fixture.usage.output_tokens,
        reasoning_tokens: 0,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
      })
      const first = await history(chatId)
      expect(first.parts).toEqual([
        { type: 'prompt', text: PROMPT },
        { type: 'reasoning', text: fixture.thinking },
        { type: 'message', text: fixture.text },
      ])
      // The signature is replay data: never served in history (decision 017).
      expect(first.text).not.toContain(fixture.signature)

      // The next turn (the default text answer) sends the thinking block back whole and signed.
      const next = await turn('anthropic', chatId, { input: [{ type: 'prompt', text: 'And the capital of Sweden?' }], reasoning_effort: 'low' })
      const body = only(next.vendorRequests, 'second request').body
      expect(body.messages.map((m: any) => m.role)).toEqual(['user', 'assistant', 'user'])
      expect(body.messages[1].content[0]).toEqual({ type: 'thinking', thinking: fixture.thinking, signature: fixture.signature })
      expect(body.messages[1].content[1]).toMatchObject({ type: 'text', text: fixture.text })
      expect(next.done.provider_response_id).toBe(ANTHROPIC_TEXT_ID)
      // Nothing lost translating the replay: Anthropic's package would warn about unsigned reasoning.
      expect(next.frames.filter((f) => f.event === 'translation_warnings').flatMap((f) => f.data.warnings)).toEqual([])
    })
  })

  describe('Google (Gemini)', () => {
    test('thought summaries: a reasoning block in the stream and history, signed in the ledger, replayed with its signature; finishReason in a last chunk of its own', async () => {
      const fixture = GOOGLE_THOUGHT_SUMMARIES
      const chatId = await vendors.newChat()
      vendors.replay.respondNext('google', fixture.response)
      const t = await turn('google', chatId, { input: [{ type: 'prompt', text: PROMPT }], reasoning_effort: 'medium' })

      // Thought summaries are asked for, so Gemini streams them.
      expect(only(t.vendorRequests, 'first request').body.generationConfig.thinkingConfig).toMatchObject({ includeThoughts: true })
      expect(completedBlocks(t.frames)).toEqual([
        { kind: 'reasoning', text: fixture.reasoning },
        { kind: 'text', text: fixture.text },
      ])
      expect(t.done).toMatchObject({ stop_reason: 'end_turn', provider_response_id: GOOGLE_THOUGHTS_RESPONSE_ID })
      // Output is the answer plus the thinking; the summary shown is part of the thinking's count.
      await expectBilled(t.runId, t.done, VENDOR_MODELS.google, {
        input_tokens: fixture.usage.prompt,
        output_tokens: fixture.usage.candidates + fixture.usage.thoughts,
        reasoning_tokens: fixture.usage.thoughts,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
      })
      const first = await history(chatId)
      expect(first.parts).toEqual([
        { type: 'prompt', text: PROMPT },
        { type: 'reasoning', text: fixture.reasoning },
        { type: 'message', text: fixture.text },
      ])
      expect(first.text).not.toContain(GOOGLE_THOUGHT_SIGNATURE)
      expect(first.text).not.toContain(GOOGLE_ANSWER_SIGNATURE)

      // The next turn sends the thought back to Gemini as a thought part with its signature.
      const next = await turn('google', chatId, { input: [{ type: 'prompt', text: 'And the capital of Sweden?' }], reasoning_effort: 'medium' })
      const contents = only(next.vendorRequests, 'second request').body.contents
      expect(contents.map((c: any) => c.role)).toEqual(['user', 'model', 'user'])
      expect(contents[1].parts[0]).toEqual({ text: fixture.reasoning, thought: true, thoughtSignature: GOOGLE_THOUGHT_SIGNATURE })
      expect(contents[1].parts[1]).toMatchObject({ text: fixture.text })
    })

    test('finishReason alone in a last chunk with an empty text part: the answer ends there, with that chunk’s usage', async () => {
      const fixture = GOOGLE_FINISH_IN_OWN_CHUNK
      const chatId = await vendors.newChat()
      vendors.replay.respondNext('google', fixture.response)
      const t = await turn('google', chatId, { input: [{ type: 'prompt', text: PROMPT }] })

      // The empty part makes no block of its own and adds nothing to the text.
      expect(completedBlocks(t.frames)).toEqual([{ kind: 'text', text: fixture.text }])
      expect(t.done).toMatchObject({ stop_reason: 'end_turn', provider_response_id: GOOGLE_FINISH_IN_OWN_CHUNK_ID })
      await expectBilled(t.runId, t.done, VENDOR_MODELS.google, {
        input_tokens: fixture.usage.prompt - fixture.usage.cached,
        output_tokens: fixture.usage.candidates + fixture.usage.thoughts,
        reasoning_tokens: fixture.usage.thoughts,
        cache_read_tokens: fixture.usage.cached,
        cache_write_tokens: 0,
      })
      expect((await history(chatId)).parts).toEqual([
        { type: 'prompt', text: PROMPT },
        { type: 'message', text: fixture.text },
      ])
    })
  })

  test('xAI Responses: usage on response.completed, whose output_tokens already count the reasoning', async () => {
    const fixture = XAI_USAGE_IN_COMPLETED
    const chatId = await vendors.newChat()
    vendors.replay.respondNext('xai', fixture.response)
    const t = await turn('xai', chatId, { input: [{ type: 'prompt', text: PROMPT }] })

    expect(completedBlocks(t.frames)).toEqual([
      { kind: 'reasoning', text: fixture.reasoning },
      { kind: 'text', text: fixture.text },
    ])
    expect(t.done).toMatchObject({ stop_reason: 'end_turn', provider_response_id: XAI_USAGE_IN_COMPLETED_ID })
    // Not output_tokens + reasoning_tokens: the Responses API's output already holds the reasoning.
    const c = fixture.counts
    await expectBilled(t.runId, t.done, VENDOR_MODELS.xai, {
      input_tokens: c.input - c.cached,
      output_tokens: c.output,
      reasoning_tokens: c.reasoning,
      cache_read_tokens: c.cached,
      cache_write_tokens: 0,
    })
    expect((await history(chatId)).parts).toEqual([
      { type: 'prompt', text: PROMPT },
      { type: 'reasoning', text: fixture.reasoning },
      { type: 'message', text: fixture.text },
    ])
  })

  test('Mistral: two tool calls with no `index`, told apart by id: two tool_call blocks, both pending, both sent back as two calls', async () => {
    const fixture = MISTRAL_TOOL_CALLS_WITHOUT_INDEX
    const chatId = await vendors.newChat()
    vendors.replay.respondNext('mistral', fixture.response)
    const t = await turn('mistral', chatId, { input: [{ type: 'prompt', text: 'Weather in Oslo and in Bergen?' }], tools: [WEATHER] })

    expect(completedBlocks(t.frames)).toEqual(
      fixture.calls.map((call) => ({ kind: 'tool_call', tool_name: 'get_weather', tool_use_id: call.id, text: call.arguments })),
    )
    expect(deltaText(t.frames, 'text')).toBe('')
    expect(t.done).toMatchObject({
      stop_reason: 'tool_use',
      pending_tool_calls: fixture.calls.map((call) => ({ tool_name: 'get_weather', tool_use_id: call.id })),
    })
    await expectBilled(t.runId, t.done, VENDOR_MODELS.mistral, {
      input_tokens: fixture.usage.prompt_tokens,
      output_tokens: fixture.usage.completion_tokens,
      reasoning_tokens: 0,
      cache_read_tokens: 0,
      cache_write_tokens: 0,
    })
    expect((await history(chatId)).parts.slice(1)).toEqual(
      fixture.calls.map((call) => ({ type: 'tool_call', arguments: call.arguments, tool_name: 'get_weather', tool_use_id: call.id })),
    )

    // Both results answer their own call; Mistral is sent the two calls, each with its id.
    const results = await turn('mistral', chatId, {
      input: fixture.calls.map((call, i) => ({ type: 'tool_result', tool_use_id: call.id, tool_name: 'get_weather', text: i === 0 ? 'sunny' : 'rain' })),
      tools: [WEATHER],
    })
    expect(results.frames[0]!.data.closed_tool_calls).toEqual(fixture.calls.map((call) => call.id))
    const messages = only(results.vendorRequests, 'second request').body.messages
    const calls = messages.filter((m: any) => m.role === 'assistant').flatMap((m: any) => m.tool_calls ?? [])
    expect(calls.map((call: any) => [call.id, JSON.parse(call.function.arguments)])).toEqual([
      [fixture.calls[0]!.id, { city: 'Oslo' }],
      [fixture.calls[1]!.id, { city: 'Bergen' }],
    ])
    expect(messages.filter((m: any) => m.role === 'tool').map((m: any) => m.tool_call_id)).toEqual(fixture.calls.map((call) => call.id))
  })

  test('DeepSeek: `usage: null` on every chunk until the last: the run has the last chunk’s usage', async () => {
    const fixture = DEEPSEEK_USAGE_NULL_UNTIL_LAST
    const chatId = await vendors.newChat()
    vendors.replay.respondNext('deepseek', fixture.response)
    const t = await turn('deepseek', chatId, { input: [{ type: 'prompt', text: PROMPT }] })

    expect(completedBlocks(t.frames)).toEqual([
      { kind: 'reasoning', text: fixture.reasoning },
      { kind: 'text', text: fixture.text },
    ])
    expect(t.done).toMatchObject({ stop_reason: 'end_turn', provider_response_id: DEEPSEEK_USAGE_NULL_UNTIL_LAST_ID })
    // DeepSeek's completion_tokens include the reasoning; cache hits are apart from fresh input.
    const c = fixture.counts
    await expectBilled(t.runId, t.done, VENDOR_MODELS.deepseek, {
      input_tokens: c.prompt - c.hit,
      output_tokens: c.completion,
      reasoning_tokens: c.reasoning,
      cache_read_tokens: c.hit,
      cache_write_tokens: 0,
    })
    expect((await history(chatId)).parts).toEqual([
      { type: 'prompt', text: PROMPT },
      { type: 'reasoning', text: fixture.reasoning },
      { type: 'message', text: fixture.text },
    ])
  })
})
