import { randomUUID } from 'node:crypto'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createContextHistory, type ContextHistory } from '../../src/actors/context-history.ts'
import type { CatalogueEntry } from '../../src/domain/catalogue/catalogue-entry.ts'
import type { ContextBudget, RetentionRules } from '../../src/domain/config/config-types.ts'
import { PLATFORM_DEFAULT_BUDGET, PLATFORM_DEFAULT_RETENTION } from '../../src/domain/config/platform-defaults.ts'
import type { PartBody } from '../../src/domain/parts.ts'
import { estimatePartTokens } from '../../src/domain/context/estimate-part-tokens.ts'
import { convertToProviderPrompt } from '../../src/providers/convert-to-provider-prompt.ts'
import { estimatePromptTokens } from '../../src/providers/estimate-prompt-tokens.ts'
import { openTempStore } from '../helpers/temp-store.ts'

const PNG_1x1 = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64')

const media = (mime_types: string[], max_attachments_per_request: number | null = null) => ({
  user: { mime_types, max_bytes_per_attachment: 1024, max_attachments_per_request },
  tool_result: { mime_types, max_bytes_per_attachment: 1024, max_attachments_per_request },
  assistant: { mime_types: [], max_bytes_per_attachment: 0 },
  max_attachments_per_part: 20,
  configured: true,
})

