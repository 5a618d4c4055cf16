import { createAnthropic } from '@ai-sdk/anthropic'
import type { LanguageModelV4CallOptions } from '@ai-sdk/provider'
import { describe, expect, test } from 'vitest'
import { coversAnthropicMessages, createAnthropicMessagesConverter } from '../../../src/providers/thin/anthropic-messages.ts'
import { THIN_FORMATS } from '../../../src/providers/thin/formats.ts'
import { convertEvents } from '../../../src/providers/thin/thin-converter.ts'
import {
  ANTHROPIC_CUT_AFTER_START,
  ANTHROPIC_CUT_BY_ERROR,
  ANTHROPIC_CUT_DROPPED,
  ANTHROPIC_OVERLOADED_FIRST,
  ANTHROPIC_OVERLOADED_MID,
  ANTHROPIC_USAGE_IN_MESSAGE_DELTA,
  anthropicTextStream,
} from '../../e2e/vendor-fixtures/anthropic.ts'
import { ANTHROPIC_THINKING_ANSWER, ANTHROPIC_THINKING_EMPTY_LAST_DELTA, ANTHROPIC_THINKING_TOOL_CALL } from '../../e2e/vendor-fixtures/anthropic-thinking.ts'
import { countedUsageAnswer } from '../../e2e/vendor-fixtures/counted-usage.ts'
import { FIXTURES } from '../../e2e/vendor-fixtures/index.ts'
import { namedEvent } from '../../e2e/vendor-fixtures/wire.ts'
import { WEATHER } from '../../helpers/recorded-vendor-run.ts'
import { answering, bothOn, eventData, expectSameOutcome, outcomeOf, type RecordedStream, alteredStream } from './parity.ts'

/**
 * The thin Anthropic Messages path (decision 050) beside @ai-sdk/anthropic, on every recorded
 * Messages stream, with the raw chunks Parley asks for (the input usage of a cut stream is read
 * from them) and without: the converter's parts equal the package's, the live path's whole outcome
 * equals the package's, and streams it does not take are the package's to end, error and all.
 */

const format = THIN_FORMATS.anthropic!
const make = (fetch: typeof globalThis.fetch) => createAnthropic({ apiKey: 'sk-ant-test', baseURL: 'http://recorded.invalid/anthropic/v1', fetch })('claude-sonnet-4-5')

/** The options executeRun sends for a Claude turn: raw chunks, the effort's thinking options. */
const turn = (extra: Partial<LanguageModelV4CallOptions> = {}): LanguageModelV4CallOptions => ({
  prompt: [{ role: 'user', content: [{ type: 'text', text: 'What is the capital of Norway?' }] }],
  maxOutputTokens: 1024,
  includeRawChunks: true,
  providerOptions: { anthropic: { thinking: { type: 'disabled' } }, openai: { promptCacheKey: 'chat-1', store: false }, sandbox: { retry: false, cacheKey: 'chat-1' } },
  ...extra,
})
const withTools = turn({ tools: [WEATHER] })
const thinking = turn({ tools: [WEATHER], maxOutputTokens: 4096, providerOptions: { anthropic: { thinking: { type: 'enabled', budgetTokens: 2048 } } } })

const stream = (r: unknown) => r as RecordedStream

