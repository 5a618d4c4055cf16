import type { LanguageModelV4 } from '@ai-sdk/provider'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { expectError } from '../helpers/http.ts'
import { createTestApp, type TestContext, type TestOrg } from '../helpers/test-app.ts'
import { countOf, deferred, deltaText, fundedOrg, history, newChat, postTurn, prompt, sandboxCatalogue, streamOf, totalRows, turn } from '../helpers/turns.ts'
import { createSandboxLanguageModel } from '../../src/providers/sandbox/sandbox-language-model.ts'

/**
 * The sandbox behind a gate: a provider call waits until the test opens it. The test opens it
 * once every loser has been answered (or as soon as a second provider call shows two runs won),
 * so the winner's run is certainly still running while the others arrive, without any timing.
 */
let gate = deferred()
let providerCalls = 0
/** Whether a second provider call opens the gate (proof that two runs of one chat were admitted). */
let openOnSecondCall = true
const gatedSandbox = (vendorModelId: string): LanguageModelV4 => {
  const sandbox = createSandboxLanguageModel(vendorModelId)
  return {
    ...sandbox,
    async doStream(options) {
      providerCalls++
      if (openOnSecondCall && providerCalls >= 2) gate.resolve()
      await gate.promise
      return sandbox.doStream(options)
    },
  }
}

let ctx: TestContext
let org: TestOrg

beforeEach(async () => {
  gate = deferred()
  providerCalls = 0
  openOnSecondCall = true
  ctx = await createTestApp({ catalogue: sandboxCatalogue(), languageModelFor: (entry) => gatedSandbox(entry.vendor_model_id) })
  org = fundedOrg(ctx)
})
afterEach(async () => {
  gate.resolve()
  await ctx.close()
})

describe('one running run per chat', () => {
  it('50 concurrent submissions to one chat: exactly one 200, 49 × 409 run_in_progress, nothing half-written', async () => {
    const chatId = await newChat(ctx, org.auth)
    const before = { balance: totalRows(ctx.store, 'balance_entries'), keys: totalRows(ctx.store, 'idempotency_keys') }
    let answered = 0
    const requests = Array.from({ length: 50 }, (_, i) =>
      postTurn(ctx, org.auth, chatId, {
        model: 'sandbox/echo',
        input: [prompt(`/slow 50\nhello ${i}`)],
        idempotency_key: `concurrent-${i}`,
        user_metadata: { i },
      }).then((res) => {
        if (res.statusCode !== 200 && ++answered === 49) gate.resolve()
        return res
      }),
    )
    const responses = await Promise.all(requests)

    const winners = responses.filter((r) => r.statusCode === 200)
    const losers = responses.filter((r) => r.statusCode !== 200)
    expect(winners).toHaveLength(1)
    expect(losers).toHaveLength(49)
    expect(providerCalls).toBe(1)

    const won = streamOf(winners[0]!)
    const winnerIndex = responses.indexOf(winners[0]!)
    expect(won.events.at(-1)).toBe('done')
    expect(deltaText(won.frames, 'text')).toBe(`echo: hello ${winnerIndex}`)

    for (const res of losers) {
      const error = expectError(res, 409, 'run_in_progress')
      // The running run is named, even while it is still being admitted.
      expect((error.details as { run_id: string | null }).run_id).toBe(won.runId)
    }

    // Exactly one run, one prompt (the winner's), its answer; one charge; one idempotency key.
    expect(countOf(ctx.store, 'runs', chatId)).toBe(1)
    const page = await history(ctx, org.auth, chatId)
    const prompts = page.data.filter((p) => p.part.type === 'prompt')
    expect(prompts).toHaveLength(1)
    expect(prompts[0]!.part.text).toBe(`/slow 50\nhello ${winnerIndex}`)
    expect(prompts[0]!.user_metadata).toEqual({ i: winnerIndex })
    expect(page.data.map((p) => p.part.type)).toEqual(['prompt', 'message'])
    expect(countOf(ctx.store, 'parts', chatId)).toBe(2)
    const chat = await ctx.app.inject({ url: `/api/v1/chats/${chatId}`, headers: org.auth })
    expect(chat.json().length).toBe(2)
    expect(totalRows(ctx.store, 'balance_entries') - before.balance).toBe(1)
    expect(totalRows(ctx.store, 'idempotency_keys') - before.keys).toBe(1)
    expect(ctx.store.idempotencyKeys.runOf(org.orgId, `concurrent-${winnerIndex}`, new Date())).toBe(won.runId)

    // A loser's key was never recorded: it can be used now that the chat is free.
    const loserIndex = winnerIndex === 0 ? 1 : 0
    const next = await turn(ctx, org.auth, chatId, { input: [prompt('after the race')], idempotency_key: `concurrent-${loserIndex}` })
    expect(next.events.at(-1)).toBe('done')
    expect(countOf(ctx.store, 'runs', chatId)).toBe(2)
  })

  it('the rule is per chat: concurrent submissions to different chats all run', async () => {
    openOnSecondCall = false
    const chats = await Promise.all(Array.from({ length: 10 }, () => newChat(ctx, org.auth)))
    let refused = 0
    const requests = chats.map((chatId) =>
      postTurn(ctx, org.auth, chatId, { model: 'sandbox/echo', input: [prompt('parallel')] }).then((res) => {
        if (res.statusCode !== 200) refused++
        return res
      }),
    )
    // Open the gate once every chat has either a run (admitted) or an answer (refused).
    const watch = setInterval(() => {
      if (totalRows(ctx.store, 'runs') + refused >= chats.length) gate.resolve()
    }, 5)
    const responses = await Promise.all(requests)
    clearInterval(watch)
    expect(responses.map((r) => r.statusCode)).toEqual(chats.map(() => 200))
    // The gate opened only once all ten runs were admitted, so all ten were running at once.
    expect(providerCalls).toBe(10)
    for (const chatId of chats) expect(countOf(ctx.store, 'runs', chatId)).toBe(1)
  })
})
