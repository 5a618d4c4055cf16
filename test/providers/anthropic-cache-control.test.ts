import { createAnthropic } from '@ai-sdk/anthropic'
import type { LanguageModelV4StreamPart } from '@ai-sdk/provider'
import { Decimal } from 'decimal.js'
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import type { PackedPart, RenderedPart } from '../../src/domain/context/context-types.ts'
import { customerCost } from '../../src/domain/pricing/customer-cost.ts'
import type { Usage } from '../../src/domain/pricing/usage.ts'
import { convertToProviderPrompt } from '../../src/providers/convert-to-provider-prompt.ts'
import { anthropic as fixture } from '../e2e/vendor-fixtures/anthropic.ts'

/**
 * Anthropic's cache breakpoints as the real @ai-sdk/anthropic package sends them: a prompt made by
 * convertToProviderPrompt with breakpoints, through the vendor model with a fetch that records the
 * request and answers with the replay fixture (test/e2e/vendor-fixtures/anthropic.ts). End to end,
 * through the server, test/e2e/vendors.test.ts checks the same fixture's cache reads and writes in
 * the run's usage and cost; the run layer passing breakpoints comes with compaction (issue 10).
 */

const PNG_1x1 = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64')
const EPHEMERAL = { type: 'ephemeral' }
const SONNET = (JSON.parse(readFileSync(new URL('../../catalogue/models.json', import.meta.url), 'utf8')) as { models: any[] }).models.find(
  (m) => m.name === 'anthropic/claude-sonnet-4.5',
)

let ordinal = 0
const part = (content: RenderedPart | null): PackedPart => ({
  ordinal: ++ordinal,
  kind: content?.type === 'summary' ? 'summary' : (content?.type ?? 'reasoning'),
  treatment: content === null ? 'omitted' : 'verbatim',
  content,
  tokens: 1,
})

/** A chat that ends, as every turn does, with the customer's new prompt. */
const PARTS: PackedPart[] = [
  part({ type: 'summary', text: 'Summary of ordinals 1-40: the customer asked about refunds.' }),
  part({ type: 'prompt', text: 'Weather in Oslo?', attachments: [] }),
  part({ type: 'reasoning', text: 'Look it up.' }),
  part({ type: 'message', text: 'Checking.' }),
  part({ type: 'tool_call', toolUseId: 'toolu_01', toolName: 'get_weather', arguments: '{"city":"Oslo"}' }),
  part({ type: 'tool_result', toolUseId: 'toolu_01', toolName: 'get_weather', text: 'sunny', isError: false, attachments: [] }),
  part({ type: 'message', text: 'It is sunny.' }),
  part(null),
  part({
    type: 'prompt',
    text: 'And this picture?',
    attachments: [{ kind: 'file', media: { mediaId: 'm1', mime: 'image/png', byteLen: PNG_1x1.length, filename: null, width: 1, height: 1, pageCount: null } }],
  }),
]

type Recorded = { url: string; body: any }

/** Sends the prompt through the real Anthropic package; returns the request it made and its stream. */
async function send(cacheBreakpointsAfter?: readonly number[]) {
  const requests: Recorded[] = []
  const response = fixture.text.response
  if (response.kind !== 'stream') throw new Error('the text fixture streams')
  const model = createAnthropic({
    apiKey: 'sk-ant-api03-unit-test',
    baseURL: 'http://anthropic.test/v1',
    fetch: async (url, init) => {
      requests.push({ url: String(url), body: JSON.parse(String(init?.body)) })
      return new Response(response.events.join(''), { status: 200, headers: response.headers })
    },
  })('claude-sonnet-4-5-20250929')
  const prompt = convertToProviderPrompt('Be brief.', PARTS, () => new Uint8Array(PNG_1x1), cacheBreakpointsAfter === undefined ? {} : { cacheBreakpointsAfter })
  const { stream } = await model.doStream({
    prompt,
    tools: [{ type: 'function', name: 'get_weather', inputSchema: { type: 'object', properties: { city: { type: 'string' } } } }],
    maxOutputTokens: 1024,
  })
  const parts: LanguageModelV4StreamPart[] = []
  for await (const p of stream) parts.push(p)
  expect(requests).toHaveLength(1)
  return { request: requests[0]!, parts }
}

