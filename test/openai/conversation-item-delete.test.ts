import OpenAI from 'openai'
import { describe, expect, it } from 'vitest'
import { chatIdOf, conversationIdOf, runIdOf } from '../../src/domain/openai/openai-ids.ts'
import { openaiSdkServer } from '../helpers/openai-sdk-server.ts'

/**
 * Deleting a conversation's items through the official `openai` SDK (issue 35,
 * docs/decisions/056-erasing-items.md): the item's part is erased from the chat's ledger, a
 * function call together with its output, and no later response is sent it.
 */
const server = openaiSdkServer()

const history = async (conversationId: string) => {
  const res = await fetch(`http://127.0.0.1:${server.port}/api/v1/chats/${chatIdOf(conversationId)}/history?include=full`, { headers: { authorization: `Bearer ${server.org.key}` } })
  return ((await res.json()) as { data: { part: { type: string; text?: string } }[] }).data.map((p) => p.part)
}
const contextOf = async (conversation: string) => (await server.sdk.responses.create({ model: 'sandbox/echo', conversation, input: '/context' })).output_text
/** The types of the content parts of the context the sandbox received (the AI SDK's prompt form). */
const contentTypesOf = (context: string) =>
  (JSON.parse(context) as { messages: { content: string | { type: string }[] }[] }).messages.flatMap((m) => (typeof m.content === 'string' ? ['text'] : m.content.map((c) => c.type)))
