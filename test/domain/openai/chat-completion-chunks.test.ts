import { describe, expect, it } from 'vitest'
import { createChunkTranslator } from '../../../src/domain/openai/chat-completion-chunks.ts'
import { runIdOfCompletion, toChatCompletion } from '../../../src/domain/openai/chat-completion-object.ts'
import type { ResponseObject } from '../../../src/domain/openai/response-object.ts'
import { modelListOf } from '../../../src/domain/openai/model-list.ts'

/** A turn's frames as chat.completion.chunk objects, and a settled response as a chat.completion (decision 063). */
const RUN = '01a226bd-cc6c-72a7-b750-411811237a28'
const frames = (...names: [string, unknown][]) => names.map(([event, data]) => ({ event, data }))
const usage = { input_tokens: 5, input_tokens_details: { cached_tokens: 1 }, output_tokens: 3, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 8 }

describe('createChunkTranslator', () => {
  it('text: the role first, each delta as content, reasoning left out, the finish reason and usage last', () => {
    const t = createChunkTranslator(RUN, 'sandbox/echo', 100, { includeUsage: true })
    const chunks = [
      ...t.opening(),
      ...frames(['block_start', { kind: 'reasoning' }], ['delta', { text: 'thinking' }], ['block_stop', {}], ['block_start', { kind: 'text' }], ['delta', { text: 'Hi' }], ['delta', { text: ' there' }], ['block_stop', {}]).flatMap((f) => t.frame(f)),
      ...t.terminal({ status: 'completed', usage }),
    ]
    expect(chunks.map((c) => c.choices[0]?.delta ?? null)).toEqual([{ role: 'assistant', content: '' }, { content: 'Hi' }, { content: ' there' }, {}, null])
    expect(chunks.every((c) => c.id === `chatcmpl-${RUN.replaceAll('-', '')}` && c.object === 'chat.completion.chunk')).toBe(true)
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe('stop')
    expect(chunks.at(-1)!.usage).toEqual({ prompt_tokens: 5, completion_tokens: 3, total_tokens: 8, prompt_tokens_details: { cached_tokens: 1 }, completion_tokens_details: { reasoning_tokens: 0 } })
    expect(runIdOfCompletion(chunks[0]!.id)).toBe(RUN)
  })

  it('tool calls: each its own index, id and name first, arguments in pieces; finish_reason tool_calls; no usage chunk unless asked', () => {
    const t = createChunkTranslator(RUN, 'm', 1)
    const chunks = frames(
      ['block_start', { kind: 'tool_call', tool_name: 'f', tool_use_id: 'call_a' }],
      ['delta', { text: '{"a":' }],
      ['delta', { text: '1}' }],
      ['block_stop', {}],
      ['block_start', { kind: 'tool_call', tool_name: 'g', tool_use_id: 'call_b' }],
      ['block_stop', {}],
    ).flatMap((f) => t.frame(f))
    expect(chunks.map((c) => c.choices[0]!.delta)).toEqual([
      { tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'f', arguments: '' } }] },
      { tool_calls: [{ index: 0, function: { arguments: '{"a":' } }] },
      { tool_calls: [{ index: 0, function: { arguments: '1}' } }] },
      { tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'g', arguments: '' } }] },
    ])
    expect(chunks[0]).not.toHaveProperty('usage')
    expect(t.terminal({ status: 'completed', usage }).map((c) => c.choices[0]!.finish_reason)).toEqual(['tool_calls'])
  })

  it('a refusal streams as refusal (content_filter); a run cut off by its limit ends with length', () => {
    const t = createChunkTranslator(RUN, 'm', 1)
    expect(frames(['block_start', { kind: 'refusal' }], ['delta', { text: 'No.' }], ['block_stop', {}]).flatMap((f) => t.frame(f)).map((c) => c.choices[0]!.delta)).toEqual([{ refusal: 'No.' }])
    expect(t.terminal({ status: 'completed', usage: null })[0]!.choices[0]!.finish_reason).toBe('content_filter')
    expect(createChunkTranslator(RUN, 'm', 1).terminal({ status: 'incomplete', usage: null })[0]!.choices[0]!.finish_reason).toBe('length')
  })
})

describe('toChatCompletion', () => {
  const response = (output: unknown[], status: ResponseObject['status'] = 'completed') => ({ created_at: 7, model: 'sandbox/agent', status, output: output as ResponseObject['output'], usage })
  it('text output as the message content; reasoning and compaction left out', () => {
    const c = toChatCompletion(RUN, response([{ type: 'compaction' }, { type: 'reasoning' }, { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'echo: hi' }] }]))
    expect(c).toMatchObject({ object: 'chat.completion', created: 7, model: 'sandbox/agent', choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'echo: hi', refusal: null } }], usage: { total_tokens: 8 } })
    expect(c.choices[0]!.message).not.toHaveProperty('tool_calls')
  })
  it('function calls as tool_calls, content null, finish_reason tool_calls; incomplete is length', () => {
    const c = toChatCompletion(RUN, response([{ type: 'function_call', call_id: 'call_a', name: 'f', arguments: '{}' }]))
    expect(c.choices[0]).toMatchObject({ finish_reason: 'tool_calls', message: { content: null, tool_calls: [{ id: 'call_a', type: 'function', function: { name: 'f', arguments: '{}' } }] } })
    expect(toChatCompletion(RUN, response([], 'incomplete')).choices[0]!.finish_reason).toBe('length')
  })
})

describe('modelListOf', () => {
  it('the catalogue names as OpenAI model ids, owned by their provider', () => {
    expect(modelListOf([{ name: 'sandbox/echo', provider: 'sandbox' }], '2026-01-01')).toEqual({ object: 'list', data: [{ id: 'sandbox/echo', object: 'model', created: 1767225600, owned_by: 'sandbox' }] })
  })
})
