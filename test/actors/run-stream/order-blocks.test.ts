import type { LanguageModelV4StreamPart } from '@ai-sdk/provider'
import { describe, expect, it } from 'vitest'
import { endOfStream, initialRunStream, step, type Effect, type RunStreamState } from '../../../src/actors/run-stream/order-blocks.ts'
import { ANTHROPIC_OVERLOADED_MID } from '../../e2e/vendor-fixtures/anthropic.ts'
import { ANTHROPIC_REDACTED_DATA, ANTHROPIC_THINKING_SIGNATURE, ANTHROPIC_THINKING_TOOL_CALL } from '../../e2e/vendor-fixtures/anthropic-thinking.ts'
import { DEEPSEEK_PARALLEL_CALLS } from '../../e2e/vendor-fixtures/deepseek.ts'
import { GEMINI_SIGNED_ANSWER, GEMINI_SIGNED_TOOL_CALL } from '../../e2e/vendor-fixtures/google-signatures.ts'
import { FIXTURES, type Vendor } from '../../e2e/vendor-fixtures/index.ts'
import { OPENAI_REASONING_TOOL_CALL } from '../../e2e/vendor-fixtures/openai-reasoning.ts'
import { recordParts } from './record-parts.ts'

/** The reducer over a whole part sequence, then the stream's end: the final state and every effect in order. */
function run(provider: string, parts: LanguageModelV4StreamPart[], options: { end?: boolean } = {}): { state: RunStreamState; effects: Effect[] } {
  let state = initialRunStream(provider)
  const effects: Effect[] = []
  for (const part of parts) {
    const next = step(state, part)
    state = next.state
    effects.push(...next.effects)
    if (state.failure) break
  }
  if (options.end !== false) {
    const ended = endOfStream(state)
    state = ended.state
    effects.push(...ended.effects)
  }
  return { state, effects }
}

/** Effects as short lines: `frame block_start text`, `frame delta reasoning "…"`, `persist message "…"`. */
const lines = (effects: Effect[]) =>
  effects.map((e) => {
    if (e.type === 'persist') {
      const b = e.body as Record<string, unknown>
      return `persist ${b.type} ${JSON.stringify(b.type === 'tool_call' ? b.arguments : b.refusal ?? b.text)}`
    }
    if (e.type === 'record_warnings') return `record_warnings ${e.warnings.length}`
    const d = e.data as Record<string, unknown>
    if (e.event === 'block_start') return `block_start ${d.kind}${d.tool_use_id ? ` ${d.tool_use_id}` : ''}`
    if (e.event === 'delta') return `delta ${d.kind} ${JSON.stringify(d.text)}`
    return e.event
  })

const persisted = (effects: Effect[]) => effects.flatMap((e) => (e.type === 'persist' ? [e.body] : []))
const deltaText = (effects: Effect[], kind: string) =>
  effects.flatMap((e) => (e.type === 'frame' && e.event === 'delta' && (e.data as { kind: string }).kind === kind ? [(e.data as { text: string }).text] : [])).join('')

/** The wire's invariants: one block at a time, each persisted right before its block_stop. */
function expectWellFormed(effects: Effect[]) {
  let open = false
  for (const [i, e] of effects.entries()) {
    if (e.type === 'frame' && e.event === 'block_start') {
      expect(open, `block_start at ${i} while a block is open`).toBe(false)
      open = true
    } else if (e.type === 'frame' && e.event === 'delta') expect(open, `delta at ${i} outside a block`).toBe(true)
    else if (e.type === 'persist') {
      expect(open).toBe(true)
      expect(effects[i + 1]).toEqual({ type: 'frame', event: 'block_stop', data: {} })
    } else if (e.type === 'frame' && e.event === 'block_stop') {
      expect(effects[i - 1]?.type).toBe('persist')
      open = false
    }
  }
  expect(open, 'a block left open').toBe(false)
}

