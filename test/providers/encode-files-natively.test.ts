import type { LanguageModelV4, LanguageModelV4CallOptions } from '@ai-sdk/provider'
import { describe, expect, test } from 'vitest'
import { encodeFilesNatively } from '../../src/providers/encode-files-natively.ts'

/** A model that records the options it was called with. */
const recording = () => {
  const calls: LanguageModelV4CallOptions[] = []
  const model = {
    specificationVersion: 'v4',
    provider: 'xai.chat',
    modelId: 'grok-4-fast',
    supportedUrls: { 'image/*': [/^https:/] },
    doGenerate: async (options: LanguageModelV4CallOptions) => {
      calls.push(options)
      return {} as never
    },
    doStream: async (options: LanguageModelV4CallOptions) => {
      calls.push(options)
      return {} as never
    },
  } as unknown as LanguageModelV4
  return { model, calls }
}

describe('encodeFilesNatively', () => {
  test('attachments reach the vendor package as base64 strings of the same bytes; nothing else changes', async () => {
    const { model, calls } = recording()
    const bytes = new Uint8Array(300_000).map((_, i) => (i * 7919) % 256)
    const view = new Uint8Array(bytes.buffer, 1000, 200_000)
    const options: LanguageModelV4CallOptions = {
      prompt: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'file', mediaType: 'image/png', data: { type: 'data', data: view }, filename: 'a.png' }] },
        { role: 'assistant', content: [{ type: 'text', text: 'seen' }] },
        { role: 'user', content: [{ type: 'file', mediaType: 'application/pdf', data: { type: 'data', data: 'JVBERi0=' } }] },
      ],
      maxOutputTokens: 10,
    }
    const wrapped = encodeFilesNatively(model)
    expect([wrapped.provider, wrapped.modelId, wrapped.supportedUrls]).toEqual([model.provider, model.modelId, model.supportedUrls])
    await wrapped.doStream(options)
    const sent = calls[0]!
    expect(sent.maxOutputTokens).toBe(10)
    expect(sent.prompt[0]).toBe(options.prompt[0])
    expect(sent.prompt[1]!.content).toEqual([
      { type: 'text', text: 'look' },
      { type: 'file', mediaType: 'image/png', data: { type: 'data', data: Buffer.from(bytes.subarray(1000, 201_000)).toString('base64') }, filename: 'a.png' },
    ])
    expect(sent.prompt[2]).toBe(options.prompt[2])
    expect(sent.prompt[3]).toBe(options.prompt[3])
    // The caller's prompt is not changed.
    expect((options.prompt[1]!.content[1] as { data: { data: unknown } }).data.data).toBe(view)
  })

  test('a prompt without bytes is passed as it is', async () => {
    const { model, calls } = recording()
    const options: LanguageModelV4CallOptions = { prompt: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }] }
    await encodeFilesNatively(model).doGenerate(options)
    expect(calls[0]).toBe(options)
  })
})