/** Every block of the request that carries cache_control, named by where it is. */
function cacheControlled(body: any): { where: string; cache_control: unknown }[] {
  const found: { where: string; cache_control: unknown }[] = []
  for (const [i, block] of (body.system ?? []).entries()) if (block.cache_control) found.push({ where: `system/${i}`, cache_control: block.cache_control })
  for (const [i, tool] of (body.tools ?? []).entries()) if (tool.cache_control) found.push({ where: `tools/${i}`, cache_control: tool.cache_control })
  for (const [i, message] of body.messages.entries()) {
    for (const [j, block] of message.content.entries()) {
      if (block.cache_control) found.push({ where: `${message.role}/${i}/${block.type}/${j}`, cache_control: block.cache_control })
    }
  }
  return found
}

const breakpointWarnings = (parts: LanguageModelV4StreamPart[]) =>
  parts.flatMap((p) => (p.type === 'stream-start' ? p.warnings : [])).filter((w) => JSON.stringify(w).toLowerCase().includes('cache'))

describe('Anthropic cache breakpoints through @ai-sdk/anthropic', () => {
  it('sends no cache_control without breakpoints', async () => {
    const { request } = await send()
    expect(request.url).toBe('http://anthropic.test/v1/messages')
    expect(cacheControlled(request.body)).toEqual([])
  })

  it('sends cache_control: ephemeral on the system block and the blocks that end the requested prefixes', async () => {
    // After part 1 (the summary), part 3 (reasoning: lands on part 2's prompt), part 6 (the tool result).
    const { request, parts } = await send([1, 3, 6])
    // Anthropic's shape: consecutive user and tool messages become one user message, and the
    // unsigned reasoning is not sent.
    expect(request.body.messages.map((m: any) => `${m.role}:${m.content.map((b: any) => b.type).join(',')}`)).toEqual([
      'user:text,text',
      'assistant:text,tool_use',
      'user:tool_result',
      'assistant:text',
      'user:text,image',
    ])
    expect(cacheControlled(request.body)).toEqual([
      { where: 'system/0', cache_control: EPHEMERAL },
      { where: 'user/0/text/0', cache_control: EPHEMERAL },
      { where: 'user/0/text/1', cache_control: EPHEMERAL },
      { where: 'user/2/tool_result/0', cache_control: EPHEMERAL },
    ])
    expect(request.body.messages[0].content[0]).toEqual({ type: 'text', text: (PARTS[0]!.content as { text: string }).text, cache_control: EPHEMERAL })
    expect(breakpointWarnings(parts)).toEqual([])
  })

  it('never sends more than four, whatever is asked: the system one and the last three', async () => {
    const { request, parts } = await send(PARTS.map((_, i) => i + 1))
    const found = cacheControlled(request.body)
    expect(found.length).toBeLessThanOrEqual(4)
    expect(found.map((f) => f.where)).toEqual(['system/0', 'user/2/tool_result/0', 'assistant/3/text/0', 'user/4/image/1'])
    // None was dropped by the package for exceeding the limit or landing where it cannot go.
    expect(breakpointWarnings(parts)).toEqual([])
  })

  it('reads the cache reads and writes of the stream as usage, priced at the cache rates', async () => {
    const { parts } = await send([1])
    const finish = parts.find((p) => p.type === 'finish')
    if (finish?.type !== 'finish') throw new Error('no finish')
    expect(finish.usage.inputTokens).toEqual({ total: 19 + 1536 + 2104, noCache: 19, cacheRead: 1536, cacheWrite: 2104 })
    // The run's Usage as execute-run maps it (test/e2e/vendors.test.ts checks that mapping through the server).
    const usage: Usage = { input_tokens: 19, output_tokens: 14, reasoning_tokens: 0, cache_read_tokens: 1536, cache_write_tokens: 2104 }
    expect(finish.usage.outputTokens.total).toBe(usage.output_tokens)
    const expected = new Decimal(19)
      .mul(SONNET.rates.input)
      .plus(new Decimal(14).mul(SONNET.rates.output))
      .plus(new Decimal(1536).mul(SONNET.rates.cache_read))
      .plus(new Decimal(2104).mul(SONNET.rates.cache_write))
      .div(1_000_000)
      .mul('1.05')
    expect(new Decimal(customerCost(usage, SONNET, '5')).equals(expected)).toBe(true)
  })
})
