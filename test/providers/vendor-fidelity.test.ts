import type { LanguageModelV4FunctionTool, LanguageModelV4Prompt } from '@ai-sdk/provider'
import { createAnthropic } from '@ai-sdk/anthropic'
import { createGoogleGenerativeAI } from '@ai-sdk/google'
import { describe, expect, it } from 'vitest'
import { mergeMetadata } from '../../src/actors/execute-run.ts'
import type { PackedPart, RenderedPart } from '../../src/domain/context/context-types.ts'
import type { VendorReplay } from '../../src/domain/parts.ts'
import { convertToProviderPrompt } from '../../src/providers/convert-to-provider-prompt.ts'
import {
  isErrorWarnings,
  replaysTo,
  replayWarnings,
  requestIdFrom,
  strictWarnings,
  toolsForVendor,
  vendorTranslationWarnings,
  vendorWarning,
} from '../../src/providers/vendor-fidelity.ts'

let ordinal = 0
const part = (content: RenderedPart): PackedPart => ({ ordinal: ++ordinal, kind: content.type as PackedPart['kind'], treatment: 'verbatim', content, tokens: 1 })
const bytesOf = () => new Uint8Array([137, 80, 78, 71])

const SIGNED: VendorReplay = { provider: 'anthropic', metadata: { anthropic: { signature: 'sig-abc' } } }
const REDACTED: VendorReplay = { provider: 'anthropic', metadata: { anthropic: { redactedData: 'enc-xyz' } } }
const GOOGLE: VendorReplay = { provider: 'google', metadata: { google: { thoughtSignature: 'ts-123' } } }

/** A thinking + tool-use exchange: prompt, signed thinking, redacted thinking, the call, its result. */
const exchange = (replay: VendorReplay = SIGNED) => [
  part({ type: 'prompt', text: 'Weather in Oslo?', attachments: [] }),
  part({ type: 'reasoning', text: 'I should call get_weather.', replay }),
  part({ type: 'reasoning', text: '', replay: REDACTED }),
  part({ type: 'tool_call', toolUseId: 'toolu_1', toolName: 'get_weather', arguments: '{"city":"Oslo"}' }),
  part({ type: 'tool_result', toolUseId: 'toolu_1', toolName: 'get_weather', text: 'sunny', isError: false, attachments: [] }),
]

const assistantOf = (prompt: LanguageModelV4Prompt) => prompt.find((m) => m.role === 'assistant')!.content as any[]