describe('every vendor fixture, through the real vendor package', () => {
  const vendors = Object.keys(FIXTURES) as Vendor[]
  it.each(vendors)('%s: a text answer streams its reasoning and text, persists them, and finishes', async (vendor) => {
    const fixture = FIXTURES[vendor].text
    const { state, effects } = run(vendor, await recordParts(vendor, fixture.response))
    expectWellFormed(effects)
    expect(deltaText(effects, 'text')).toBe(fixture.text)
    expect(deltaText(effects, 'reasoning')).toBe(fixture.reasoning)
    expect(persisted(effects).filter((b) => b.type === 'message')).toEqual([{ type: 'message', text: fixture.text }])
    expect(state).toMatchObject({ finished: true, stopReason: 'end_turn', failure: null, wire: [] })
    expect(state.usage).not.toBeNull()
    expect(state.providerResponseId).not.toBeNull()
  })

  it.each(vendors)('%s: a tool call is announced with its id, persisted with its arguments, and ends on tool_use', async (vendor) => {
    const fixture = FIXTURES[vendor].toolCall
    const { state, effects } = run(vendor, await recordParts(vendor, fixture.response))
    expectWellFormed(effects)
    expect(deltaText(effects, 'tool_input')).toBe(fixture.arguments)
    const calls = persisted(effects).filter((b) => b.type === 'tool_call')
    // Only Gemini's calls carry replay data its vendor takes back: the fixture's functionCall is signed (decision 026).
    const replay = vendor === 'google' ? { replay: { provider: 'google', metadata: { google: { thoughtSignature: expect.any(String) } } } } : {}
    expect(calls).toEqual([{ type: 'tool_call', tool_name: 'get_weather', arguments: fixture.arguments, tool_use_id: fixture.toolCallId ?? expect.any(String), ...replay }])
    expect(state).toMatchObject({ finished: true, stopReason: 'tool_use' })
  })
})

describe('overlapping blocks go out in the order they started', () => {
  it('DeepSeek starts its text before it ends its reasoning: the text waits, then follows the reasoning', async () => {
    const parts = await recordParts('deepseek', FIXTURES.deepseek.text.response)
    // As recorded: text-start comes before reasoning-end.
    const types = parts.map((p) => p.type)
    expect(types.indexOf('text-start')).toBeLessThan(types.indexOf('reasoning-end'))
    // Move the reasoning's end after the first text delta, as the vendor may also send it.
    const end = parts.find((p) => p.type === 'reasoning-end')!
    const reordered = parts.filter((p) => p !== end)
    reordered.splice(reordered.findIndex((p) => p.type === 'text-delta') + 1, 0, end)

    for (const sequence of [parts, reordered]) {
      const { effects } = run('deepseek', sequence)
      expect(lines(effects)).toEqual([
        'block_start reasoning',
        'delta reasoning "The user asks for"',
        `delta reasoning " Norway's capital."`,
        'delta reasoning " That is Oslo."',
        `persist reasoning "The user asks for Norway's capital. That is Oslo."`,
        'block_stop',
        'block_start text',
        // In the reordered stream the first delta waited behind the reasoning and goes out whole.
        'delta text "The capital"',
        'delta text " of Norway is"',
        'delta text " Oslo."',
        'persist message "The capital of Norway is Oslo."',
        'block_stop',
      ])
    }
  })

  it('DeepSeek parallel tool calls: the second call gathers its arguments until the first has stopped', async () => {
    const { state, effects } = run('deepseek', await recordParts('deepseek', DEEPSEEK_PARALLEL_CALLS.response))
    const [oslo, bergen] = DEEPSEEK_PARALLEL_CALLS.calls
    expect(lines(effects)).toEqual([
      'block_start reasoning',
      'delta reasoning "Both cities, one call each."',
      'persist reasoning "Both cities, one call each."',
      'block_stop',
      `block_start tool_call ${oslo!.id}`,
      'delta tool_input "{\\"city\\""',
      'delta tool_input ":\\"Oslo\\"}"',
      `persist tool_call ${JSON.stringify(oslo!.arguments)}`,
      'block_stop',
      `block_start tool_call ${bergen!.id}`,
      // Its three fragments arrived while the first call was on the wire: they go out as one.
      `delta tool_input ${JSON.stringify(bergen!.arguments)}`,
      `persist tool_call ${JSON.stringify(bergen!.arguments)}`,
      'block_stop',
    ])
    expect(state.stopReason).toBe('tool_use')
  })

  it('a block that ends before the one ahead of it waits, then goes out whole', () => {
    const { effects } = run('sandbox', [
      { type: 'text-start', id: 'a' },
      { type: 'text-start', id: 'b' },
      { type: 'text-delta', id: 'b', delta: 'second' },
      { type: 'text-end', id: 'b' },
      { type: 'text-delta', id: 'a', delta: 'first' },
      { type: 'text-end', id: 'a' },
    ])
    expect(lines(effects)).toEqual([
      'block_start text',
      'delta text "first"',
      'persist message "first"',
      'block_stop',
      'block_start text',
      'delta text "second"',
      'persist message "second"',
      'block_stop',
    ])
  })
})

