import { createDeepSeek } from '@ai-sdk/deepseek'
import { createGoogleGenerativeAI } from '@ai-sdk/google'
import { createOpenAI } from '@ai-sdk/openai'
import type { LanguageModelV4, LanguageModelV4Message, LanguageModelV4Prompt } from '@ai-sdk/provider'
import { describe, expect, it } from 'vitest'
import type { PackedPart, RenderedPart } from '../../src/domain/context/context-types.ts'
import type { VendorReplay } from '../../src/domain/parts.ts'
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
const marks = (prompt: LanguageModelV4Prompt) =>
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
    expect((prompt[2] as Extract<LanguageModelV4Message, { role: 'assistant' }>).content[2]).toEqual({
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
    const markedAssistant = marked[2] as Extract<LanguageModelV4Message, { role: 'assistant' }>
    const plainAssistant = plain[2] as Extract<LanguageModelV4Message, { role: 'assistant' }>
    expect(markedAssistant.content[0]).toBe(plainAssistant.content[0])
    expect(markedAssistant.content[2]).not.toBe(plainAssistant.content[2])
    expect(plainAssistant.content[2]!.providerOptions).toBeUndefined()
    expect(marked[4]).not.toBe(plain[4])
    expect((plain[4] as Extract<LanguageModelV4Message, { role: 'user' }>).content[0]!.providerOptions).toBeUndefined()
  })
})

/** The request body a vendor package makes of a prompt: its fetch records the body and refuses, so nothing is sent. */
async function bodySent(make: (fetch: typeof globalThis.fetch) => LanguageModelV4, prompt: LanguageModelV4Prompt, providerOptions = {}): Promise<any> {
  let body: any
  const fetch = (async (_url: unknown, init?: RequestInit) => {
    body = JSON.parse(String(init!.body))
    return new Response('{"error":{"message":"stop here"}}', { status: 400, headers: { 'content-type': 'application/json' } })
  }) as typeof globalThis.fetch
  await Promise.resolve(make(fetch).doStream({ prompt, providerOptions })).catch(() => undefined)
  if (body === undefined) throw new Error('the package sent nothing')
  return body
}
const assistantItems = (prompt: LanguageModelV4Prompt) =>
  prompt.filter((m): m is Extract<LanguageModelV4Message, { role: 'assistant' }> => m.role === 'assistant').map((m) => m.content)

