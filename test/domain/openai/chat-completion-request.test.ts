import { describe, expect, it } from 'vitest'
import { chatCompletionToResponses, type ChatCompletionRequest } from '../../../src/domain/openai/chat-completion-request.ts'

/** Chat Completions messages as the Responses request the facade runs (decision 063). */
const stateless = (held: string | null = null) => ({ kind: 'stateless' as const, held: () => held })
const call = { id: 'call_1', type: 'function' as const, function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }
const loop: ChatCompletionRequest['messages'] = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'weather?' },
  { role: 'assistant', content: null, tool_calls: [call] },
  { role: 'tool', tool_call_id: 'call_1', content: 'rain' },
]

describe('chatCompletionToResponses', () => {
  it('stateless: system messages as instructions, user messages as prompts, not stored', () => {
    const { body, problems, continues } = chatCompletionToResponses({ model: 'sandbox/echo', messages: [{ role: 'developer', content: [{ type: 'text', text: 'Be brief.' }] }, { role: 'user', content: 'hi' }] }, stateless())
    expect(problems).toEqual([])
    expect(continues).toBeNull()
    expect(body).toEqual({ model: 'sandbox/echo', store: false, input: [{ type: 'message', role: 'developer', content: 'Be brief.' }, { type: 'message', role: 'user', content: 'hi' }] })
  })

  it('stateless: a call and its result the server does not hold are carried in words, the result as the user\'s', () => {
    const { body, problems } = chatCompletionToResponses({ model: 'm', messages: [...loop, { role: 'assistant', content: 'It rains.' }, { role: 'user', content: 'thanks' }] }, stateless())
    expect(problems).toEqual([])
    expect(body.input).toEqual([
      { type: 'message', role: 'system', content: 'Be brief.' },
      { type: 'message', role: 'user', content: 'weather?' },
      { type: 'message', role: 'assistant', content: 'Called get_weather with {"city":"Oslo"}' },
      { type: 'message', role: 'user', content: 'get_weather returned: rain' },
      { type: 'message', role: 'assistant', content: 'It rains.' },
      { type: 'message', role: 'user', content: 'thanks' },
    ])
  })

  it('stateless: results of calls a held run made continue it, as real tool results, the history left to its chat', () => {
    const asked: string[][] = []
    const { body, continues } = chatCompletionToResponses({ model: 'm', messages: loop }, { kind: 'stateless', held: (ids) => (asked.push(ids), 'resp_abc') })
    expect(asked).toEqual([['call_1']])
    expect(continues).toBe('resp_abc')
    expect(body).toMatchObject({ store: false, previous_response_id: 'resp_abc' })
    expect(body.input).toEqual([{ type: 'message', role: 'system', content: 'Be brief.' }, { type: 'function_call_output', call_id: 'call_1', output: 'rain' }])
  })

  it('on a chat: only the messages after the last assistant message are the turn, tool results as real results', () => {
    const { body, continues } = chatCompletionToResponses({ model: 'm', messages: [...loop, { role: 'user', content: [{ type: 'text', text: 'and ' }, { type: 'text', text: 'tomorrow?' }] }] }, { kind: 'chat', conversationId: 'conv_x' })
    expect(continues).toBeNull()
    expect(body.conversation).toBe('conv_x')
    expect(body.store).toBeUndefined()
    expect(body.input).toEqual([
      { type: 'message', role: 'system', content: 'Be brief.' },
      { type: 'function_call_output', call_id: 'call_1', output: 'rain' },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'and ' }, { type: 'input_text', text: 'tomorrow?' }] },
    ])
  })

  it('options: tools, tool_choice, max_completion_tokens over max_tokens, effort and json_schema as the Responses fields', () => {
    const { body } = chatCompletionToResponses(
      {
        model: 'm',
        messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] }],
        tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
        tool_choice: { type: 'function', function: { name: 'f' } },
        max_tokens: 10,
        max_completion_tokens: 20,
        reasoning_effort: 'low',
        response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object' } } },
        temperature: 0.5,
      },
      stateless(),
    )
    expect(body).toMatchObject({
      tools: [{ type: 'function', name: 'f', description: null, parameters: { type: 'object' }, strict: null }],
      tool_choice: { type: 'function', name: 'f' },
      max_output_tokens: 20,
      reasoning: { effort: 'low' },
      text: { format: { type: 'json_schema', name: 'x', schema: { type: 'object' } } },
      temperature: 0.5,
      input: [{ type: 'message', role: 'user', content: [{ type: 'input_image', image_url: 'data:image/png;base64,AAAA' }] }],
    })
  })

  it('refuses a tool message answering no earlier call, and messages with nothing to answer', () => {
    expect(chatCompletionToResponses({ model: 'm', messages: [{ role: 'tool', tool_call_id: 'call_x', content: 'orphan' }] }, stateless()).problems.map((p) => p.pointer)).toEqual([
      '/messages/0/tool_call_id',
      '/messages',
    ])
    expect(chatCompletionToResponses({ model: 'm', messages: [{ role: 'system', content: 'only' }] }, stateless()).problems.map((p) => p.pointer)).toEqual(['/messages'])
  })
})
