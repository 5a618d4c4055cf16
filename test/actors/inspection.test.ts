import { describe, expect, it } from 'vitest'
import { startInspectRelay } from '../../src/cli/inspect-relay-server.ts'
import { freePort } from '../e2e/server-process.ts'
import { inspectionSetting, redactContent, redactInspectionEvent, relayAnswers } from '../../src/actors/inspection.ts'

describe('redactContent', () => {
  it('keeps ids, states and numbers; replaces any other string by its length and content keys whole', () => {
    const redacted = redactContent({
      type: 'SUBMIT',
      chatId: 'c-1',
      note: 'a customer wrote this',
      count: 3,
      ok: true,
      arguments: { city: 'Oslo', pin: 1234 },
      parts: [{ type: 'prompt', text: 'hello' }],
    })
    expect(redacted).toEqual({
      type: 'SUBMIT',
      chatId: 'c-1',
      note: '[21 chars]',
      count: 3,
      ok: true,
      arguments: '[2 keys]',
      parts: [{ type: 'prompt', text: '[5 chars]' }],
    })
  })

  it('replaces bytes by their size, class instances by their name, errors by their name and code', () => {
    class Channel {
      secret = 'x'
    }
    const error = Object.assign(new Error('vendor said: secret prompt'), { code: 'upstream_error' })
    expect(redactContent({ bytes: Buffer.from('abc'), raw: new Uint8Array(4), channel: new Channel(), abort: new AbortController(), error })).toEqual({
      bytes: '[3 bytes]',
      raw: '[4 bytes]',
      channel: '[Channel]',
      abort: '[AbortController]',
      error: { name: 'Error', code: 'upstream_error', message: '[26 chars]' },
    })
  })

  it('keeps a safe key\'s string only while it is short', () => {
    expect(redactContent({ name: 'x'.repeat(201) })).toEqual({ name: '[201 chars]' })
  })

  it('survives cycles and depth, and redacting twice changes nothing', () => {
    const looped: Record<string, unknown> = { note: 'secret' }
    looped.self = looped
    const once = redactContent(looped)
    expect(once).toEqual({ note: '[6 chars]', self: '[circular]' })
    expect(redactContent(once)).toEqual(once)
    let deep: Record<string, unknown> = { text: 'bottom' }
    for (let i = 0; i < 30; i++) deep = { next: deep }
    expect(JSON.stringify(redactContent(deep))).not.toContain('bottom')
  })
})

describe('redactInspectionEvent', () => {
  it('keeps the event\'s own fields and the snapshot\'s state; redacts context, input, output and the event', () => {
    const event = {
      type: '@xstate.snapshot',
      sessionId: 'x:1',
      definition: '{"id":"chat"}',
      event: { type: 'xstate.done.actor.admitTurn', output: { runId: 'r1', prompt: [{ role: 'system', content: 'secret instructions' }] } },
      snapshot: {
        status: 'active',
        value: { running: 'streaming' },
        context: { chatId: 'c1', queued: { submission: { parts: [{ type: 'tool_call', arguments: '{"q":"secret"}' }] } } },
        input: { submission: { text: 'secret' } },
        output: { summary: 'secret' },
      },
    }
    const redacted = redactInspectionEvent(event)
    expect(JSON.stringify(redacted)).not.toContain('secret')
    expect(redacted).toMatchObject({
      type: '@xstate.snapshot',
      sessionId: 'x:1',
      definition: '{"id":"chat"}',
      event: { type: 'xstate.done.actor.admitTurn', output: { runId: 'r1', prompt: '[1 items]' } },
      snapshot: { status: 'active', value: { running: 'streaming' }, context: { chatId: 'c1' } },
    })
  })
})

describe('inspectionSetting', () => {
  it('off without STATELY_INSPECT; content redacted unless STATELY_INSPECT_CONTENT=on', () => {
    expect(inspectionSetting({})).toEqual({ kind: 'off' })
    expect(inspectionSetting({ STATELY_INSPECT: 'ws://127.0.0.1:4242' })).toEqual({ kind: 'on', url: 'ws://127.0.0.1:4242', content: 'redacted' })
    expect(inspectionSetting({ STATELY_INSPECT: 'ws://127.0.0.1:4242', STATELY_INSPECT_CONTENT: 'yes' })).toMatchObject({ content: 'redacted' })
    expect(inspectionSetting({ STATELY_INSPECT: 'ws://h:1', STATELY_INSPECT_CONTENT: 'on' })).toMatchObject({ content: 'sent' })
  })
})

describe('relayAnswers', () => {
  it('is true where the relay listens', async () => {
    const relay = await startInspectRelay({ host: '127.0.0.1', port: await freePort() })
    try {
      expect(await relayAnswers(relay.url)).toBe(true)
    } finally {
      await relay.stop()
    }
  })

  it('is false for a closed port and for a URL that is not one', async () => {
    expect(await relayAnswers('ws://127.0.0.1:1', 500)).toBe(false)
    expect(await relayAnswers('not a url')).toBe(false)
  })
})
