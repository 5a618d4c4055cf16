import { createOpenAI } from '@ai-sdk/openai'
import type { LanguageModelV4CallOptions } from '@ai-sdk/provider'
import { describe, expect, test } from 'vitest'
import { THIN_FORMATS } from '../../../src/providers/thin/formats.ts'
import { coversOpenAIResponses, createOpenAIResponsesConverter, openaiResponsesCall } from '../../../src/providers/thin/openai-responses.ts'
import { convertEvents } from '../../../src/providers/thin/thin-converter.ts'
import { countedUsageAnswer } from '../../e2e/vendor-fixtures/counted-usage.ts'
import { FIXTURES } from '../../e2e/vendor-fixtures/index.ts'
import { OPENAI_REASONING_TOOL_CALL } from '../../e2e/vendor-fixtures/openai-reasoning.ts'
import { openaiTextStream } from '../../e2e/vendor-fixtures/openai.ts'
import { namedEvent } from '../../e2e/vendor-fixtures/wire.ts'
import { WEATHER } from '../../helpers/recorded-vendor-run.ts'
import { bothOn, eventData, expectSameOutcome, outcomeOf, answering, type RecordedStream, alteredStream } from './parity.ts'

/**
 * The thin OpenAI Responses path (decision 050) beside @ai-sdk/openai, on every recorded Responses
 * stream: the converter's parts equal the package's, the live path's whole outcome equals the
 * package's, and streams it does not take are the package's to end, error and all.
 */

const format = THIN_FORMATS.openai!
const make = (fetch: typeof globalThis.fetch) => createOpenAI({ apiKey: 'sk-test', baseURL: 'http://recorded.invalid/openai/v1', fetch })('gpt-5')

/** The options executeRun sends for a gpt-5 turn (store: false, the chat as prompt cache key, the effort's options). */
const turn = (extra: Partial<LanguageModelV4CallOptions> = {}): LanguageModelV4CallOptions => ({
  prompt: [{ role: 'user', content: [{ type: 'text', text: 'What is the capital of Norway?' }] }],
  maxOutputTokens: 1024,
  providerOptions: { openai: { reasoningEffort: 'medium', reasoningSummary: null, promptCacheKey: 'chat-1', store: false }, sandbox: { retry: false, cacheKey: 'chat-1' } },
  ...extra,
})
const withTools = turn({ tools: [WEATHER] })

const stream = (r: unknown) => r as RecordedStream

/** Every recorded OpenAI Responses stream, with the options of the turn it answers. */
const RECORDED: [string, RecordedStream, LanguageModelV4CallOptions][] = [
  ['text answer', stream(FIXTURES.openai.text.response), turn()],
  ['tool call', stream(FIXTURES.openai.toolCall.response), withTools],
  ['answer after the tool result', stream(FIXTURES.openai.afterToolResult.response), withTools],
  ['gpt-5 encrypted reasoning, then a function call', stream(OPENAI_REASONING_TOOL_CALL.response), withTools],
  ['the benchmark answer, 20 deltas', openaiTextStream(Array.from({ length: 20 }, (_, i) => ` word${i}`)), turn()],
  ['counted usage', stream(countedUsageAnswer('openai', 'gpt-5', { total: 1234, cacheRead: 1000 })), turn()],
]

/** The package's parts for a stream, stream-start left out (the thin converter does not make it). */
async function sdkParts(s: RecordedStream, options: LanguageModelV4CallOptions) {
  const o = await outcomeOf(() => make(answering(s)).doStream(options))
  expect(o.failed).toBeNull()
  return o.parts.filter((p) => p.type !== 'stream-start')
}

describe('the converter makes the package’s parts, from every recorded stream', () => {
  test.each(RECORDED)('%s', async (_name, s, options) => {
    expect(coversOpenAIResponses(options)).toBe(true)
    const thin = convertEvents(createOpenAIResponsesConverter(openaiResponsesCall(options)), eventData(s))
    expect(thin.warnings).toEqual([])
    expect(thin.value).toEqual(await sdkParts(s, options))
  })
})