describe('reasoning replay data in the provider prompt', () => {
  it('goes with the reasoning part to the vendor that produced it, as its package’s provider options', () => {
    const assistant = assistantOf(convertToProviderPrompt(null, exchange(), bytesOf, { provider: 'anthropic' }))
    expect(assistant.map((i) => i.type)).toEqual(['reasoning', 'reasoning', 'tool-call'])
    expect(assistant[0]).toEqual({ type: 'reasoning', text: 'I should call get_weather.', providerOptions: { anthropic: { signature: 'sig-abc' } } })
    expect(assistant[1]).toEqual({ type: 'reasoning', text: '', providerOptions: { anthropic: { redactedData: 'enc-xyz' } } })
  })

  it('goes to no other vendor, and not when the vendor is not named', () => {
    for (const provider of ['openai', 'google', 'deepseek', undefined]) {
      const assistant = assistantOf(convertToProviderPrompt(null, exchange(), bytesOf, provider === undefined ? {} : { provider }))
      // The thinking text goes without its signature; the redacted block, with no text, not at all.
      expect(assistant.map((i) => i.type), String(provider)).toEqual(['reasoning', 'tool-call'])
      expect(assistant[0].providerOptions, String(provider)).toBeUndefined()
    }
  })

  it('is not shared between turns for different vendors (the same rendered parts)', () => {
    const parts = exchange()
    expect(assistantOf(convertToProviderPrompt(null, parts, bytesOf, { provider: 'anthropic' }))[0].providerOptions).toBeDefined()
    expect(assistantOf(convertToProviderPrompt(null, parts, bytesOf, { provider: 'openai' }))[0].providerOptions).toBeUndefined()
    expect(assistantOf(convertToProviderPrompt(null, parts, bytesOf, { provider: 'anthropic' }))[0].providerOptions).toBeDefined()
  })

  it('Google thought signatures go back to Google only', () => {
    expect(assistantOf(convertToProviderPrompt(null, exchange(GOOGLE), bytesOf, { provider: 'google' }))[0].providerOptions).toEqual({ google: { thoughtSignature: 'ts-123' } })
    expect(assistantOf(convertToProviderPrompt(null, exchange(GOOGLE), bytesOf, { provider: 'anthropic' }))[0].providerOptions).toBeUndefined()
  })

  it('goes back only to the vendor that made it, on the kinds it takes back; OpenAI only with its encrypted content (decision 026)', () => {
    const openaiItem: VendorReplay = { provider: 'openai', metadata: { openai: { itemId: 'rs_1', reasoningEncryptedContent: null } } }
    const openaiEncrypted: VendorReplay = { provider: 'openai', metadata: { openai: { itemId: 'rs_1', reasoningEncryptedContent: 'gAAA' } } }
    expect(replaysTo('openai', 'reasoning', openaiItem)).toBe(false)
    expect(replaysTo('openai', 'reasoning', openaiEncrypted)).toBe(true)
    expect(replaysTo('anthropic', 'reasoning', SIGNED)).toBe(true)
    expect(replaysTo('google', 'reasoning', GOOGLE)).toBe(true)
    expect(replaysTo('google', 'tool_call', GOOGLE)).toBe(true)
    expect(replaysTo('google', 'message', GOOGLE)).toBe(true)
    expect(replaysTo('anthropic', 'reasoning', GOOGLE)).toBe(false)
    expect(replaysTo(undefined, 'reasoning', SIGNED)).toBe(false)
    expect(replaysTo('anthropic', 'reasoning', undefined)).toBe(false)
  })

  it('the Anthropic package makes the signed thinking and redacted_thinking blocks of it, before the tool_use', async () => {
    const prompt = convertToProviderPrompt(null, exchange(), bytesOf, { provider: 'anthropic' })
    let body: any
    const model = createAnthropic({
      apiKey: 'test',
      fetch: async (_url, init) => {
        body = JSON.parse(String(init!.body))
        return new Response('{"type":"error","error":{"type":"invalid_request_error","message":"stop here"}}', { status: 400 })
      },
    })('claude-sonnet-4-5-20250929')
    await Promise.resolve(model.doStream({ prompt, maxOutputTokens: 2000, providerOptions: { anthropic: { thinking: { type: 'enabled', budgetTokens: 1024 } } } })).catch(() => undefined)
    expect(body.messages[1]).toEqual({
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'I should call get_weather.', signature: 'sig-abc' },
        { type: 'redacted_thinking', data: 'enc-xyz' },
        { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } },
      ],
    })
  })

  it('the Google package sends the thought signature with the thought', async () => {
    const prompt = convertToProviderPrompt(null, exchange(GOOGLE), bytesOf, { provider: 'google' })
    let body: any
    const model = createGoogleGenerativeAI({
      apiKey: 'test',
      fetch: async (_url, init) => {
        body = JSON.parse(String(init!.body))
        return new Response('{"error":{"code":400,"message":"stop here","status":"INVALID_ARGUMENT"}}', { status: 400 })
      },
    })('gemini-2.5-flash')
    await Promise.resolve(model.doStream({ prompt })).catch(() => undefined)
    const model1 = body.contents.find((c: any) => c.role === 'model')
    expect(model1.parts[0]).toMatchObject({ text: 'I should call get_weather.', thought: true, thoughtSignature: 'ts-123' })
  })
})

describe('merging a reasoning block’s provider metadata', () => {
  it('keeps what came at the start and adds the signature that came with a later delta', () => {
    const start = mergeMetadata(undefined, { anthropic: { redactedData: null } })
    expect(mergeMetadata(start, { anthropic: { signature: 'sig' } })).toEqual({ anthropic: { redactedData: null, signature: 'sig' } })
    expect(mergeMetadata({ openai: { itemId: 'rs_1' } }, { openai: { reasoningEncryptedContent: null } })).toEqual({
      openai: { itemId: 'rs_1', reasoningEncryptedContent: null },
    })
  })
})

const tool = (name: string, strict?: boolean): LanguageModelV4FunctionTool => ({
  type: 'function',
  name,
  inputSchema: { type: 'object', properties: {} },
  ...(strict === undefined ? {} : { strict }),
})

