import type OpenAI from 'openai'
import { describe, expect, it } from 'vitest'
import { contentOf } from '../../src/domain/openai/compaction-item.ts'
import { compactionIdOf, runIdOf } from '../../src/domain/openai/openai-ids.ts'
import { prose } from '../e2e/prose.ts'
import { openaiSdkServer } from '../helpers/openai-sdk-server.ts'

/**
 * A response whose turn summarised history answers with a `compaction` item first (decision 058),
 * as OpenAI's server-side compaction does: streamed at output_index 0 before the answer, the same in
 * the response read back, and, sent back as input, standing for everything before it. On
 * sandbox/echo-8k under the platform defaults, where a conversation of ~600-token turns needs
 * summaries within a few turns.
 */
const server = openaiSdkServer()

type Streamed = { events: OpenAI.Responses.ResponseStreamEvent[]; response: OpenAI.Responses.Response }
async function streamed(request: OpenAI.Responses.ResponseCreateParamsStreaming): Promise<Streamed> {
  const events: OpenAI.Responses.ResponseStreamEvent[] = []
  for await (const event of await server.sdk.responses.create(request)) events.push(event)
  const last = events.at(-1)!
  if (last.type !== 'response.completed') throw new Error(`ended with ${last.type}`)
  return { events, response: last.response }
}
const newSummaries = (manifest: { context: { summaries: { reused: boolean }[] } }) => manifest.context.summaries.filter((s) => !s.reused).length
const manifestOf = async (responseId: string) => {
  const res = await fetch(`http://127.0.0.1:${server.port}/api/v1/runs/${runIdOf(responseId)}`, { headers: { authorization: `Bearer ${server.org.key}` } })
  return ((await res.json()) as { manifest: { context: { summaries: { reused: boolean }[] } } }).manifest
}

describe('compaction items in a response', () => {
  it('the turn that summarised streams its compaction item first; no other turn has one; read back the same', { timeout: 120_000 }, async () => {
    const conversation = await server.sdk.conversations.create({})
    let compacted: Streamed | null = null
    let turns = 0
    for (; turns < 20 && !compacted; turns++) {
      const turn = await streamed({ model: 'sandbox/echo-8k', conversation: conversation.id, input: `Q${turns} ${prose(turns, 600)}`, stream: true })
      const made = newSummaries(await manifestOf(turn.response.id))
      const first = turn.response.output[0]!
      if (made === 0) {
        expect(first.type, `turn ${turns} made no summary`).toBe('message')
        continue
      }
      compacted = turn
    }
    expect(compacted, 'a turn summarised history').not.toBeNull()
    const { events, response } = compacted!
    const item = response.output[0]!
    expect(item).toMatchObject({ type: 'compaction', id: compactionIdOf(runIdOf(response.id)!) })
    expect(response.output[1]).toMatchObject({ type: 'message', role: 'assistant' })

    // Streamed: whole, at output_index 0, before the answer's first item; the answer after it.
    const added = events.filter((e) => e.type === 'response.output_item.added')
    expect(added[0]).toMatchObject({ output_index: 0, item: { type: 'compaction', id: item.id } })
    expect(added[1]).toMatchObject({ output_index: 1, item: { type: 'message', id: response.output[1]!.id } })
    const types = events.map((e) => e.type)
    expect(types.indexOf('response.output_item.done')).toBeLessThan(types.indexOf('response.content_part.added'))
    expect(await server.sdk.responses.retrieve(response.id)).toEqual(response)

    // What it holds: the summaries the turn was sent, then the rest of what it was sent, its input last.
    const content = contentOf((item as { encrypted_content: string }).encrypted_content)!
    expect(content.summary).toMatch(/^Summary of ordinals \d+-\d+:/)
    expect(content.window.at(-1)).toEqual({ role: 'user', text: `Q${turns - 1} ${prose(turns - 1, 600)}` })

    // The next turn reuses the summaries: no compaction item.
    const next = await server.sdk.responses.create({ model: 'sandbox/echo-8k', conversation: conversation.id, input: 'And then?' })
    if (newSummaries(await manifestOf(next.id)) === 0) expect(next.output.map((i) => i.type)).toEqual(['message'])
  })

  it('sent back with a chain of input, the compaction item stands for everything before it', { timeout: 120_000 }, async () => {
    const conversation = await server.sdk.conversations.create({})
    const chain: OpenAI.Responses.ResponseInputItem[] = []
    let item: OpenAI.Responses.ResponseOutputItem | undefined
    for (let i = 0; i < 20 && !item; i++) {
      const input = `R${i} ${prose(100 + i, 600)}`
      const response = await server.sdk.responses.create({ model: 'sandbox/echo-8k', conversation: conversation.id, input })
      chain.push({ role: 'user', content: input }, ...(response.output as OpenAI.Responses.ResponseInputItem[]))
      item = response.output.find((o) => o.type === 'compaction')
    }
    expect(item).toBeDefined()
    // Stateless, as a client that keeps its own chain: the whole chain, then a question. The items
    // before the compaction item are left out; the summary and its window stand for them.
    const stateless = await server.sdk.responses.create({ model: 'sandbox/echo-8k', store: false, input: [...chain, { role: 'user', content: '/context' }] })
    const context = JSON.parse(stateless.output_text) as { messages: { role: string; content: unknown }[] }
    const texts = JSON.stringify(context.messages)
    expect(texts).toContain('Summary of the conversation so far:\\nSummary of ordinals')
    // A turn before the window is in the summary (whose sandbox text begins with each part's first
    // words), never a message of its own; the window's turns are (the anchors among them).
    const window = contentOf((item as { encrypted_content: string }).encrypted_content)!.window
    const textOf = (m: { content: unknown }) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content))
    const asked = chain.flatMap((c) => ('role' in c && c.role === 'user' && typeof c.content === 'string' ? [c.content] : []))
    const summarisedOnly = asked.filter((q) => !window.some((m) => m.text === q))
    expect(summarisedOnly.length).toBeGreaterThan(0)
    for (const q of summarisedOnly) expect(context.messages.filter((m) => m.role === 'user' && textOf(m).includes(JSON.stringify(q).slice(1, 40)))).toEqual([])
    expect(context.messages.length).toBeLessThan(chain.length)
    expect(texts).toContain(JSON.stringify(window.at(-1)!.text).slice(1, 60))
    // In its own conversation it adds nothing: the chat holds what it stands for.
    const own = await server.sdk.responses.create({ model: 'sandbox/echo-8k', conversation: conversation.id, input: [item as OpenAI.Responses.ResponseInputItem, { role: 'user', content: 'ok' }] })
    expect(own.status).toBe('completed')
    expect((await server.sdk.responses.inputItems.list(own.id)).data.map((i) => i.type)).toEqual(['message'])
  })
})
