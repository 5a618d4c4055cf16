import { describe, expect, it } from 'vitest'
import { carriedMessagesOf, compactionItem, contentOf } from '../../../src/domain/openai/compaction-item.ts'
import { requestToTurn, type ChatLookups } from '../../../src/domain/openai/request-to-turn.ts'

/** The `compaction` item (decisions 055 and 058): what it holds, and what it stands for when sent back. */
const NEW_CHAT: ChatLookups = { toolNameOf: () => null, holdsItem: () => false, holdsCompaction: () => false }

describe('compaction items', () => {
  it('round-trip their summary and window; anything else is not one of this server\'s', () => {
    const item = compactionItem('cmp_x', 'the gist', [{ role: 'user', text: 'q' }, { role: 'assistant', text: 'a' }])
    expect(contentOf(item.encrypted_content)).toEqual({ summary: 'the gist', window: [{ role: 'user', text: 'q' }, { role: 'assistant', text: 'a' }] })
    expect(contentOf(compactionItem('cmp_y', 'only a summary').encrypted_content)).toEqual({ summary: 'only a summary', window: [] })
    expect(contentOf('not base64 json')).toBeNull()
    expect(contentOf(Buffer.from(JSON.stringify({ format: 'parley.summary.v1', summary: 's', window: [{ role: 'system', text: 'x' }] })).toString('base64'))).toBeNull()
  })

  it('carry parts as messages: prompts the user\'s, answers the assistant\'s, a tool exchange in words, reasoning left out', () => {
    expect(
      carriedMessagesOf([
        { type: 'prompt', text: 'Weather?' },
        { type: 'reasoning', text: 'thinking' },
        { type: 'tool_call', tool_name: 'get_weather', tool_use_id: 'c1', arguments: '{"city":"Oslo"}' },
        { type: 'tool_result', tool_name: 'get_weather', tool_use_id: 'c1', text: 'rain', is_error: false, trust: 'trusted' },
        { type: 'message', text: 'It rains.' },
      ]),
    ).toEqual([
      { role: 'user', text: 'Weather?' },
      { role: 'assistant', text: 'Called get_weather with {"city":"Oslo"}' },
      { role: 'user', text: 'get_weather returned: rain' },
      { role: 'assistant', text: 'It rains.' },
    ])
  })

  it('sent as input, the latest one stands for everything before it: the summary, then its window, then what follows', () => {
    const item = compactionItem('cmp_a', 'the gist', [{ role: 'user', text: 'q' }, { role: 'assistant', text: 'a' }])
    const { request, problems } = requestToTurn(
      {
        model: 'm',
        input: [
          { type: 'message', role: 'user', content: 'long ago' },
          { type: 'compaction', encrypted_content: compactionItem('cmp_old', 'older').encrypted_content, id: 'cmp_old' },
          { type: 'message', role: 'assistant', content: 'in between' },
          { type: 'compaction', encrypted_content: item.encrypted_content, id: item.id },
          { type: 'message', role: 'user', content: 'and now?' },
        ],
      },
      NEW_CHAT,
    )
    expect(problems).toEqual([])
    expect(request.input).toEqual([
      { type: 'assistant_message', text: 'Summary of the conversation so far:\nthe gist' },
      { type: 'prompt', text: 'q' },
      { type: 'assistant_message', text: 'a' },
      { type: 'prompt', text: 'and now?' },
    ])
  })

  it("one of the chat's own adds nothing: the chat holds what it stands for", () => {
    const item = compactionItem('cmp_own', 'the gist', [{ role: 'user', text: 'q' }])
    const { request } = requestToTurn(
      { model: 'm', input: [{ type: 'compaction', encrypted_content: item.encrypted_content, id: item.id }, { type: 'message', role: 'user', content: 'next' }] },
      { ...NEW_CHAT, holdsCompaction: (id) => id === 'cmp_own' },
    )
    expect(request.input).toEqual([{ type: 'prompt', text: 'next' }])
  })

  it('one this server did not make is refused at its pointer', () => {
    const { problems } = requestToTurn({ model: 'm', input: [{ type: 'compaction', encrypted_content: 'Zm9v' }, { type: 'message', role: 'user', content: 'x' }] }, NEW_CHAT)
    expect(problems).toEqual([{ in: 'body', pointer: '/input/0/encrypted_content', message: 'is not a compaction this server made' }])
  })
})