describe('what each block persists', () => {
  it('Anthropic thinking: the signature and the redacted data are kept as replay data with the reasoning', async () => {
    const { effects } = run('anthropic', await recordParts('anthropic', ANTHROPIC_THINKING_TOOL_CALL.response))
    expectWellFormed(effects)
    const [thinking, redacted, call] = persisted(effects)
    expect(thinking).toEqual({
      type: 'reasoning',
      text: ANTHROPIC_THINKING_TOOL_CALL.thinking,
      replay: { provider: 'anthropic', metadata: { anthropic: expect.objectContaining({ signature: ANTHROPIC_THINKING_SIGNATURE }) } },
    })
    expect(redacted).toEqual({
      type: 'reasoning',
      text: '',
      replay: { provider: 'anthropic', metadata: { anthropic: expect.objectContaining({ redactedData: ANTHROPIC_REDACTED_DATA }) } },
    })
    expect(call).toEqual({ type: 'tool_call', tool_name: 'get_weather', tool_use_id: ANTHROPIC_THINKING_TOOL_CALL.toolUseId, arguments: ANTHROPIC_THINKING_TOOL_CALL.arguments })
    // The redacted block has no text: announced only when it stops.
    expect(lines(effects).slice(6, 9)).toEqual(['block_start reasoning', 'persist reasoning ""', 'block_stop'])
  })

  it('gpt-5 under store: false: the reasoning item keeps its id and encrypted content; the call keeps no OpenAI item id', async () => {
    const fixture = OPENAI_REASONING_TOOL_CALL
    const { effects } = run('openai', await recordParts('openai', fixture.response))
    expectWellFormed(effects)
    expect(persisted(effects)).toEqual([
      {
        type: 'reasoning',
        text: '',
        replay: { provider: 'openai', metadata: { openai: { itemId: fixture.reasoningItemId, reasoningEncryptedContent: fixture.encryptedContent } } },
      },
      // OpenAI takes no function-call item id back under store: false (decision 026): none is stored.
      { type: 'tool_call', tool_name: 'get_weather', tool_use_id: fixture.callId, arguments: fixture.arguments },
    ])
    // The encrypted reasoning never goes out on the wire to the customer.
    expect(JSON.stringify(effects.filter((e) => e.type === 'frame'))).not.toContain(fixture.encryptedContent)
  })

  it('an OpenAI message keeps no item id (OpenAI is not sent message ids)', async () => {
    const { effects } = run('openai', await recordParts('openai', FIXTURES.openai.text.response))
    expect(persisted(effects).filter((b) => b.type === 'message')).toEqual([{ type: 'message', text: FIXTURES.openai.text.text }])
  })

  it("Gemini: the functionCall's thought signature is kept with the tool call, a text part's with the message", async () => {
    const call = run('google', await recordParts('google', GEMINI_SIGNED_TOOL_CALL.response))
    expectWellFormed(call.effects)
    const [thought, toolCall] = persisted(call.effects)
    expect(thought).toEqual({ type: 'reasoning', text: GEMINI_SIGNED_TOOL_CALL.thought })
    expect(toolCall).toEqual({
      type: 'tool_call',
      tool_name: 'get_weather',
      tool_use_id: expect.any(String),
      arguments: JSON.stringify(GEMINI_SIGNED_TOOL_CALL.arguments),
      replay: { provider: 'google', metadata: { google: { thoughtSignature: GEMINI_SIGNED_TOOL_CALL.signature } } },
    })

    const answer = run('google', await recordParts('google', GEMINI_SIGNED_ANSWER.response))
    // The signature came with the answer's last text part: it is the message's, merged over the block.
    expect(persisted(answer.effects)).toEqual([
      { type: 'message', text: GEMINI_SIGNED_ANSWER.text, replay: { provider: 'google', metadata: { google: { thoughtSignature: GEMINI_SIGNED_ANSWER.signature } } } },
    ])
    expect(JSON.stringify(answer.effects.filter((e) => e.type === 'frame'))).not.toContain(GEMINI_SIGNED_ANSWER.signature)
  })

  it('a signature on a text delta with no text is kept; a refusal keeps none; a vendor that takes none back stores none on texts', () => {
    const signed = { google: { thoughtSignature: 'sig-late' } }
    const google = run('google', [
      { type: 'text-start', id: 't' },
      { type: 'text-delta', id: 't', delta: 'Done.' },
      { type: 'text-delta', id: 't', delta: '', providerMetadata: signed },
      { type: 'text-end', id: 't' },
    ])
    expect(persisted(google.effects)).toEqual([{ type: 'message', text: 'Done.', replay: { provider: 'google', metadata: signed } }])

    const refusal = run('sandbox', [
      { type: 'text-start', id: 'r', providerMetadata: { sandbox: { refusal: true } } },
      { type: 'text-delta', id: 'r', delta: 'No.', providerMetadata: { sandbox: { note: 1 } } },
      { type: 'text-end', id: 'r' },
    ])
    expect(persisted(refusal.effects)).toEqual([{ type: 'message', text: '', refusal: 'No.' }])

    const mistral = run('mistral', [
      { type: 'text-start', id: 't', providerMetadata: { mistral: { anything: 1 } } },
      { type: 'text-delta', id: 't', delta: 'Hi.' },
      { type: 'text-end', id: 't' },
    ])
    expect(persisted(mistral.effects)).toEqual([{ type: 'message', text: 'Hi.' }])
  })

  it('a tool call gathers its replay data from its start, its deltas and the tool-call part', () => {
    const { effects } = run('google', [
      { type: 'tool-input-start', id: 'c', toolName: 'search', providerMetadata: { google: { thoughtSignature: 'sig-1' } } },
      { type: 'tool-input-delta', id: 'c', delta: '{"q":"oslo"}' },
      { type: 'tool-call', toolCallId: 'c', toolName: 'search', input: '{"q":"oslo"}', providerMetadata: { google: { thoughtSignature: 'sig-2' } } },
    ])
    expect(persisted(effects)).toEqual([
      { type: 'tool_call', tool_name: 'search', tool_use_id: 'c', arguments: '{"q":"oslo"}', replay: { provider: 'google', metadata: { google: { thoughtSignature: 'sig-2' } } } },
    ])
  })

  it('a tool call sent only as a tool-call part (no input deltas) goes out with its arguments as one delta', async () => {
    const parts = (await recordParts('mistral', FIXTURES.mistral.toolCall.response)).filter((p) => !p.type.startsWith('tool-input'))
    const { effects } = run('mistral', parts)
    expect(lines(effects)).toEqual([
      'block_start tool_call D681PevKs',
      `delta tool_input ${JSON.stringify(FIXTURES.mistral.toolCall.arguments)}`,
      `persist tool_call ${JSON.stringify(FIXTURES.mistral.toolCall.arguments)}`,
      'block_stop',
    ])
  })

  it("a tool-call part's final arguments replace the streamed ones in the ledger", () => {
    const { effects } = run('sandbox', [
      { type: 'tool-input-start', id: 'c1', toolName: 'search' },
      { type: 'tool-input-delta', id: 'c1', delta: '{"q": "oslo"' },
      { type: 'tool-call', toolCallId: 'c1', toolName: 'search', input: '{"q":"oslo"}' },
    ])
    expect(persisted(effects)).toEqual([{ type: 'tool_call', tool_name: 'search', tool_use_id: 'c1', arguments: '{"q":"oslo"}' }])
  })

  it('a refusal block (the sandbox marks its text-start) streams and persists as a refusal', () => {
    const { effects } = run('sandbox', [
      { type: 'text-start', id: 'r', providerMetadata: { sandbox: { refusal: true } } },
      { type: 'text-delta', id: 'r', delta: 'I cannot help with that.' },
      { type: 'text-end', id: 'r' },
    ])
    expect(lines(effects)).toEqual(['block_start refusal', 'delta refusal "I cannot help with that."', 'persist message "I cannot help with that."', 'block_stop'])
    expect(persisted(effects)).toEqual([{ type: 'message', text: '', refusal: 'I cannot help with that.' }])
  })
})