describe('vendor replay data on tool calls and messages (decision 026)', () => {
  const GEMINI_CALL: VendorReplay = { provider: 'google', metadata: { google: { thoughtSignature: 'sig-call' } } }
  const GEMINI_TEXT: VendorReplay = { provider: 'google', metadata: { google: { thoughtSignature: 'sig-text' } } }
  const geminiChat = () => [
    part({ type: 'prompt', text: 'Weather in Oslo?', attachments: [] }),
    part({ type: 'tool_call', toolUseId: 'g1', toolName: 'get_weather', arguments: '{"city":"Oslo"}', replay: GEMINI_CALL }),
    part({ type: 'tool_result', toolUseId: 'g1', toolName: 'get_weather', text: 'sunny', isError: false, attachments: [] }),
    part({ type: 'message', text: 'It is sunny.', replay: GEMINI_TEXT }),
    part({ type: 'prompt', text: 'Thanks!', attachments: [] }),
  ]

  it("Gemini's thought signatures go with the call and the text, as google provider options, to Google only", () => {
    const [call, text] = assistantItems(convertToProviderPrompt(null, geminiChat(), bytesOf, { provider: 'google' }))
    expect(call).toEqual([{ type: 'tool-call', toolCallId: 'g1', toolName: 'get_weather', input: { city: 'Oslo' }, providerOptions: GEMINI_CALL.metadata }])
    expect(text).toEqual([{ type: 'text', text: 'It is sunny.', providerOptions: GEMINI_TEXT.metadata }])
    for (const provider of ['anthropic', 'openai', 'mistral', 'xai', 'sandbox', undefined]) {
      const items = assistantItems(convertToProviderPrompt(null, geminiChat(), bytesOf, provider === undefined ? {} : { provider })).flat()
      expect(items.map((i) => i.providerOptions), String(provider)).toEqual([undefined, undefined])
    }
  })

  it('the Google package puts them on the functionCall part and the text part of the model turn', async () => {
    const body = await bodySent(
      (fetch) => createGoogleGenerativeAI({ apiKey: 'k', baseURL: 'http://replay/google/v1beta', fetch })('gemini-2.5-flash'),
      convertToProviderPrompt(null, geminiChat(), bytesOf, { provider: 'google' }),
    )
    const model = body.contents.filter((c: any) => c.role === 'model').flatMap((c: any) => c.parts)
    expect(model).toEqual([
      { functionCall: { id: 'g1', name: 'get_weather', args: { city: 'Oslo' } }, thoughtSignature: 'sig-call' },
      { text: 'It is sunny.', thoughtSignature: 'sig-text' },
    ])
  })

  const ENCRYPTED: VendorReplay = { provider: 'openai', metadata: { openai: { itemId: 'rs_1', reasoningEncryptedContent: 'gAAAA-enc' } } }
  const openaiLoop = (replay: VendorReplay) => [
    part({ type: 'prompt', text: 'Weather in Oslo?', attachments: [] }),
    part({ type: 'reasoning', text: '', replay }),
    part({ type: 'tool_call', toolUseId: 'call_1', toolName: 'get_weather', arguments: '{"city":"Oslo"}' }),
    part({ type: 'tool_result', toolUseId: 'call_1', toolName: 'get_weather', text: 'sunny', isError: false, attachments: [] }),
  ]

  it('OpenAI: the reasoning item goes back with its id and encrypted content, before the function call, under store: false', async () => {
    const prompt = convertToProviderPrompt(null, openaiLoop(ENCRYPTED), bytesOf, { provider: 'openai' })
    const body = await bodySent((fetch) => createOpenAI({ apiKey: 'k', baseURL: 'http://replay/openai/v1', fetch })('gpt-5'), prompt, { openai: { store: false } })
    expect(body.store).toBe(false)
    // The package asks for the encrypted reasoning of the answer itself, for a reasoning model under store: false.
    expect(body.include).toContain('reasoning.encrypted_content')
    expect(body.input.slice(1)).toEqual([
      { type: 'reasoning', id: 'rs_1', encrypted_content: 'gAAAA-enc', summary: [] },
      // The function call goes without an item id: under store: false the API kept none.
      { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Oslo"}' },
      { type: 'function_call_output', call_id: 'call_1', output: 'sunny' },
    ])
  })

  it('OpenAI: a reasoning id without its encrypted content (turns stored before) is not sent, nor is the encrypted reasoning to another vendor', () => {
    const idOnly: VendorReplay = { provider: 'openai', metadata: { openai: { itemId: 'rs_1', reasoningEncryptedContent: null } } }
    expect(assistantItems(convertToProviderPrompt(null, openaiLoop(idOnly), bytesOf, { provider: 'openai' })).flat().map((i) => i.type)).toEqual(['tool-call'])
    const toAnthropic = convertToProviderPrompt(null, openaiLoop(ENCRYPTED), bytesOf, { provider: 'anthropic' })
    expect(JSON.stringify(toAnthropic)).not.toContain('gAAAA-enc')
  })

  it('DeepSeek: an assistant message with tool calls and no reasoning gets an empty reasoning item, sent as reasoning_content ""', async () => {
    const foreign = [
      part({ type: 'prompt', text: 'Weather in Oslo?', attachments: [] }),
      part({ type: 'message', text: 'Let me check.' }),
      part({ type: 'tool_call', toolUseId: 'toolu_1', toolName: 'get_weather', arguments: '{"city":"Oslo"}' }),
      part({ type: 'tool_result', toolUseId: 'toolu_1', toolName: 'get_weather', text: 'sunny', isError: false, attachments: [] }),
    ]
    const prompt = convertToProviderPrompt(null, foreign, bytesOf, { provider: 'deepseek' })
    expect(assistantItems(prompt)).toEqual([
      [{ type: 'reasoning', text: '' }, { type: 'text', text: 'Let me check.' }, { type: 'tool-call', toolCallId: 'toolu_1', toolName: 'get_weather', input: { city: 'Oslo' } }],
    ])
    const body = await bodySent((fetch) => createDeepSeek({ apiKey: 'k', baseURL: 'http://replay/deepseek', fetch })('deepseek-reasoner'), prompt)
    expect(body.messages.find((m: any) => m.role === 'assistant')).toMatchObject({ content: 'Let me check.', reasoning_content: '', tool_calls: [{ id: 'toolu_1' }] })
    // Only DeepSeek gets it; a message with reasoning of its own keeps just that.
    expect(assistantItems(convertToProviderPrompt(null, foreign, bytesOf, { provider: 'anthropic' }))[0]!.map((i) => i.type)).toEqual(['text', 'tool-call'])
    const withReasoning = [foreign[0]!, part({ type: 'reasoning', text: 'Call it.' }), ...foreign.slice(2)]
    expect(assistantItems(convertToProviderPrompt(null, withReasoning, bytesOf, { provider: 'deepseek' }))[0]!.map((i) => i.type)).toEqual(['reasoning', 'tool-call'])
  })
})
