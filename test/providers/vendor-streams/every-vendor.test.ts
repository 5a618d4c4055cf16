import { describe, expect, test } from 'vitest'
import { UpstreamError } from '../../../src/domain/errors.ts'
import { FIXTURES } from '../../e2e/vendor-fixtures/index.ts'
import {
  blocksOf,
  catalogueEntry,
  deltaText,
  nextTurnPrompt,
  PROMPT,
  RECORDED_KEYS,
  RECORDED_ORIGIN,
  runRecorded,
  userPrompt,
  WEATHER,
} from '../../helpers/recorded-vendor-run.ts'
import { blockKinds, expectBlocksOneAtATime } from '../../helpers/block-grammar.ts'
import type { RecordedFetchRequest } from '../../helpers/recorded-fetch.ts'
import { headerOf, only, plainAnswerDone, REQUEST_ID_HEADER, VENDOR_CASES, type VendorCase } from '../../helpers/vendor-cases.ts'

/**
 * Each vendor's recorded wire bytes through its real @ai-sdk package and Parley's run path, in
 * process (test/helpers/recorded-vendor-run.ts): the frames, ledger parts, usage, stop reason and
 * ids a plain answer and a tool call make, the request the package built from Parley's prompt, and
 * a vendor error before the stream. test/e2e/vendors.test.ts takes the same fixtures through the
 * server process and a socket; both hold each vendor to the facts in test/helpers/vendor-cases.ts.
 */

const TOOL_PROMPT = 'What is the weather in Oslo right now?'
const TOOL_RESULT = 'sunny, 21 °C, light breeze'

/** The run's own frames as docs/guide/streaming.md orders them: warnings before content, blocks one at a time, one terminal frame. */
function expectWellFormed(frames: { event: string; data: any }[]): void {
  const events = frames.map((f) => f.event)
  const trace = events.join(',')
  expect(['done', 'error'], trace).toContain(events.at(-1))
  const open = expectBlocksOneAtATime(frames.slice(0, -1), trace)
  if (events.at(-1) === 'done') expect(open, trace).toBeNull()
}

/** What went to the vendor on every call: endpoint, key, model and a stream. */
function expectVendorCall(c: VendorCase, r: RecordedFetchRequest): void {
  expect(r.method).toBe('POST')
  expect(r.url).toBe(`${RECORDED_ORIGIN}${c.path}`)
  expect(r.headers['content-type']).toMatch(/^application\/json/)
  for (const [header, value] of Object.entries(c.auth(RECORDED_KEYS[c.vendor]))) expect(r.headers[header], header).toBe(value)
  if (c.vendor !== 'google') expect(r.body.model).toBe(c.vendorModelId)
  expect(c.streamed(r.body, r.url), JSON.stringify(r.body)).toBe(true)
}

