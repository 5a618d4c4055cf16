import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { conversationIdOf } from '../../src/domain/openai/openai-ids.ts'
import { bootstrapDevOrganisation } from '../../src/store/bootstrap-dev-organisation.ts'
import { prose } from '../e2e/prose.ts'
import { injectApi } from '../helpers/inject-api.ts'
import { createTestApp, type TestContext } from '../helpers/test-app.ts'
import { sandboxCatalogue } from '../helpers/turns.ts'

/**
 * Erasing an item that a summary was written from (docs/decisions/056-erasing-items.md): the summary
 * goes with it, the next turn summarises that history again from what is left (a billed compaction
 * run), the summaries of the rest are reused, and no later context holds the erased text. On
 * sandbox/echo-8k under the platform defaults, whose summaries are made of each part's first words
 * (decisions §6), so a marker at the start of a prompt shows where it went.
 */
describe('erasing a summarised item', () => {
  let ctx: TestContext
  let auth = { authorization: '' }
  const { postTurn, ok } = injectApi(() => ctx, () => auth)

  beforeAll(async () => {
    ctx = await createTestApp({ catalogue: sandboxCatalogue() })
    auth = { authorization: `Bearer ${bootstrapDevOrganisation(ctx.store)!.key}` }
  })
  afterAll(async () => {
    await ctx?.close()
  })

  const turn = async (chatId: string, text: string) => {
    const answer = await postTurn(chatId, { model: 'sandbox/echo-8k', input: [{ type: 'prompt', text }] })
    if (!answer.ok) throw new Error(`HTTP ${answer.status}: ${answer.text}`)
    const done = answer.frames.at(-1)!
    expect(done.event, JSON.stringify(done.data)).toBe('done')
    const runId = answer.frames[0]!.data.run_id as string
    const text_ = answer.frames.filter((f) => f.event === 'delta').map((f) => f.data.text ?? '').join('')
    return { runId, done: done.data, text: text_ }
  }
  const marker = (i: number) => `MARK${String(i).padStart(2, '0')}`

  test('the summary written from it goes, the next turn summarises again without it, the other summaries are reused', { timeout: 120_000 }, async () => {
    const chatId = (await ok('/api/v1/chats', { method: 'POST', body: { namespace: 'erase/summarised' } }, 201)).id as string
    for (let i = 0; i < 20; i++) await turn(chatId, `${marker(i)} ${prose(i, 600)}`)
    await turn(chatId, '/context')
    const summaries = ctx.store.summaries.ofChat(chatId)
    const holding = summaries.filter((s) => s.text.includes(marker(3)))
    expect(holding.length, 'a summary was written from the marked turn').toBeGreaterThan(0)
    const untouched = summaries.filter((s) => !s.text.includes(marker(3)))

    const occurrences = (text: string) => text.split(marker(3)).length - 1
    // The block of turn 3 holds its prompt and the answer that echoed it; its summary begins with both.
    expect(holding).toHaveLength(1)
    expect(occurrences(holding[0]!.text)).toBe(2)

    // The marked prompt, erased through the facade: its block's summary goes with it.
    const conversation = conversationIdOf(chatId)
    const items = (await ok(`/v1/conversations/${conversation}/items?order=asc&limit=100`)).data as { id: string; role: string; content: { text?: string }[] }[]
    const textOf = (item: (typeof items)[number]) => item.content?.map((c) => c.text ?? '').join('') ?? ''
    const prompt = items.find((item) => textOf(item).startsWith(marker(3)))!
    const echo = items.find((item) => textOf(item).startsWith(`echo: ${marker(3)}`))!
    // The /context answer held every marker: it goes too, so that only the block shows where turn 3 went.
    const shown = items.filter((item) => textOf(item).startsWith('{"system"'))
    for (const item of [prompt, ...shown]) await ok(`/v1/conversations/${conversation}/items/${item.id}`, { method: 'DELETE' })
    expect(ctx.store.summaries.ofChat(chatId)).toEqual(untouched)

    // The next turn summarises what is left of the block (the echo) in a billed compaction run, and
    // reuses every other summary as it was.
    const regenerated = await turn(chatId, '/context')
    const manifest = (await ok(`/api/v1/runs/${regenerated.runId}`)).manifest
    const used = manifest.context.summaries as { first_ordinal: number; last_ordinal: number; run_id: string; reused: boolean }[]
    const inBlock = (s: { first_ordinal: number; last_ordinal: number }) => s.first_ordinal >= holding[0]!.firstOrdinal && s.last_ordinal <= holding[0]!.lastOrdinal
    const made = used.filter((s) => !s.reused && inBlock(s))
    expect(made).toHaveLength(1)
    // Any other summary made now is of history newer than every summary before (the window moved on).
    const newest = Math.max(...summaries.map((s) => s.lastOrdinal))
    for (const s of used.filter((s) => !s.reused && !inBlock(s))) expect(s.first_ordinal).toBeGreaterThan(newest)
    expect(regenerated.done.compaction.blocks_generated).toBe(used.filter((s) => !s.reused).length)
    for (const s of used.filter((s) => s.reused)) expect(untouched.find((u) => u.firstOrdinal === s.first_ordinal && u.lastOrdinal === s.last_ordinal)?.runId).toBe(s.run_id)
    const remade = ctx.store.summaries.ofChat(chatId).find((s) => s.runId === made[0]!.run_id)!
    expect(occurrences(remade.text)).toBe(1)
    expect(remade.text).toContain(`echo: ${marker(3)}`)
    expect((await ok(`/api/v1/runs/${made[0]!.run_id}`)).origin).toBe('compaction')

    // The echo erased too: nothing of turn 3 is left to summarise, and no context holds it.
    const shownAgain = (await ok(`/v1/conversations/${conversation}/items?order=desc&limit=1`)).data as { id: string }[]
    for (const item of [echo, ...shownAgain]) await ok(`/v1/conversations/${conversation}/items/${item.id}`, { method: 'DELETE' })
    expect(ctx.store.summaries.ofChat(chatId).some((s) => s.text.includes(marker(3)))).toBe(false)
    const after = await turn(chatId, '/context')
    expect(after.text).not.toContain(marker(3))
    expect(after.text).toContain(marker(2))
    expect(after.text).toContain(marker(4))
    const afterManifest = (await ok(`/api/v1/runs/${after.runId}`)).manifest
    expect((afterManifest.context.summaries as { first_ordinal: number; reused: boolean }[]).filter((s) => !s.reused && s.first_ordinal <= newest)).toEqual([])
  })
})