/** Every recorded Anthropic Messages stream that ends with message_stop or is cut, with the options of the turn it answers. */
const RECORDED: [string, RecordedStream, LanguageModelV4CallOptions][] = [
  ['text answer', stream(FIXTURES.anthropic.text.response), turn()],
  ['text, then a tool call', stream(FIXTURES.anthropic.toolCall.response), withTools],
  ['answer after the tool result', stream(FIXTURES.anthropic.afterToolResult.response), withTools],
  ['usage repeated in message_delta', stream(ANTHROPIC_USAGE_IN_MESSAGE_DELTA.response), turn()],
  ['thinking, redacted thinking, a tool call', stream(ANTHROPIC_THINKING_TOOL_CALL.response), thinking],
  ['the answer after thinking', stream(ANTHROPIC_THINKING_ANSWER.response), thinking],
  ['thinking whose last delta is empty', stream(ANTHROPIC_THINKING_EMPTY_LAST_DELTA.response), thinking],
  ['the benchmark answer, 20 deltas', anthropicTextStream(Array.from({ length: 20 }, (_, i) => ` word${i}`)), turn()],
  ['counted usage', stream(countedUsageAnswer('anthropic', 'claude-sonnet-4-5', { total: 1234, cacheRead: 1000, cacheWrite: 100 })), turn()],
  ['a stream cut after message_start, closed', { kind: 'stream', headers: ANTHROPIC_CUT_AFTER_START.headers, events: ANTHROPIC_CUT_AFTER_START.events }, turn()],
  ['the text answer without raw chunks', stream(FIXTURES.anthropic.text.response), turn({ includeRawChunks: false })],
]

describe('the converter makes the package’s parts, from every recorded stream', () => {
  test.each(RECORDED)('%s', async (_name, s, options) => {
    expect(coversAnthropicMessages(options)).toBe(true)
    const thin = convertEvents(createAnthropicMessagesConverter(options), eventData(s))
    expect(thin.warnings).toEqual([])
    const sdk = await outcomeOf(() => make(answering(s)).doStream(options))
    expect(sdk.failed).toBeNull()
    expect(thin.value).toEqual(sdk.parts.filter((p) => p.type !== 'stream-start'))
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

const altered = (at: number, ...replace: string[]) => alteredStream(FIXTURES.anthropic.text.response, at, ...replace)

/** Streams the converter does not take: the call is handed to the package, and ends as the package ends it. */
const UNUSUAL: [string, RecordedStream][] = [
  ['overloaded before anything (an error event first)', stream(ANTHROPIC_OVERLOADED_FIRST)],
  ['overloaded mid-answer', stream(ANTHROPIC_OVERLOADED_MID.response)],
  ['an error event after message_start', stream(ANTHROPIC_CUT_BY_ERROR)],
  ['a connection dropped after message_start', stream(ANTHROPIC_CUT_DROPPED)],
  ['malformed JSON mid-answer', altered(3, 'event: content_block_delta\ndata: {"type":"content_block_delta",\n\n')],
  ['a text delta without its text', altered(3, namedEvent('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta' } }))],
  ['an event type the package does not know', altered(3, namedEvent('content_block_future', { type: 'content_block_future', index: 0 }))],
  ['a citation (documents with citations only)', altered(3, namedEvent('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'citations_delta', citation: { type: 'char_location', cited_text: 'Oslo', document_index: 0, document_title: null, start_char_index: 0, end_char_index: 4 } } }))],
  ['a second message_start', altered(3, namedEvent('message_start', { type: 'message_start', message: { id: 'msg_other', model: 'claude', usage: { input_tokens: 1 } } }))],
]

describe('unusual streams end as the package ends them', () => {
  test.each(UNUSUAL)('%s', async (_name, s) => {
    for (const size of [undefined, 5]) {
      const o = await bothOn(make, format, turn(), s, size)
      expectSameOutcome(o)
      expect(o.packageCalls).toBe(2)
    }
  })
})

describe('the calls the thin path covers, decided before the call', () => {
  test.each([
    ['a JSON response format (the package’s JSON tool)', turn({ responseFormat: { type: 'json' } })],
    ['a provider tool', turn({ tools: [{ type: 'provider', id: 'anthropic.web_search_20250305', name: 'web_search', args: {} }] })],
    ['pings asked for', turn({ providerOptions: { anthropic: { includePings: true } } })],
  ])('%s: the package streams the call', (_name, options) => {
    expect(coversAnthropicMessages(options)).toBe(false)
  })
})
