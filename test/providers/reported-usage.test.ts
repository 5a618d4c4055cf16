import { describe, expect, it } from 'vitest'
import { mergeReportedUsage, readAnthropicUsage, readReportedUsage, readsRawChunks, usageOfCutStream } from '../../src/providers/reported-usage.ts'
import { ANTHROPIC_CUT_BY_ERROR, ANTHROPIC_USAGE_IN_MESSAGE_DELTA } from '../e2e/vendor-fixtures/anthropic.ts'
import { recordParts } from '../actors/run-stream/record-parts.ts'

/**
 * Issue 22, item 6: the usage Anthropic reports before its stream ends, read from the raw chunks the
 * @ai-sdk/anthropic package hands over with `includeRawChunks` (recorded here from the fixtures'
 * bytes, as the package parses them).
 */

const rawChunks = async (response: Parameters<typeof recordParts>[1]) =>
  (await recordParts('anthropic', response, { includeRawChunks: true })).flatMap((p) => (p.type === 'raw' ? [p.rawValue] : []))

const ESTIMATE = { input_tokens: 18, output_tokens: 7, reasoning_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0 }

describe('readAnthropicUsage, over recorded raw chunks', () => {
  it('message_start gives the input counts; message_start’s placeholder output is not taken; blocks give nothing', async () => {
    const chunks = await rawChunks(ANTHROPIC_CUT_BY_ERROR)
    const readings = chunks.map((c) => readAnthropicUsage(c))
    expect(readings.every((r) => r.warnings.length === 0)).toBe(true)
    const values = readings.flatMap((r) => (r.value ? [r.value] : []))
    expect(values).toEqual([{ input_tokens: 100, cache_read_tokens: 40, cache_write_tokens: 12 }])
  })

  it('message_delta gives the cumulative counts, output included, over message_start’s', async () => {
    const chunks = await rawChunks(ANTHROPIC_USAGE_IN_MESSAGE_DELTA.response)
    let reported = null
    for (const chunk of chunks) reported = mergeReportedUsage(reported, readAnthropicUsage(chunk).value)
    const f = ANTHROPIC_USAGE_IN_MESSAGE_DELTA.finalUsage
    expect(reported).toEqual({ input_tokens: f.input_tokens, cache_read_tokens: f.cache_read_input_tokens, cache_write_tokens: f.cache_creation_input_tokens, output_tokens: f.output_tokens })
  })

  it('a count that is not a count is left out with a vendor warning; a start without usage says so', () => {
    const bad = readAnthropicUsage({ type: 'message_start', message: { usage: { input_tokens: -3, cache_read_input_tokens: 'x', cache_creation_input_tokens: 5 } } })
    expect(bad.value).toEqual({ cache_write_tokens: 5 })
    expect(bad.warnings.map((w) => [w.code, w.details?.field])).toEqual([
      ['vendor_warning', 'input_tokens'],
      ['vendor_warning', 'cache_read_input_tokens'],
    ])
    const none = readAnthropicUsage({ type: 'message_start', message: { id: 'msg' } })
    expect(none.value).toBeNull()
    expect(none.warnings).toHaveLength(1)
    expect(readAnthropicUsage('not an event')).toEqual({ value: null, warnings: [] })
    expect(readAnthropicUsage({ type: 'ping' })).toEqual({ value: null, warnings: [] })
  })

  it('only Anthropic’s raw chunks are read', () => {
    expect(readsRawChunks('anthropic')).toBe(true)
    for (const provider of ['openai', 'google', 'mistral', 'xai', 'deepseek', 'sandbox']) expect(readsRawChunks(provider)).toBe(false)
    expect(readReportedUsage('openai', { type: 'message_start', message: { usage: { input_tokens: 5 } } })).toEqual({ value: null, warnings: [] })
  })
})

describe('usageOfCutStream', () => {
  it('nothing reported: the estimate', () => {
    expect(usageOfCutStream(ESTIMATE, null)).toEqual(ESTIMATE)
  })

  it('the input reported: the vendor’s input and cache counts, the estimate’s output', () => {
    expect(usageOfCutStream(ESTIMATE, { input_tokens: 100, cache_read_tokens: 40, cache_write_tokens: 12 })).toEqual({
      input_tokens: 100,
      output_tokens: 7,
      reasoning_tokens: 0,
      cache_read_tokens: 40,
      cache_write_tokens: 12,
    })
  })

  it('the fresh input alone reported: no cache', () => {
    expect(usageOfCutStream(ESTIMATE, { input_tokens: 100 })).toEqual({ ...ESTIMATE, input_tokens: 100 })
  })

  it('the cache counts alone reported: the fresh input is what of the estimate they leave', () => {
    expect(usageOfCutStream({ ...ESTIMATE, input_tokens: 50 }, { cache_read_tokens: 30 })).toEqual({ ...ESTIMATE, input_tokens: 20, cache_read_tokens: 30 })
  })

  it('the output reported: the vendor’s output', () => {
    expect(usageOfCutStream(ESTIMATE, { input_tokens: 100, output_tokens: 3 })).toEqual({ ...ESTIMATE, input_tokens: 100, output_tokens: 3 })
  })
})