describe('strict', () => {
  const tools = [tool('a', true), tool('b'), tool('c', false)]

  it('is never sent to DeepSeek, with one warning naming the tools that had it', () => {
    const sent = toolsForVendor('deepseek', tools)
    expect(sent.map((t) => 'strict' in t)).toEqual([false, false, false])
    expect(toolsForVendor('deepseek', tools)).toBe(sent)
    expect(strictWarnings('deepseek', tools)).toEqual([
      { code: 'strict_dropped', message: expect.stringContaining('a, c'), details: { provider: 'deepseek', tools: ['a', 'c'] } },
    ])
  })

  it('is sent as is to the vendors that take it, without a warning', () => {
    for (const provider of ['openai', 'anthropic', 'mistral', 'xai', 'sandbox']) {
      expect(toolsForVendor(provider, tools), provider).toBe(tools)
      expect(strictWarnings(provider, tools), provider).toEqual([])
    }
  })

  it('Google: strict: true validates every call, so a strict: false beside it is warned as not kept', () => {
    expect(toolsForVendor('google', tools)).toBe(tools)
    expect(strictWarnings('google', tools)).toEqual([{ code: 'strict_dropped', message: expect.any(String), details: { provider: 'google', tools: ['c'] } }])
    expect(strictWarnings('google', [tool('b'), tool('c', false)])).toEqual([])
  })

  it('no strict anywhere: nothing to warn, the same tools', () => {
    expect(toolsForVendor('deepseek', [tool('b')])).toEqual([tool('b')])
    expect(strictWarnings('deepseek', [tool('b')])).toEqual([])
  })
})

describe('is_error', () => {
  const image = { kind: 'file' as const, media: { mediaId: 'm', mime: 'image/png', byteLen: 4, filename: null, width: 1, height: 1, pageCount: null } }
  const parts = [
    part({ type: 'tool_result', toolUseId: 't1', toolName: 'x', text: 'boom', isError: true, attachments: [] }),
    part({ type: 'tool_result', toolUseId: 't2', toolName: 'x', text: 'fine', isError: false, attachments: [] }),
    part({ type: 'tool_result', toolUseId: 't3', toolName: 'x', text: 'boom with a picture', isError: true, attachments: [image] }),
  ]

  it('is kept by Anthropic as an error-text result; only a result with attachments loses it', () => {
    const prompt = convertToProviderPrompt(null, parts, bytesOf, { provider: 'anthropic' })
    const outputs = prompt.flatMap((m) => (m.role === 'tool' ? m.content.map((i) => (i.type === 'tool-result' ? i.output.type : i.type)) : []))
    expect(outputs).toEqual(['error-text', 'text', 'content'])
    expect(isErrorWarnings('anthropic', parts)).toEqual([
      { code: 'is_error_dropped', message: expect.any(String), details: { provider: 'anthropic', tool_use_ids: ['t3'] } },
    ])
  })

  it('is warned as dropped for every vendor without the flag, naming each result', () => {
    for (const provider of ['openai', 'google', 'mistral', 'xai', 'deepseek']) {
      expect(isErrorWarnings(provider, parts), provider).toEqual([
        { code: 'is_error_dropped', message: expect.stringContaining('2 result(s)'), details: { provider, tool_use_ids: ['t1', 't3'] } },
      ])
    }
  })

  it('no error results, no warning; the sandbox keeps the flag as Anthropic does', () => {
    expect(isErrorWarnings('openai', [parts[1]!])).toEqual([])
    expect(isErrorWarnings('sandbox', parts.slice(0, 2))).toEqual([])
    expect(isErrorWarnings('sandbox', parts).map((w) => w.details)).toEqual([{ provider: 'sandbox', tool_use_ids: ['t3'] }])
  })

  it('vendorTranslationWarnings gives strict first, then is_error', () => {
    expect(vendorTranslationWarnings('deepseek', parts, [tool('a', true)]).map((w) => w.code)).toEqual(['strict_dropped', 'is_error_dropped'])
  })
})

