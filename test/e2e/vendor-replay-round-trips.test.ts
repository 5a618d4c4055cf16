import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest'
import { expectEncryptedReasoningReplayed } from '../helpers/reasoning-replay.ts'
import { only } from '../helpers/vendor-cases.ts'
import { postTurn, type SseFrame } from './turn-client.ts'
import { ANTHROPIC_THINKING_TOOL_CALL } from './vendor-fixtures/anthropic-thinking.ts'
import { GEMINI_SIGNED_ANSWER, GEMINI_SIGNED_TOOL_CALL } from './vendor-fixtures/google-signatures.ts'
import { FIXTURES, type Vendor } from './vendor-fixtures/index.ts'
import { OPENAI_REASONING_TOOL_CALL } from './vendor-fixtures/openai-reasoning.ts'
import type { RecordedRequest } from './vendor-replay-server.ts'
import { startVendorServer, type VendorServer } from './vendor-server.ts'

/**
 * Vendor replay data between tool steps (issue 19, decision 026), through the real server process
 * and the loopback replay server: what the next request to the vendor carries of the signatures
 * and encrypted reasoning the previous answer came with, what DeepSeek is sent for a call another
 * model made, and that none of it reaches the customer.
 */

const WEATHER = {
  name: 'get_weather',
  description: 'Current weather for a city.',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
}
const translationWarnings = (frames: SseFrame[]) => frames.filter((f) => f.event === 'translation_warnings').flatMap((f) => f.data.warnings as any[])

