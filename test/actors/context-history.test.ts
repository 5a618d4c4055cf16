import { randomUUID } from 'node:crypto'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createContextHistory, type ContextHistory, type PackableHistory } from '../../src/actors/context-history.ts'
import type { CatalogueEntry } from '../../src/domain/catalogue/catalogue-entry.ts'
import type { PartBody } from '../../src/domain/parts.ts'
import { convertToProviderPrompt, promptOf } from '../../src/providers/convert-to-provider-prompt.ts'
import { estimatePromptTokens } from '../../src/providers/estimate-prompt-tokens.ts'
import { openTempStore } from '../helpers/temp-store.ts'

describe('context history', () => {
  let temp: ReturnType<typeof openTempStore>
  let orgId: string
  let chatId: string

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

  it('reads parts added since the last read, oldest first', () => {
    const history = createContextHistory(temp.store)
    temp.store.parts.append(chatId, [{ body: { type: 'prompt', text: 'one' }, tokens: 3 }])
    const first = history.read(chatId)
    expect(first.parts.map((p) => p.body)).toEqual([{ type: 'prompt', text: 'one' }])
    expect(first.tokens).toBe(3)

    temp.store.parts.append(chatId, [{ body: { type: 'message', text: 'two' }, tokens: 4 }])
    const second = history.read(chatId)
    expect(second.parts.map((p) => p.body)).toEqual([
      { type: 'prompt', text: 'one' },
      { type: 'message', text: 'two' },
    ])
    expect(second.tokens).toBe(7)
    expect(second.leftOut).toEqual([])
  })

  it('leaves out the output of a run that failed after its output was read, but keeps its input', () => {
    const history = createContextHistory(temp.store)
    const failing = run('failed')
    temp.store.parts.append(chatId, [
      { body: { type: 'prompt', text: 'question' }, runId: failing.id, tokens: 2 },
      { body: { type: 'message', text: 'partial answer' }, runId: failing.id, tokens: 5 },
    ])
    expect(history.read(chatId).parts).toHaveLength(2)
    failing.end()
    const after = history.read(chatId)
    expect(after.parts.map((p) => p.body.type)).toEqual(['prompt'])
    expect(after.tokens).toBe(2)
    expect(after.leftOut).toEqual([after.parts[0]!.ordinal + 1])
  })

  it('answers the same as a fresh reader over the ledger, whatever it kept', () => {
    const kept = createContextHistory(temp.store)
    const ok = run('succeeded')
    for (let i = 0; i < 5; i++) {
      temp.store.parts.append(chatId, [{ body: { type: 'prompt', text: `p${i}` }, runId: ok.id, tokens: 1 }])
      kept.read(chatId)
    }
    ok.end()
    expect(kept.read(chatId)).toEqual(createContextHistory(temp.store).read(chatId))
  })

  it('does not keep a chat larger than its byte bound, and still answers from the ledger', () => {
    const tiny = createContextHistory(temp.store, 10)
    temp.store.parts.append(chatId, [{ body: { type: 'prompt', text: 'a long enough prompt' }, tokens: 5 }])
    expect(tiny.read(chatId).parts).toHaveLength(1)
    temp.store.parts.append(chatId, [{ body: { type: 'prompt', text: 'another' }, tokens: 2 }])
    const again = tiny.read(chatId)
    expect(again.parts.map((p) => p.body)).toEqual([
      { type: 'prompt', text: 'a long enough prompt' },
      { type: 'prompt', text: 'another' },
    ])
    expect(again.tokens).toBe(7)
  })

  describe('conversion kept between turns', () => {
    const model = { media: { user: { mime_types: ['image/png'], max_bytes_per_attachment: 1024 }, tool_result: { mime_types: [], max_bytes_per_attachment: 0 } } } as unknown as Pick<CatalogueEntry, 'media'>
    const fresh = (packable: PackableHistory) => {
      const whole = convertToProviderPrompt('be brief', packable.parts, model)
      return { prompt: whole.value, warnings: whole.warnings, tokens: estimatePromptTokens(whole.value) }
    }
    const kept = (history: ContextHistory, packable: PackableHistory) => {
      const conversion = history.convert(chatId, packable, model)
      const prompt = promptOf('be brief', conversion)
      return { prompt, warnings: [...conversion.warnings], tokens: estimatePromptTokens(prompt, []) }
    }

    it('extends the kept conversion turn by turn to exactly what converting the whole history gives', () => {
      const history = createContextHistory(temp.store)
      const ok = run('succeeded')
      const turns: PartBody[][] = [
        [{ type: 'prompt', text: 'first question, long enough to be remembered by the estimator' }],
        [
          { type: 'reasoning', text: 'thinking' },
          { type: 'message', text: 'an answer' },
          { type: 'tool_call', tool_name: 'lookup', tool_use_id: 'call_1', arguments: '{"q":1}' },
        ],
        [{ type: 'tool_result', tool_name: 'lookup', tool_use_id: 'call_1', text: 'found', is_error: false, trust: 'untrusted' }],
        [{ type: 'message', text: 'with the result' }],
        [{ type: 'tool_result', tool_name: 'ghost', tool_use_id: 'call_unknown', text: 'no call', is_error: false, trust: 'trusted' }],
      ]
      for (const bodies of turns) {
        temp.store.parts.append(chatId, bodies.map((body) => ({ body, runId: ok.id, tokens: 1 })))
        const packable = history.read(chatId)
        const incremental = kept(history, packable)
        const whole = fresh(packable)
        expect(incremental.prompt).toEqual(whole.prompt)
        expect(incremental.warnings).toEqual(whole.warnings)
        expect(history.convert(chatId, packable, model).tokens + estimatePromptTokens([{ role: 'system', content: 'be brief' }])).toBe(whole.tokens)
      }
    })

    it('converts afresh when a run fails after its output was kept', () => {
      const history = createContextHistory(temp.store)
      const failing = run('failed')
      temp.store.parts.append(chatId, [
        { body: { type: 'prompt', text: 'question' }, runId: failing.id, tokens: 1 },
        { body: { type: 'message', text: 'doomed answer' }, runId: failing.id, tokens: 1 },
      ])
      const before = history.read(chatId)
      expect(kept(history, before).prompt.map((m) => m.role)).toEqual(['system', 'user', 'assistant'])
      failing.end()
      temp.store.parts.append(chatId, [{ body: { type: 'prompt', text: 'again' }, tokens: 1 }])
      const after = history.read(chatId)
      expect(kept(history, after).prompt).toEqual(fresh(after).prompt)
      expect(kept(history, after).prompt.map((m) => m.role)).toEqual(['system', 'user', 'user'])
    })

    it('never changes a conversion it handed out when the next turn extends it', () => {
      const history = createContextHistory(temp.store)
      temp.store.parts.append(chatId, [{ body: { type: 'message', text: 'one' }, tokens: 1 }])
      const first = history.convert(chatId, history.read(chatId), model)
      const snapshot = structuredClone(first.messages)
      temp.store.parts.append(chatId, [{ body: { type: 'message', text: 'two' }, tokens: 1 }])
      const second = history.convert(chatId, history.read(chatId), model)
      expect(first.messages).toEqual(snapshot)
      expect(second.messages).toEqual([{ role: 'assistant', content: [{ type: 'text', text: 'one' }, { type: 'text', text: 'two' }] }])
    })
  })
})
