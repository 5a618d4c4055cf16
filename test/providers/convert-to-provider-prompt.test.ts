import type { LanguageModelV3Message, LanguageModelV3Prompt } from '@ai-sdk/provider'
import { describe, expect, it } from 'vitest'
import type { PackedPart, RenderedPart } from '../../src/domain/context/context-types.ts'
import { convertToProviderPrompt } from '../../src/providers/convert-to-provider-prompt.ts'

const PNG_1x1 = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64')
const bytesOf = () => new Uint8Array(PNG_1x1)
const BREAKPOINT = { anthropic: { cacheControl: { type: 'ephemeral' } } }

let ordinal = 0
const part = (content: RenderedPart | null, kind: PackedPart['kind'] = content?.type ?? 'reasoning'): PackedPart => ({
  ordinal: ++ordinal,
  kind,
  treatment: content === null ? 'omitted' : 'verbatim',
  content,
  tokens: 1,
})

/**
 * A chat of every kind, indexed by part: 0 prompt, 1 reasoning, 2 message, 3 tool call, 4 tool
 * result, 5 summary, 6 omitted reasoning, 7 message, 8 prompt with an image, 9 reasoning.
 */
const PARTS: PackedPart[] = [
  part({ type: 'prompt', text: 'Weather in Oslo?', attachments: [] }),
  part({ type: 'reasoning', text: 'Look it up.' }),
  part({ type: 'message', text: 'Checking.' }),
  part({ type: 'tool_call', toolUseId: 'call_1', toolName: 'get_weather', arguments: '{"city":"Oslo"}' }),
  part({ type: 'tool_result', toolUseId: 'call_1', toolName: 'get_weather', text: 'sunny', isError: false, attachments: [] }),
  part({ type: 'summary', text: 'Summary of ordinals 1-5: weather' }, 'summary'),
  part(null, 'reasoning'),
  part({ type: 'message', text: 'Anything else?' }),
  part({
    type: 'prompt',
    text: 'And this picture?',
    attachments: [{ kind: 'file', media: { mediaId: 'm1', mime: 'image/png', byteLen: PNG_1x1.length, filename: null, width: 1, height: 1, pageCount: null } }],
  }),
  part({ type: 'reasoning', text: 'A pixel.' }),
]

/** Every marked place as `message/item` (the system message as `0/system`). */
const marks = (prompt: LanguageModelV3Prompt) =>
  prompt.flatMap((m, i) =>
    m.role === 'system'
      ? m.providerOptions === undefined
        ? []
        : [`${i}/system`]
      : [...(m.providerOptions === undefined ? [] : [`${i}/message`]), ...m.content.flatMap((item, j) => (item.providerOptions === undefined ? [] : [`${i}/${j}`]))],
  )