const TOOLS: OpenAI.Responses.Tool[] = [
  { type: 'function', name: 'get_weather', strict: false, parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
]

describe('DELETE /v1/conversations/{id}/items/{item}', () => {
  it('erases the item: it answers the conversation, the item is gone from the list, the native ledger and every later context', async () => {
    const conversation = await server.sdk.conversations.create({
      items: [
        { type: 'message', role: 'user', content: 'The vault code is PELICAN-4417.' },
        { type: 'message', role: 'user', content: 'Keep this sentence.' },
      ],
    })
    const before = await server.sdk.conversations.items.list(conversation.id, { order: 'asc' })
    const secret = before.data[0] as { id: string }
    const answer = await server.sdk.conversations.items.delete(secret.id, { conversation_id: conversation.id })
    expect(answer).toMatchObject({ id: conversation.id, object: 'conversation' })

    const after = await server.sdk.conversations.items.list(conversation.id, { order: 'asc' })
    expect(after.data.map((i) => i.id)).toEqual([before.data[1]!.id])
    expect(await server.sdk.conversations.items.retrieve(secret.id, { conversation_id: conversation.id }).catch((e: unknown) => e)).toMatchObject({ status: 404 })
    expect((await history(conversation.id)).map((p) => p.text)).toEqual(['Keep this sentence.'])
    // Deleting it again: it is missing.
    expect(await server.sdk.conversations.items.delete(secret.id, { conversation_id: conversation.id }).catch((e: unknown) => e)).toMatchObject({ status: 404 })

    const context = await contextOf(conversation.id)
    expect(context).toContain('Keep this sentence.')
    expect(context).not.toContain('PELICAN')
  })

  it("an answer item of a response can be deleted; the response's other items keep their ids", async () => {
    const conversation = await server.sdk.conversations.create({})
    const response = await server.sdk.responses.create({ model: 'sandbox/echo', conversation: conversation.id, input: '/think weighing the options\nDecide.' })
    const [reasoning, message] = response.output
    expect(reasoning?.type).toBe('reasoning')
    expect(message?.type).toBe('message')
    await server.sdk.conversations.items.delete(reasoning!.id!, { conversation_id: conversation.id })
    const read = await server.sdk.responses.retrieve(response.id)
    expect(read.output.map((i) => i.id)).toEqual([message!.id])
    expect(await server.sdk.conversations.items.retrieve(message!.id!, { conversation_id: conversation.id })).toMatchObject({ id: message!.id, type: 'message' })
    const context = await contextOf(conversation.id)
    expect(contentTypesOf(context)).not.toContain('reasoning')
    expect(context).toContain('Decide.')
  })

  it('an older response whose answer was erased still forks at it: the fork holds what came before and its input, not what came after', async () => {
    const conversation = await server.sdk.conversations.create({})
    const a = await server.sdk.responses.create({ model: 'sandbox/echo', conversation: conversation.id, input: 'one' })
    await server.sdk.responses.create({ model: 'sandbox/echo', conversation: conversation.id, input: 'two' })
    await server.sdk.conversations.items.delete(a.output[0]!.id!, { conversation_id: conversation.id })
    const branch = await server.sdk.responses.create({ model: 'sandbox/echo', previous_response_id: a.id, input: 'branch' })
    const run = await fetch(`http://127.0.0.1:${server.port}/api/v1/runs/${runIdOf(branch.id)}`, { headers: { authorization: `Bearer ${server.org.key}` } })
    const forkChat = ((await run.json()) as { chat_id: string }).chat_id
    expect((await history(conversationIdOf(forkChat))).map((p) => p.text)).toEqual(['one', 'branch', 'echo: branch'])
  })

  it('a function call and its output are deleted together, whichever is named; no later context holds either', async () => {
    for (const named of ['function_call', 'function_call_output'] as const) {
      const conversation = await server.sdk.conversations.create({})
      const first = await server.sdk.responses.create({ model: 'sandbox/agent', conversation: conversation.id, input: 'Weather in Oslo?', tools: TOOLS })
      const call = first.output.find((i) => i.type === 'function_call')
      if (call?.type !== 'function_call') throw new Error('no call')
      await server.sdk.responses.create({
        model: 'sandbox/agent',
        conversation: conversation.id,
        tools: TOOLS,
        input: [{ type: 'function_call_output', call_id: call.call_id, output: 'SLEET-AND-9-DEGREES' }],
      })
      const items = (await server.sdk.conversations.items.list(conversation.id, { order: 'asc' })).data
      const target = items.find((i) => i.type === named) as { id: string }
      await server.sdk.conversations.items.delete(target.id, { conversation_id: conversation.id })
      const left = (await server.sdk.conversations.items.list(conversation.id, { order: 'asc' })).data
      expect(left.map((i) => i.type)).not.toContain('function_call')
      expect(left.map((i) => i.type)).not.toContain('function_call_output')
      expect(left).toHaveLength(items.length - 2)
      // The next turn's context is one every vendor takes: no call without its output, nor the reverse.
      const context = await contextOf(conversation.id)
      expect(contentTypesOf(context)).not.toContain('tool-call')
      expect(contentTypesOf(context)).not.toContain('tool-result')
      expect(context).not.toContain(call.call_id)
      expect(context).toContain('Weather in Oslo?')
    }
  })

  it('a function call still waiting for its output can be deleted; the conversation is then at rest for any input', async () => {
    const conversation = await server.sdk.conversations.create({})
    const first = await server.sdk.responses.create({ model: 'sandbox/agent', conversation: conversation.id, input: 'Weather in Bergen?', tools: TOOLS })
    const call = first.output.find((i) => i.type === 'function_call') as { id: string }
    await server.sdk.conversations.items.delete(call.id, { conversation_id: conversation.id })
    const added = await server.sdk.conversations.items.create(conversation.id, { items: [{ type: 'message', role: 'user', content: 'never mind' }] })
    expect(added.data).toHaveLength(1)
  })

  it("refused while a response runs (conversation_locked); another organisation's item, or a made-up id, answers 404; nothing is erased", async () => {
    const conversation = await server.sdk.conversations.create({ items: [{ type: 'message', role: 'user', content: 'stay' }] })
    const item = (await server.sdk.conversations.items.list(conversation.id)).data[0] as { id: string }
    const running = await server.sdk.responses.create({ model: 'sandbox/echo', conversation: conversation.id, input: '/slow 300\n' + 'word '.repeat(20), background: true })
    const locked = await server.sdk.conversations.items.delete(item!.id, { conversation_id: conversation.id }).catch((e: unknown) => e)
    expect(locked).toMatchObject({ status: 400, code: 'conversation_locked' })
    await server.sdk.responses.cancel(running.id)

    const stranger = server.ctx.org()
    const theirs = new OpenAI({ baseURL: server.baseURL, apiKey: stranger.key, maxRetries: 0 })
    expect(await theirs.conversations.items.delete(item!.id, { conversation_id: conversation.id }).catch((e: unknown) => e)).toMatchObject({ status: 404 })
    expect(await server.sdk.conversations.items.delete('msg_00000000000000000000000000000000', { conversation_id: conversation.id }).catch((e: unknown) => e)).toMatchObject({ status: 404 })
    expect(await server.sdk.conversations.items.delete('not-an-item', { conversation_id: conversation.id }).catch((e: unknown) => e)).toMatchObject({ status: 404 })
    expect((await server.sdk.conversations.items.list(conversation.id)).data.map((i) => i.id)).toContain(item!.id)
  })
})