describe('replay data another vendor made', () => {
  const OPENAI_ENCRYPTED: VendorReplay = { provider: 'openai', metadata: { openai: { itemId: 'rs_1', reasoningEncryptedContent: 'gAAAA' } } }
  const OPENAI_ID_ONLY: VendorReplay = { provider: 'openai', metadata: { openai: { itemId: 'rs_2', reasoningEncryptedContent: null } } }
  const parts = [
    part({ type: 'prompt', text: 'Weather?', attachments: [] }),
    part({ type: 'reasoning', text: 'Think.', replay: SIGNED }),
    part({ type: 'tool_call', toolUseId: 't1', toolName: 'get_weather', arguments: '{}', replay: GOOGLE }),
    part({ type: 'reasoning', text: '', replay: OPENAI_ENCRYPTED }),
    part({ type: 'reasoning', text: '', replay: OPENAI_ID_ONLY }),
    part({ type: 'message', text: 'Sunny.', replay: GOOGLE }),
  ]
  const [, signed, call, encrypted, , text] = parts.map((p) => p.ordinal)

  it('is warned as replay_dropped, one warning naming the parts and the vendors that made them', () => {
    expect(replayWarnings('deepseek', parts)).toEqual([
      {
        code: 'replay_dropped',
        message: expect.stringContaining('4 part(s)'),
        details: { provider: 'deepseek', from: ['anthropic', 'google', 'openai'], ordinals: [signed, call, encrypted, text] },
      },
    ])
  })

  it('does not count the target vendor’s own data, nor data its own vendor would not take back', () => {
    expect(replayWarnings('google', parts)[0]!.details).toEqual({ provider: 'google', from: ['anthropic', 'openai'], ordinals: [signed, encrypted] })
    // OpenAI's id-only reasoning is lost to no one: OpenAI itself is not sent it.
    expect(replayWarnings('anthropic', parts)[0]!.details).toMatchObject({ from: ['google', 'openai'], ordinals: [call, encrypted, text] })
    expect(replayWarnings('anthropic', parts.slice(0, 2))).toEqual([])
  })

  it('comes after strict and is_error in the turn’s translation warnings', () => {
    const error = part({ type: 'tool_result', toolUseId: 't1', toolName: 'get_weather', text: 'boom', isError: true, attachments: [] })
    expect(vendorTranslationWarnings('deepseek', [...parts, error], [tool('a', true)]).map((w) => w.code)).toEqual(['strict_dropped', 'is_error_dropped', 'replay_dropped'])
  })
})

describe('the vendor package’s own warnings', () => {
  it('become vendor_warning translation warnings: its words, kind and feature', () => {
    expect(vendorWarning('anthropic', { type: 'unsupported', feature: 'strict', details: "Tool 'a' has strict: true, but…" })).toEqual({
      code: 'vendor_warning',
      message: "Tool 'a' has strict: true, but…",
      details: { provider: 'anthropic', type: 'unsupported', feature: 'strict' },
    })
    expect(vendorWarning('openai', { type: 'unsupported', feature: 'topK' })).toEqual({
      code: 'vendor_warning',
      message: 'topK is not supported by openai',
      details: { provider: 'openai', type: 'unsupported', feature: 'topK' },
    })
    expect(vendorWarning('openai', { type: 'other', message: 'skipped' })).toEqual({ code: 'vendor_warning', message: 'skipped', details: { provider: 'openai', type: 'other' } })
  })

  it('cut a long message at 500 characters', () => {
    const w = vendorWarning('openai', { type: 'other', message: 'x'.repeat(2000) })
    expect(w.message).toHaveLength(501)
  })
})

describe('the vendor request id', () => {
  it('is the header each vendor names its requests with, any case', () => {
    expect(requestIdFrom('anthropic', { 'request-id': 'req_1', 'x-request-id': 'other' })).toBe('req_1')
    expect(requestIdFrom('openai', { 'X-Request-Id': 'req_2' })).toBe('req_2')
    expect(requestIdFrom('xai', { 'x-request-id': 'req_3' })).toBe('req_3')
    expect(requestIdFrom('mistral', { 'mistral-correlation-id': 'corr', 'x-kong-request-id': 'kong' })).toBe('corr')
    expect(requestIdFrom('deepseek', { 'x-ds-trace-id': 'trace' })).toBe('trace')
  })

  it('is null when the vendor sent none (Google), or no headers at all', () => {
    expect(requestIdFrom('google', { 'content-type': 'text/event-stream' })).toBeNull()
    expect(requestIdFrom('anthropic', undefined)).toBeNull()
    expect(requestIdFrom('anthropic', { 'request-id': '' })).toBeNull()
  })
})

describe('hidden reasoning', () => {
  const hidden = (replay?: VendorReplay) => [
    part({ type: 'prompt', text: 'Hi', attachments: [] }),
    part(replay ? { type: 'reasoning', text: '', replay } : { type: 'reasoning', text: '' }),
    part({ type: 'message', text: 'Hello.' }),
  ]

  it('with no text and nothing this vendor takes, is not sent at all', () => {
    const openaiItem: VendorReplay = { provider: 'openai', metadata: { openai: { itemId: 'rs_1' } } }
    for (const [parts, provider] of [
      [hidden(), 'openai'],
      [hidden(openaiItem), 'openai'],
      [hidden(REDACTED), 'openai'],
      [hidden(), 'anthropic'],
    ] as const) {
      expect(assistantOf(convertToProviderPrompt(null, parts, bytesOf, { provider })).map((i) => i.type)).toEqual(['text'])
    }
  })

  it('with replay data for this vendor (Anthropic redacted thinking), is sent', () => {
    expect(assistantOf(convertToProviderPrompt(null, hidden(REDACTED), bytesOf, { provider: 'anthropic' })).map((i) => i.type)).toEqual(['reasoning', 'text'])
  })
})