describe('convertToProviderPrompt', () => {
  it('groups the parts into messages as before (the shape the marks below refer to)', () => {
    const prompt = convertToProviderPrompt('Be brief.', PARTS, bytesOf)
    expect(prompt.map((m) => `${m.role}:${m.role === 'system' ? 'text' : m.content.map((i) => i.type).join(',')}`)).toEqual([
      'system:text',
      'user:text', // 0
      'assistant:reasoning,text,tool-call', // 1-3
      'tool:tool-result', // 4
      'user:text', // 5
      'assistant:text', // 6 omitted, 7
      'user:text,file', // 8
      'assistant:reasoning', // 9
    ])
  })

  it('places no breakpoint without the option', () => {
    expect(marks(convertToProviderPrompt('Be brief.', PARTS, bytesOf))).toEqual([])
    expect(marks(convertToProviderPrompt('Be brief.', PARTS, bytesOf, {}))).toEqual([])
  })

  it('marks the system message and the item that ends each requested prefix as sent', () => {
    const prompt = convertToProviderPrompt('Be brief.', PARTS, bytesOf, { cacheBreakpointsAfter: [1, 4, 5] })
    expect(marks(prompt)).toEqual(['0/system', '1/0', '2/2', '3/0'])
    expect(prompt[0]).toEqual({ role: 'system', content: 'Be brief.', providerOptions: BREAKPOINT })
    expect((prompt[2] as Extract<LanguageModelV3Message, { role: 'assistant' }>).content[2]).toEqual({
      type: 'tool-call',
      toolCallId: 'call_1',
      toolName: 'get_weather',
      input: { city: 'Oslo' },
      providerOptions: BREAKPOINT,
    })
    // The cache_control of a message is only read for its last item: the item carries it instead.
    expect(prompt.every((m) => m.providerOptions === undefined || m.role === 'system')).toBe(true)
  })

  it('puts a breakpoint on the last sent item that can carry one, at or before the prefix’s end', () => {
    // After part 6 (omitted): on part 5's summary. After part 2 (reasoning): on part 1's prompt
    // text, since Anthropic takes no cache_control on reasoning. After part 9 (reasoning): the image.
    expect(marks(convertToProviderPrompt('Be brief.', PARTS, bytesOf, { cacheBreakpointsAfter: [2, 7, 10] }))).toEqual(['0/system', '1/0', '4/0', '6/1'])
    // Nothing before the first markable item, or out of range: no mark.
    expect(marks(convertToProviderPrompt(null, [part(null), part({ type: 'reasoning', text: 'x' }), ...PARTS], bytesOf, { cacheBreakpointsAfter: [0, 1, 2, 99, 1.5] }))).toEqual([])
    // Requests that land on the same item make one mark.
    expect(marks(convertToProviderPrompt(null, PARTS, bytesOf, { cacheBreakpointsAfter: [6, 7] }))).toEqual(['3/0'])
  })

  it('places at most four: the system one and the last three requested', () => {
    const all = PARTS.map((_, i) => i + 1)
    expect(marks(convertToProviderPrompt('Be brief.', PARTS, bytesOf, { cacheBreakpointsAfter: all }))).toEqual(['0/system', '4/0', '5/0', '6/1'])
    // Without instructions (or with empty ones) the four go to the history.
    expect(marks(convertToProviderPrompt(null, PARTS, bytesOf, { cacheBreakpointsAfter: [...all].reverse() }))).toEqual(['2/0', '3/0', '4/0', '5/1'])
    expect(marks(convertToProviderPrompt('', PARTS, bytesOf, { cacheBreakpointsAfter: all }))).toEqual(['3/0', '4/0', '5/0', '6/1'])
    // With only the system message asked for.
    expect(marks(convertToProviderPrompt('Be brief.', PARTS, bytesOf, { cacheBreakpointsAfter: [] }))).toEqual(['0/system'])
  })

  it('never changes the messages and items shared with other turns', () => {
    const plain = convertToProviderPrompt('Be brief.', PARTS, bytesOf)
    const snapshot = structuredClone(plain)
    const marked = convertToProviderPrompt('Be brief.', PARTS, bytesOf, { cacheBreakpointsAfter: [1, 3, 4, 6] })
    // Four asked for beside the system's: the first (the prompt, 1/0) is left out.
    expect(marks(marked)).toEqual(['0/system', '2/1', '2/2', '4/0'])
    // The unmarked conversion, made before and after, is as it was.
    expect(plain).toEqual(snapshot)
    expect(marks(convertToProviderPrompt('Be brief.', PARTS, bytesOf))).toEqual([])
    // The shared objects are still shared where nothing was marked, and copied where something was.
    expect(marked[1]).toBe(plain[1])
    const markedAssistant = marked[2] as Extract<LanguageModelV3Message, { role: 'assistant' }>
    const plainAssistant = plain[2] as Extract<LanguageModelV3Message, { role: 'assistant' }>
    expect(markedAssistant.content[0]).toBe(plainAssistant.content[0])
    expect(markedAssistant.content[2]).not.toBe(plainAssistant.content[2])
    expect(plainAssistant.content[2]!.providerOptions).toBeUndefined()
    expect(marked[4]).not.toBe(plain[4])
    expect((plain[4] as Extract<LanguageModelV3Message, { role: 'user' }>).content[0]!.providerOptions).toBeUndefined()
  })
})