describe('context history (the chat actor’s kept packing state)', () => {
  let temp: ReturnType<typeof openTempStore>
  let orgId: string
  let chatId: string
  const model: Pick<CatalogueEntry, 'context_window' | 'media' | 'provider' | 'max_request_bytes'> = {
    context_window: 128_000,
    media: media(['image/png']),
    provider: 'sandbox',
    max_request_bytes: 20 * 1024 * 1024,
  }

  beforeEach(() => {
    temp = openTempStore()
    orgId = temp.store.organisations.create('Org', 'org').id
    chatId = temp.store.chats.create({ orgId, namespace: null, title: null, description: null, userMetadata: {} }).id
  })
  afterEach(() => temp.close())

  const run = (status: 'succeeded' | 'failed') => {
    const id = randomUUID()
    temp.store.runs.insert({
      id,
      org_id: orgId,
      chat_id: chatId,
      origin: 'customer',
      model_id: randomUUID(),
      model_name: 'sandbox/echo',
      namespace: null,
      api_key_id: null,
      retry_of: null,
      created_at: new Date().toISOString(),
      manifest: {},
      lease_owner: 'n',
      lease_expires_at: new Date(Date.now() + 30_000).toISOString(),
    })
    const usage = { input_tokens: 0, output_tokens: 0, reasoning_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0 }
    return {
      id,
      end: () =>
        temp.store.runs.finish(id, { status, completedAt: new Date().toISOString(), error: null, stopReason: null, latencyMs: 0, providerRequestId: null, usage }),
    }
  }
  const append = (bodies: PartBody[], runId: string | null = null) =>
    temp.store.parts.append(chatId, bodies.map((body) => ({ body, runId, tokens: estimatePartTokens(body) })))

  const pack = (
    history: ContextHistory,
    options: { rules?: RetentionRules; budget?: ContextBudget; model?: Pick<CatalogueEntry, 'context_window' | 'media' | 'provider' | 'max_request_bytes'>; newParts?: PartBody[] } = {},
  ) =>
    history.pack(chatId, {
      newParts: (options.newParts ?? []).map((body) => ({ body, media: [] })),
      currentRuns: [],
      instructionsTokens: 0,
      toolsTokens: 0,
      rules: options.rules ?? { version: 1 },
      budget: options.budget ?? PLATFORM_DEFAULT_BUDGET,
      model: options.model ?? model,
    })
  const bodiesOf = (packed: ReturnType<typeof pack>) => packed.parts.map((p) => p.content)

  it('packs the parts added since the last turn after the ones it kept, oldest first', () => {
    const history = createContextHistory(temp.store)
    append([{ type: 'prompt', text: 'one' }])
    expect(bodiesOf(pack(history))).toEqual([{ type: 'prompt', text: 'one', attachments: [] }])
    append([{ type: 'message', text: 'two' }])
    const second = pack(history)
    expect(bodiesOf(second)).toEqual([
      { type: 'prompt', text: 'one', attachments: [] },
      { type: 'message', text: 'two' },
    ])
    expect(second.context.segments).toEqual([
      { first_ordinal: second.parts[0]!.ordinal, last_ordinal: second.parts[1]!.ordinal, parts: 2, treatment: 'verbatim', tokens: second.estimatedTokens },
    ])
  })

  it('leaves out the output of a run that failed after it was kept, keeps its input, and drops results of its calls', () => {
    const history = createContextHistory(temp.store)
    const failing = run('failed')
    append(
      [
        { type: 'prompt', text: 'question' },
        { type: 'message', text: 'partial answer' },
        { type: 'tool_call', tool_name: 'lookup', tool_use_id: 'call_1', arguments: '{}' },
      ],
      failing.id,
    )
    expect(pack(history).parts).toHaveLength(3)
    failing.end()
    append([{ type: 'tool_result', tool_name: 'lookup', tool_use_id: 'call_1', text: '', is_error: true, trust: 'trusted', tombstone_reason: 'cancelled' }])
    const after = pack(history)
    expect(after.parts.map((p) => p.kind)).toEqual(['prompt'])
    expect(after.context.segments).toEqual([expect.objectContaining({ parts: 1, treatment: 'verbatim' })])
  })

  it('answers exactly as a fresh reader of the ledger, turn after turn, as the window moves and bodies are let go', () => {
    const kept = createContextHistory(temp.store)
    const ok = run('succeeded')
    const small = { ...model, context_window: 2_000, media: model.media }
    // drop_oldest: under summarize a kept chat also holds the previous turn's verbatim start, which a fresh reader cannot know.
    const budget: ContextBudget = { version: 3, headroom: 0.1, history_mode: 'drop_oldest' }
    for (let i = 0; i < 300; i++) {
      append(
        [
          { type: 'prompt', text: `question ${i} about the ledger and its parts` },
          { type: 'tool_call', tool_name: 'lookup', tool_use_id: `call_${i}`, arguments: `{"q":${i}}` },
          { type: 'tool_result', tool_name: 'lookup', tool_use_id: `call_${i}`, text: `result ${i} `.repeat(20), is_error: false, trust: 'untrusted' },
          { type: 'message', text: `answer ${i}` },
        ],
        ok.id,
      )
      if (i % 25 === 0 || i === 299) {
        const incremental = pack(kept, { rules: PLATFORM_DEFAULT_RETENTION, model: small, budget })
        const fresh = pack(createContextHistory(temp.store), { rules: PLATFORM_DEFAULT_RETENTION, model: small, budget })
        expect(incremental.parts).toEqual(fresh.parts)
        expect(incremental.context).toEqual(fresh.context)
      }
    }
    // A wider window reaches back past the bodies let go: they are read again.
    const wide = { ...model, context_window: 20_000, media: model.media }
    const back = pack(kept, { rules: PLATFORM_DEFAULT_RETENTION, model: wide, budget })
    expect(back.parts).toEqual(pack(createContextHistory(temp.store), { rules: PLATFORM_DEFAULT_RETENTION, model: wide, budget }).parts)
    expect(back.context.dropped!.dropped).toBeLessThan(pack(kept, { rules: PLATFORM_DEFAULT_RETENTION, model: small, budget }).context.dropped!.dropped)
  })

  it('does not keep a chat larger than its byte bound, and still answers from the ledger', () => {
    const tiny = createContextHistory(temp.store, 10)
    append([{ type: 'prompt', text: 'a long enough prompt' }])
    expect(pack(tiny).parts).toHaveLength(1)
    append([{ type: 'prompt', text: 'another' }])
    expect(bodiesOf(pack(tiny)).map((c) => c!.type === 'prompt' && c!.text)).toEqual(['a long enough prompt', 'another'])
  })

  it('sends stored attachment bytes, and the vendor prompt estimates to exactly what packing budgeted (one estimator)', () => {
    const history = createContextHistory(temp.store)
    const ok = run('succeeded')
    temp.store.parts.append(chatId, [
      {
        body: { type: 'prompt', text: 'look at this' },
        runId: ok.id,
        media: [{ mime: 'image/png', bytes: PNG_1x1, filename: 'dot.png', width: 1, height: 1, page_count: null }],
      },
      {
        body: { type: 'prompt', text: 'and this' },
        runId: ok.id,
        media: [{ mime: 'text/plain', bytes: Buffer.from('plain words'), filename: null, width: null, height: null, page_count: null }],
      },
    ])
    append(
      [
        { type: 'reasoning', text: 'thinking it over' },
        { type: 'tool_call', tool_name: 'lookup', tool_use_id: 'call_1', arguments: '{ "q" : 1 }' },
        { type: 'tool_call', tool_name: 'lookup', tool_use_id: 'call_2', arguments: 'not json' },
      ],
      ok.id,
    )
    append([
      { type: 'tool_result', tool_name: 'lookup', tool_use_id: 'call_1', text: 'found it', is_error: false, trust: 'untrusted' },
      { type: 'tool_result', tool_name: 'lookup', tool_use_id: 'call_2', text: '', is_error: true, trust: 'trusted', tombstone_reason: 'abandoned' },
      { type: 'message', text: '', refusal: 'I cannot' },
    ])
    const packed = pack(history, { newParts: [{ type: 'prompt', text: 'now what?' }] })
    const prompt = convertToProviderPrompt('be brief', packed.parts, packed.bytesOf)
    expect(estimatePromptTokens(prompt)).toBe(packed.estimatedTokens + estimatePromptTokens([{ role: 'system', content: 'be brief' }]))
    const image = prompt[1]!.content[1] as { type: string; data: { type: 'data'; data: Uint8Array }; mediaType: string }
    expect(image).toMatchObject({ type: 'file', mediaType: 'image/png', filename: 'dot.png' })
    expect(image.data.type).toBe('data')
    expect(Buffer.from(image.data.data).equals(PNG_1x1)).toBe(true)
    // text/plain is not taken by this model: a marker, with a warning.
    expect(prompt[2]!.content[1]).toEqual({ type: 'text', text: '[attachment unnamed (text/plain, 11 bytes) not sent: the model does not take text/plain here]' })
    expect(packed.warnings.translation).toEqual([expect.objectContaining({ code: 'attachment_replaced_by_marker', details: expect.objectContaining({ mime: 'text/plain' }) })])
    // Arguments as one JSON object every vendor takes.
    const assistant = prompt[3]!
    if (assistant.role !== 'assistant') throw new Error(`expected the assistant message, got ${assistant.role}`)
    const calls = assistant.content.flatMap((c) => (c.type === 'tool-call' ? [c.input] : []))
    expect(calls).toEqual([{ q: 1 }, { arguments: 'not json' }])
  })
})