describe.each(VENDOR_CASES)('$vendor, from its recorded wire bytes', (c) => {
  const fixture = FIXTURES[c.vendor]

  test('a plain answer: its blocks and text, usage, stop reason, ids and cost; the request the package built', async () => {
    const run = await runRecorded(c.vendor, [fixture.text.response], { maxTokens: 1024 })
    expectWellFormed(run.frames)
    expect(blockKinds(run.frames)).toEqual(c.blocks)
    expect(deltaText(run.frames, 'text')).toBe(fixture.text.text)
    expect(deltaText(run.frames, 'reasoning')).toBe(fixture.text.reasoning)
    expect(run.frames.filter((f) => f.event === 'delta').length).toBeGreaterThan(1)
    // No vendor warning on a plain request: no translation_warnings frame from the stream.
    expect(run.frames.filter((f) => f.event === 'translation_warnings')).toEqual([])
    expect(run.recordedWarnings).toEqual([])

    expect(run.outcome).toMatchObject({
      status: 'succeeded',
      error: null,
      stopReason: 'end_turn',
      usage: c.usage,
      usageLost: false,
      providerResponseId: c.responseId,
      modelServed: c.modelServed,
      pendingToolCalls: [],
      streamOpened: true,
      vendorRequests: 1,
    })
    const header = REQUEST_ID_HEADER[c.vendor]
    expect(run.outcome.providerRequestId).toBe(header === null ? c.responseId : headerOf(fixture.text.response, header))
    expect(run.frames.at(-1)).toEqual({ event: 'done', data: plainAnswerDone(c, run.cost) })
    expect(Number(run.cost)).toBeGreaterThan(0)
    expect(run.persisted).toEqual(
      c.blocks.map((kind) => (kind === 'reasoning' ? expect.objectContaining({ type: 'reasoning', text: fixture.text.reasoning }) : { type: 'message', text: fixture.text.text })),
    )

    const call = only(run.requests, 'vendor calls')
    expectVendorCall(c, call)
    expect(c.conversation(call.body)).toEqual([c.userMessage(PROMPT)])
    expect(c.maxTokens(call.body)).toBe(1024)
  })

  test('a tool call, then its result: tool_call block and tool_use stop; the next request carries the call and the result answering it', async () => {
    const call = await runRecorded(c.vendor, [fixture.toolCall.response], { prompt: userPrompt(TOOL_PROMPT), tools: [WEATHER] })
    expectWellFormed(call.frames)
    expect(blockKinds(call.frames)).toEqual(c.toolBlocks)
    const start = call.frames.find((f) => f.event === 'block_start' && f.data.kind === 'tool_call')!
    expect(start.data).toEqual({ kind: 'tool_call', tool_name: 'get_weather', tool_use_id: fixture.toolCall.toolCallId ?? expect.any(String) })
    const toolUseId = start.data.tool_use_id as string
    expect(deltaText(call.frames, 'tool_input')).toBe(fixture.toolCall.arguments)
    expect(deltaText(call.frames, 'text')).toBe(fixture.toolCall.text)
    expect(deltaText(call.frames, 'reasoning')).toBe(fixture.toolCall.reasoning)
    expect(call.outcome).toMatchObject({ status: 'succeeded', stopReason: 'tool_use', pendingToolCalls: [{ tool_name: 'get_weather', tool_use_id: toolUseId }] })
    expect(call.frames.at(-1)!.data).toMatchObject({ stop_reason: 'tool_use', pending_tool_calls: [{ tool_name: 'get_weather', tool_use_id: toolUseId }] })
    expect(call.persisted).toContainEqual(expect.objectContaining({ type: 'tool_call', arguments: fixture.toolCall.arguments, tool_name: 'get_weather', tool_use_id: toolUseId }))
    const first = only(call.requests, 'vendor calls for the tool call')
    expectVendorCall(c, first)
    expect(c.toolNames(first.body)).toEqual(['get_weather'])

    const prompt = nextTurnPrompt(c.vendor, [
      { type: 'prompt', text: TOOL_PROMPT },
      ...call.persisted,
      { type: 'tool_result', text: TOOL_RESULT, is_error: false, tool_name: 'get_weather', tool_use_id: toolUseId, trust: 'customer_data' },
    ])
    const answer = await runRecorded(c.vendor, [fixture.afterToolResult.response], { prompt, tools: [WEATHER] })
    expectWellFormed(answer.frames)
    expect(deltaText(answer.frames, 'text')).toBe(fixture.afterToolResult.text)
    expect(answer.outcome).toMatchObject({ status: 'succeeded', stopReason: 'end_turn', pendingToolCalls: [] })
    expect(answer.persisted.at(-1)).toEqual({ type: 'message', text: fixture.afterToolResult.text })

    const second = only(answer.requests, 'vendor calls for the tool result')
    expectVendorCall(c, second)
    expect(c.conversation(second.body)[0]).toEqual(c.userMessage(TOOL_PROMPT))
    expect(c.toolCall(second.body)).toEqual({ id: toolUseId, name: 'get_weather', input: { city: 'Oslo' } })
    expect(c.toolResult(second.body)).toEqual({ id: toolUseId, content: TOOL_RESULT })
  })

  test(`an HTTP ${fixture.serverError.status} before the stream, every attempt: upstream_error with the vendor's message after two retries, nothing streamed`, async () => {
    const run = await runRecorded(c.vendor, [fixture.serverError, fixture.serverError, fixture.serverError])
    // VENDOR_MAX_RETRIES (2 by default) retries before the first byte (decision 015).
    expect(run.requests).toHaveLength(3)
    expect(run.opening.ok).toBe(false)
    const error = (run.opening as { ok: false; error: UpstreamError }).error
    expect(error).toBeInstanceOf(UpstreamError)
    expect(error.code).toBe('upstream_error')
    expect(error.message).toContain(c.errorMessage)
    expect(error.details).toEqual({ run_id: expect.any(String) })
    expect(run.outcome).toMatchObject({ status: 'failed', streamOpened: false, vendorRequests: 3, usageLost: true, error: { code: 'upstream_error' } })
    expect(run.outcome.error!.message).toContain(c.errorMessage)
    // Nothing reached the provider's answer: nothing is billed for input or output.
    expect(run.outcome.usage).toEqual({ input_tokens: 0, output_tokens: 0, reasoning_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0 })
    expect(Number(run.cost)).toBe(0)
    // A failure before the stream is the HTTP answer's, not a frame.
    expect(run.frames).toEqual([])
    expect(run.persisted).toEqual([])
    // The request id from the error answer's header, where the vendor sends one.
    const header = REQUEST_ID_HEADER[c.vendor]
    const requestId = header === null ? undefined : headerOf(fixture.serverError, header)
    expect(run.outcome.providerRequestId).toBe(requestId ?? null)
  })

  test('an error answer the vendor fetch does not retry (400): one request, the vendor message in the run’s error', async () => {
    const refusal = { ...fixture.serverError, status: 400 }
    const run = await runRecorded(c.vendor, [refusal])
    expect(run.requests).toHaveLength(1)
    expect(run.outcome).toMatchObject({ status: 'failed', vendorRequests: 1, error: { code: 'upstream_error' } })
    expect(run.outcome.error!.message).toMatch(/^the provider failed before answering: /)
    expect(run.outcome.error!.message).toContain(c.errorMessage)
  })
})

test('the catalogue models the fixtures answer for are the vendors’ own', () => {
  for (const c of VENDOR_CASES) expect(catalogueEntry(c.model).vendor_model_id).toBe(c.vendorModelId)
})