describe('how the stream ends', () => {
  it('an error part mid-answer fails the run as upstream_error; the text so far is kept', async () => {
    const { state, effects } = run('anthropic', await recordParts('anthropic', ANTHROPIC_OVERLOADED_MID.response))
    expect(state.failure).toEqual({ code: 'upstream_error', message: expect.stringMatching(/^the provider failed mid-stream: .*Overloaded/) })
    expectWellFormed(effects)
    expect(persisted(effects)).toEqual([{ type: 'message', text: ANTHROPIC_OVERLOADED_MID.partialText }])
    expect(state.finished).toBe(false)
  })

  it('the stream ending (a cancel) keeps the open blocks with text, in order, and drops those without', () => {
    const { effects } = run('sandbox', [
      { type: 'reasoning-start', id: 'r' },
      { type: 'reasoning-delta', id: 'r', delta: 'thinking' },
      { type: 'text-start', id: 't' },
      { type: 'text-delta', id: 't', delta: 'waiting' },
      { type: 'tool-input-start', id: 'c', toolName: 'search' },
    ])
    expect(lines(effects)).toEqual([
      'block_start reasoning',
      'delta reasoning "thinking"',
      'persist reasoning "thinking"',
      'block_stop',
      'block_start text',
      'delta text "waiting"',
      'persist message "waiting"',
      'block_stop',
    ])
  })

  it('a finish without a vendor reason is no finish, and reports no usage', () => {
    const { state } = run('openai', [
      { type: 'text-start', id: 't' },
      { type: 'text-delta', id: 't', delta: 'cut' },
      { type: 'finish', finishReason: { unified: 'other', raw: undefined }, usage: { inputTokens: { total: undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: undefined, text: undefined, reasoning: undefined } } },
    ])
    expect(state).toMatchObject({ finished: false, stopReason: null, usage: null, emitted: 'cut' })
  })

  it("the vendor package's warnings go out as a frame and to the manifest", () => {
    const { effects } = run('openai', [{ type: 'stream-start', warnings: [{ type: 'unsupported', feature: 'temperature' }] }])
    expect(lines(effects)).toEqual(['translation_warnings', 'record_warnings 1'])
    expect(effects[0]).toMatchObject({ data: { warnings: [{ code: 'vendor_warning', details: { provider: 'openai', feature: 'temperature' } }] } })
  })
})
