import { randomUUID } from 'node:crypto'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createContextHistory } from '../../src/actors/context-history.ts'
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

  it('reads parts added since the last read, and every ordinal, oldest first', () => {
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
    expect(second.ordinals).toEqual(second.parts.map((p) => p.ordinal))
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
    expect(after.ordinals).toHaveLength(2)
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
})