describe('vendor replay data between tool steps (decision 026)', () => {
  let vendors: VendorServer

  /** A turn on `model` streamed to its end, with the requests it made to `vendor`. */
  const turn = async (vendor: Vendor, model: string, chatId: string, body: Record<string, unknown>) => {
    const before = vendors.replay.requestsTo(vendor).length
    const answer = await postTurn(vendors.server.url, vendors.devKey, chatId, { model, tools: [WEATHER], ...body })
    if (!answer.ok) throw new Error(`expected a stream, got HTTP ${answer.status}: ${answer.text}\n${vendors.server.stderr()}`)
    expect(await answer.closed).toBe('end')
    const last = answer.frames.at(-1)!
    expect(last.event, JSON.stringify(last.data)).toBe('done')
    return { frames: answer.frames, raw: JSON.stringify(answer.frames), last, vendorRequests: vendors.replay.requestsTo(vendor).slice(before) as RecordedRequest[] }
  }
  const toolResult = (toolUseId: string) => ({ input: [{ type: 'tool_result', tool_use_id: toolUseId, tool_name: 'get_weather', text: 'sunny, 21 °C' }] })
  /** The chat's history as served, and whether any of `secrets` is in it. */
  const expectHistoryWithout = async (chatId: string, secrets: string[]) => {
    const history = await vendors.api(`/api/v1/chats/${chatId}/history?include=full`)
    expect(history.status, history.text).toBe(200)
    for (const secret of secrets) expect(history.text).not.toContain(secret)
    for (const part of history.json().data) expect(part.part).not.toHaveProperty('replay')
  }

  beforeAll(async () => {
    vendors = await startVendorServer({ name: 'replay' })
  })
  afterEach(() => vendors?.replay.clearQueues())
  afterAll(() => vendors?.stop())

  test("Gemini: the functionCall's thoughtSignature goes back on the functionCall part, and a text's on its text part", async () => {
    const chatId = await vendors.newChat()
    vendors.replay.respondNext('google', GEMINI_SIGNED_TOOL_CALL.response)
    const call = await turn('google', 'google/gemini-3.8-flash', chatId, { input: [{ type: 'prompt', text: 'Weather in Oslo?' }], reasoning_effort: 'low' })
    const toolUseId = call.last.data.pending_tool_calls[0].tool_use_id as string
    expect(call.raw).not.toContain(GEMINI_SIGNED_TOOL_CALL.signature)

    vendors.replay.respondNext('google', GEMINI_SIGNED_ANSWER.response)
    const answer = await turn('google', 'google/gemini-3.8-flash', chatId, { ...toolResult(toolUseId), reasoning_effort: 'low' })
    const sent = only(answer.vendorRequests, 'request after the tool result').body
    const modelParts = sent.contents.filter((c: any) => c.role === 'model').flatMap((c: any) => c.parts)
    expect(modelParts.find((p: any) => p.functionCall)).toEqual({
      functionCall: { id: toolUseId, name: 'get_weather', args: GEMINI_SIGNED_TOOL_CALL.arguments },
      thoughtSignature: GEMINI_SIGNED_TOOL_CALL.signature,
    })
    // Nothing was lost: no warning about replay data, nor the package's own about a missing signature.
    expect(translationWarnings(answer.frames)).toEqual([])
    expect(answer.raw).not.toContain(GEMINI_SIGNED_ANSWER.signature)

    // The next turn sends the answer's text back with its signature, the call's still on its call.
    const next = await turn('google', 'google/gemini-3.8-flash', chatId, { input: [{ type: 'prompt', text: 'Thanks!' }] })
    const nextParts = only(next.vendorRequests, 'next request').body.contents.filter((c: any) => c.role === 'model').flatMap((c: any) => c.parts)
    expect(nextParts).toContainEqual({ text: GEMINI_SIGNED_ANSWER.text, thoughtSignature: GEMINI_SIGNED_ANSWER.signature })
    expect(nextParts.find((p: any) => p.functionCall).thoughtSignature).toBe(GEMINI_SIGNED_TOOL_CALL.signature)

    await expectHistoryWithout(chatId, [GEMINI_SIGNED_TOOL_CALL.signature, GEMINI_SIGNED_ANSWER.signature])
  })

  test('gpt-5: the reasoning item goes back with its id and encrypted content before its function_call, with store: false', async () => {
    const fixture = OPENAI_REASONING_TOOL_CALL
    const chatId = await vendors.newChat()
    vendors.replay.respondNext('openai', fixture.response)
    const call = await turn('openai', 'openai/gpt-5', chatId, { input: [{ type: 'prompt', text: 'Weather in Oslo?' }] })
    expect(call.last.data.pending_tool_calls).toEqual([{ tool_name: 'get_weather', tool_use_id: fixture.callId }])
    const first = only(call.vendorRequests, 'first request').body
    // Parley keeps the history: OpenAI keeps nothing and returns the reasoning encrypted.
    expect(first.store).toBe(false)
    expect(first.include).toContain('reasoning.encrypted_content')
    expect(call.raw).not.toContain(fixture.encryptedContent)

    vendors.replay.respondNext('openai', FIXTURES.openai.afterToolResult.response)
    const answer = await turn('openai', 'openai/gpt-5', chatId, toolResult(fixture.callId))
    expectEncryptedReasoningReplayed(only(answer.vendorRequests, 'request after the tool result').body, fixture)
    // The package skipped nothing.
    expect(translationWarnings(answer.frames)).toEqual([])

    await expectHistoryWithout(chatId, [fixture.encryptedContent])
  })

  test('a call Claude made, answered on deepseek-v4-pro: the assistant message with tool_calls carries reasoning_content', async () => {
    const chatId = await vendors.newChat()
    vendors.replay.respondNext('anthropic', FIXTURES.anthropic.toolCall.response)
    const call = await turn('anthropic', 'anthropic/claude-haiku-4.5', chatId, { input: [{ type: 'prompt', text: 'Weather in Oslo?' }] })
    const toolUseId = call.last.data.pending_tool_calls[0].tool_use_id as string

    vendors.replay.respondNext('deepseek', FIXTURES.deepseek.afterToolResult.response)
    const answer = await turn('deepseek', 'deepseek/deepseek-v4-pro', chatId, toolResult(toolUseId))
    const messages = only(answer.vendorRequests, 'deepseek request').body.messages as any[]
    const assistant = only(messages.filter((m) => m.role === 'assistant' && m.tool_calls), 'assistant messages with tool calls')
    expect(assistant.tool_calls.map((c: any) => c.id)).toEqual([toolUseId])
    // Claude left no reasoning: DeepSeek gets the empty reasoning its thinking mode requires.
    expect(assistant.reasoning_content).toBe('')
    expect(messages.at(-1)).toMatchObject({ role: 'tool', tool_call_id: toolUseId })
  })

  test("a call Claude made thinking, answered on deepseek-v4-pro: Claude's thinking text goes as reasoning_content, its signature with a replay_dropped warning", async () => {
    const fixture = ANTHROPIC_THINKING_TOOL_CALL
    const chatId = await vendors.newChat()
    vendors.replay.respondNext('anthropic', fixture.response)
    await turn('anthropic', 'anthropic/claude-haiku-4.5', chatId, { input: [{ type: 'prompt', text: 'Weather in Oslo?' }], reasoning_effort: 'low' })

    vendors.replay.respondNext('deepseek', FIXTURES.deepseek.afterToolResult.response)
    const answer = await turn('deepseek', 'deepseek/deepseek-v4-pro', chatId, toolResult(fixture.toolUseId))
    const body = only(answer.vendorRequests, 'deepseek request').body
    const assistant = only((body.messages as any[]).filter((m) => m.role === 'assistant' && m.tool_calls), 'assistant messages with tool calls')
    expect(assistant.reasoning_content).toBe(fixture.thinking)
    expect(JSON.stringify(body)).not.toContain(fixture.signature)
    expect(JSON.stringify(body)).not.toContain(fixture.redactedData)
    // Known before the call: in the opening frame, and in the run's manifest.
    const warning: any = only(answer.frames[2]!.data.warnings.filter((w: any) => w.code === 'replay_dropped'), 'replay_dropped warnings')
    expect(warning).toEqual({ code: 'replay_dropped', message: expect.stringContaining('anthropic'), details: { provider: 'deepseek', from: ['anthropic'], ordinals: expect.any(Array) } })
    expect(warning.details.ordinals).toHaveLength(2)
    const run = await vendors.api(`/api/v1/runs/${answer.frames[0]!.data.run_id}`)
    expect(run.json().manifest.warnings.translation).toContainEqual(warning)
  })
})