describe('the live thin path: the same outcome as the package’s', () => {
  test.each(RECORDED)('%s, one read per event and in 7-byte reads', async (_name, s, options) => {
    for (const size of [undefined, 7]) {
      const o = await bothOn(make, format, options, s, size)
      expectSameOutcome(o)
      expect(o.packageCalls, 'converted by the thin path, not handed over').toBe(1)
    }
  })
})

const altered = (at: number, ...replace: string[]) => alteredStream(FIXTURES.openai.text.response, at, ...replace)

const errorEvent = namedEvent('error', { type: 'error', sequence_number: 9, code: 'server_error', message: 'The server had an error while processing your request.', param: null })
const failed = namedEvent('response.failed', {
  type: 'response.failed',
  sequence_number: 9,
  response: { error: { code: 'rate_limit_exceeded', message: 'Rate limit reached' }, incomplete_details: null, usage: null },
})

/** Streams the converter does not take: the call is handed to the package, and ends as the package ends it. */
const UNUSUAL: [string, RecordedStream, 'handed over' | 'thin'][] = [
  ['an error event before any output', altered(2, errorEvent), 'handed over'],
  ['response.failed before any output', altered(2, failed), 'handed over'],
  ['an error event mid-answer', altered(7, errorEvent), 'handed over'],
  ['response.failed instead of response.completed', altered(-1, failed), 'handed over'],
  ['malformed JSON mid-answer', altered(7, 'event: response.output_text.delta\ndata: {"type":"response.output_text.delta",\n\n'), 'handed over'],
  ['malformed JSON before any output', altered(1, 'event: response.in_progress\ndata: {not json\n\n'), 'handed over'],
  ['a delta without its text', altered(7, namedEvent('response.output_text.delta', { type: 'response.output_text.delta', item_id: 'msg_x', output_index: 1, content_index: 0 })), 'handed over'],
  ['a completed response with a usage missing its output count', altered(-1, namedEvent('response.completed', { type: 'response.completed', response: { usage: { input_tokens: 3 } } })), 'handed over'],
  ['an annotation (hosted tools only)', altered(7, namedEvent('response.output_text.annotation.added', { type: 'response.output_text.annotation.added', item_id: 'msg_x', output_index: 1, content_index: 0, annotation_index: 0, annotation: { type: 'url_citation', url: 'https://example.com', title: 'Example', start_index: 0, end_index: 3 } })), 'handed over'],
  ['a connection dropped mid-answer', { ...altered(7), events: altered(7).events.slice(0, 8), end: 'destroy' }, 'handed over'],
  ['a stream ending without response.completed', { ...altered(-1), events: stream(FIXTURES.openai.text.response).events.slice(0, -1) }, 'thin'],
]

describe('unusual streams end as the package ends them', () => {
  test.each(UNUSUAL)('%s (%s)', async (_name, s, how) => {
    for (const size of [undefined, 5]) {
      const o = await bothOn(make, format, turn(), s, size)
      expectSameOutcome(o)
      expect(o.packageCalls).toBe(how === 'thin' ? 1 : 2)
    }
  })

  test('event types the package does not model are skipped by both', async () => {
    const s = altered(7, namedEvent('response.some_future_event', { type: 'response.some_future_event', sequence_number: 7 }), ...altered(7).events.slice(7, 8))
    const o = await bothOn(make, format, turn(), s)
    expectSameOutcome(o)
    expect(o.packageCalls).toBe(1)
    expect(o.thin.parts.some((p) => p.type === 'error')).toBe(false)
  })
})

describe('the calls the thin path covers, decided before the call', () => {
  test('a turn with function tools is covered', () => {
    expect(coversOpenAIResponses(withTools)).toBe(true)
  })
  test.each([
    ['raw chunks', turn({ includeRawChunks: true })],
    ['a JSON response format', turn({ responseFormat: { type: 'json' } })],
    ['a provider tool', turn({ tools: [{ type: 'provider', id: 'openai.web_search', name: 'web_search', args: {} }] })],
    ['log probabilities', turn({ providerOptions: { openai: { logprobs: true } } })],
    ['a reasoning summary', turn({ providerOptions: { openai: { reasoningSummary: 'auto' } } })],
  ])('%s: the package streams the call', (_name, options) => {
    expect(coversOpenAIResponses(options)).toBe(false)
  })
})
