import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { expectError } from '../helpers/http.ts'
import { createTestApp, type TestContext, type TestOrg } from '../helpers/test-app.ts'
import {
  deferred,
  finishPart,
  fundedOrg,
  getRun,
  history,
  newChat,
  postTurn,
  prompt,
  sandboxCatalogue,
  scriptedModel,
  snapshotRows,
  streamOf,
  toolCallParts,
  turn,
  untilAborted,
  variantOf,
  waitForFrame,
  withFakes,
} from '../helpers/turns.ts'

const HOUR = 3600 * 1000
const TOOL_HOLD = variantOf('fake/tool-hold', '5b7a0c1e-2222-4b2b-8c2c-000000000001', { provider: 'fake', vendor_model_id: 'tool-hold' })
const TOOL_FAIL = variantOf('fake/tool-fail', '5b7a0c1e-2222-4b2b-8c2c-000000000002', { provider: 'fake', vendor_model_id: 'tool-fail' })

let calls = 0
const fakes = {
  // A complete tool call, then nothing until the run is cancelled.
  'tool-hold': scriptedModel(async (emit, options) => {
    for (const part of toolCallParts(`call_hold_${++calls}`, 'search', '{"q":"slow"}')) emit(part)
    await untilAborted(options.abortSignal)
  }),
  // A complete tool call, then the provider fails mid-stream.
  'tool-fail': scriptedModel(async (emit) => {
    for (const part of toolCallParts(`call_fail_${++calls}`, 'search', '{"q":"boom"}')) emit(part)
    emit({ type: 'error', error: new Error('provider went away') })
  }),
}

let ctx: TestContext
let org: TestOrg
let chatId: string
let offset = 0

// One app for the file (building one per test was most of this file's time); each test gets fresh
// organisations and chats of its own, and the clock's offset back at 0.
beforeAll(async () => {
  ctx = await createTestApp({
    catalogue: [...sandboxCatalogue(), TOOL_HOLD, TOOL_FAIL],
    languageModelFor: withFakes(fakes),
    now: () => new Date(Date.now() + offset),
  })
})
afterAll(async () => {
  await ctx.close()
})
beforeEach(async () => {
  offset = 0
  org = fundedOrg(ctx)
  chatId = await newChat(ctx, org.auth)
})

/** A sandbox turn that ends with tool calls; returns their ids in order. */
async function callTools(line = '/tool weather {"city":"Oslo"}') {
  const t = await turn(ctx, org.auth, chatId, { input: [prompt(line)] })
  const done = t.of('done')[0]!.data
  expect(done.stop_reason).toBe('tool_use')
  return { runId: t.runId, ids: (done.pending_tool_calls as { tool_use_id: string }[]).map((c) => c.tool_use_id) }
}

const toolResult = (id: string, text: string, tool = 'weather') => ({ type: 'tool_result', tool_use_id: id, tool_name: tool, text })

/** The tool_result parts of the chat, by tool_use_id. */
async function resultsById() {
  const page = await history(ctx, org.auth, chatId)
  return new Map(page.data.filter((p) => p.part.type === 'tool_result').map((p) => [p.part.tool_use_id as string, p]))
}

describe('closing pending tool calls', () => {
  it('a tool_result closes its call; the run event lists it; the model gets the result', async () => {
    const { ids } = await callTools()
    const t = await turn(ctx, org.auth, chatId, { input: [toolResult(ids[0]!, 'rain, 8°C')] })
    expect(t.frames[0]!.data.closed_tool_calls).toEqual(ids)
    expect(t.of('done')[0]!.data.stop_reason).toBe('end_turn')
    const closed = (await resultsById()).get(ids[0]!)!
    expect(closed.part).toEqual({ type: 'tool_result', text: 'rain, 8°C', is_error: false, tool_name: 'weather', tool_use_id: ids[0], trust: 'customer_data' })
    expect(closed.part).not.toHaveProperty('tombstone_reason')

    // Closed now: answering it again is an unknown id.
    const again = await postTurn(ctx, org.auth, chatId, { model: 'sandbox/echo', input: [toolResult(ids[0]!, 'again')] })
    expectError(again, 422, 'unknown_tool_use_id')
  })

  it('abandoned: the next submission does not answer the call; the tombstone is written before the new input', async () => {
    const { ids } = await callTools()
    const meta = { turn: 'second' }
    const t = await turn(ctx, org.auth, chatId, { input: [prompt('forget the weather')], user_metadata: meta })
    expect(t.frames[0]!.data.closed_tool_calls).toEqual(ids)
    const page = await history(ctx, org.auth, chatId)
    const [tombstone, newPrompt] = page.data.slice(2, 4)
    expect(tombstone.part).toEqual({
      type: 'tool_result',
      text: '',
      is_error: true,
      tool_name: 'weather',
      tool_use_id: ids[0],
      trust: 'trusted',
      tombstone_reason: 'abandoned',
    })
    expect(tombstone.role).toBe('user')
    expect(tombstone.user_metadata).toEqual(meta)
    expect(newPrompt.part).toEqual({ type: 'prompt', text: 'forget the weather' })
    expect(tombstone.ordinal).toBeLessThan(newPrompt.ordinal)
    // The chat has nothing pending any more.
    expect(t.of('done')[0]!.data.pending_tool_calls).toEqual([])
    const third = await turn(ctx, org.auth, chatId, { input: [prompt('and now?')] })
    expect(third.frames[0]!.data.closed_tool_calls).toEqual([])
  })

  it('the run event lists calls closed both ways: by result and by tombstone', async () => {
    const { ids } = await callTools('/tool weather {"city":"Oslo"}\n/tool clock {"tz":"CET"}')
    expect(ids).toHaveLength(2)
    const t = await turn(ctx, org.auth, chatId, { input: [toolResult(ids[0]!, 'sunny')] })
    expect([...t.frames[0]!.data.closed_tool_calls].sort()).toEqual([...ids].sort())
    const results = await resultsById()
    expect(results.get(ids[0]!)!.part.tombstone_reason).toBeUndefined()
    expect(results.get(ids[0]!)!.part.text).toBe('sunny')
    expect(results.get(ids[1]!)!.part).toMatchObject({ tool_name: 'clock', tombstone_reason: 'abandoned', is_error: true, text: '' })
  })

  it('cancelled: the call came from a run that was cancelled', async () => {
    const pending = postTurn(ctx, org.auth, chatId, { model: 'fake/tool-hold', input: [prompt('go')] })
    await waitForFrame(ctx, chatId, await runningId(), 'block_stop')
    const runId = await runningId()
    const cancel = await ctx.app.inject({ method: 'POST', url: `/api/v1/runs/${runId}/cancel`, headers: org.auth })
    expect(cancel.json().status).toBe('cancelled')
    const stream = streamOf(await pending)
    expect(stream.events.at(-1)).toBe('error')
    const callId = stream.of('block_start')[0]!.data.tool_use_id

    const t = await turn(ctx, org.auth, chatId, { input: [prompt('carry on')] })
    expect(t.frames[0]!.data.closed_tool_calls).toEqual([callId])
    expect((await resultsById()).get(callId)!.part).toMatchObject({ tombstone_reason: 'cancelled', tool_name: 'search', is_error: true, trust: 'trusted' })
  })

  it('cancelled: the call came from a run that failed', async () => {
    const failed = await turn(ctx, org.auth, chatId, { model: 'fake/tool-fail', input: [prompt('go')] })
    expect(failed.events.at(-1)).toBe('error')
    expect((await getRun(ctx, org.auth, failed.runId)).status).toBe('failed')
    const callId = failed.of('block_start')[0]!.data.tool_use_id

    const t = await turn(ctx, org.auth, chatId, { input: [prompt('try something else')] })
    expect(t.frames[0]!.data.closed_tool_calls).toEqual([callId])
    expect((await resultsById()).get(callId)!.part).toMatchObject({ tombstone_reason: 'cancelled', tool_name: 'search' })
  })

  it('a retry of a failed run closes its pending calls too (tombstoned cancelled)', async () => {
    const failed = await turn(ctx, org.auth, chatId, { model: 'fake/tool-fail', input: [prompt('go')] })
    const callId = failed.of('block_start')[0]!.data.tool_use_id
    const retry = await turn(ctx, org.auth, chatId, { input: [], retry_of: failed.runId })
    expect(retry.frames[0]!.data.closed_tool_calls).toEqual([callId])
    expect((await resultsById()).get(callId)!.part.tombstone_reason).toBe('cancelled')
  })

  it('expired: a call older than 24 h, even from a succeeded run', async () => {
    const { ids } = await callTools()
    offset = 24 * HOUR + 60_000
    const t = await turn(ctx, org.auth, chatId, { input: [prompt('back after a day')] })
    expect(t.frames[0]!.data.closed_tool_calls).toEqual(ids)
    expect((await resultsById()).get(ids[0]!)!.part.tombstone_reason).toBe('expired')
  })

  it('expired: an answer to a call older than 24 h still closes it by result', async () => {
    const { ids } = await callTools()
    offset = 30 * HOUR
    const t = await turn(ctx, org.auth, chatId, { input: [toolResult(ids[0]!, 'late but here')] })
    expect(t.frames[0]!.data.closed_tool_calls).toEqual(ids)
    expect((await resultsById()).get(ids[0]!)!.part).toMatchObject({ text: 'late but here', is_error: false })
  })

  it('a call just under 24 h old is abandoned, not expired', async () => {
    const { ids } = await callTools()
    offset = 23 * HOUR
    await turn(ctx, org.auth, chatId, { input: [prompt('still today')] })
    expect((await resultsById()).get(ids[0]!)!.part.tombstone_reason).toBe('abandoned')
  })

  it('expired is decided from the ledger after the actor was evicted and rehydrated', async () => {
    const { ids } = await callTools()
    expect(ctx.host.evictIdle(Date.now() + 365 * 24 * HOUR)).toBeGreaterThan(0)
    offset = 25 * HOUR
    const t = await turn(ctx, org.auth, chatId, { input: [prompt('new actor')] })
    expect(t.frames[0]!.data.closed_tool_calls).toEqual(ids)
    expect((await resultsById()).get(ids[0]!)!.part.tombstone_reason).toBe('expired')
  })

  it('pending calls survive eviction: the rehydrated actor closes them by result', async () => {
    const { ids } = await callTools('/tool a {}\n/tool b {}')
    ctx.host.evictIdle(Date.now() + 365 * 24 * HOUR)
    expect(ctx.host.size).toBe(0)
    const t = await turn(ctx, org.auth, chatId, { input: [toolResult(ids[0]!, 'A', 'a'), toolResult(ids[1]!, 'B', 'b')] })
    expect([...t.frames[0]!.data.closed_tool_calls].sort()).toEqual([...ids].sort())
    const results = await resultsById()
    expect([...results.values()].map((r) => r.part.tombstone_reason)).toEqual([undefined, undefined])
  })
})

describe('422 unknown_tool_use_id', () => {
  it('a tool_result for an id never called writes nothing', async () => {
    const before = snapshotRows(ctx.store)
    const res = await postTurn(ctx, org.auth, chatId, { model: 'sandbox/echo', input: [toolResult('call_nope', 'x')] })
    const error = expectError(res, 422, 'unknown_tool_use_id')
    expect(error.message).toContain('call_nope')
    expect(snapshotRows(ctx.store)).toEqual(before)
  })

  it('a wrong id next to a pending call writes nothing and leaves the call pending', async () => {
    const { ids } = await callTools()
    const before = snapshotRows(ctx.store)
    const res = await postTurn(ctx, org.auth, chatId, {
      model: 'sandbox/echo',
      input: [toolResult(ids[0]!, 'right'), toolResult('call_wrong', 'wrong')],
      idempotency_key: 'unknown-id-key',
    })
    expectError(res, 422, 'unknown_tool_use_id')
    expect(snapshotRows(ctx.store)).toEqual(before)
    // Neither a tombstone nor the key was written: the same key and the call are still usable.
    const t = await turn(ctx, org.auth, chatId, { input: [toolResult(ids[0]!, 'right')], idempotency_key: 'unknown-id-key' })
    expect(t.frames[0]!.data.closed_tool_calls).toEqual(ids)
    expect((await resultsById()).get(ids[0]!)!.part.text).toBe('right')
  })

  it('an id pending in another chat is unknown here', async () => {
    const { ids } = await callTools()
    const otherChat = await newChat(ctx, org.auth)
    const res = await postTurn(ctx, org.auth, otherChat, { model: 'sandbox/echo', input: [toolResult(ids[0]!, 'x')] })
    expectError(res, 422, 'unknown_tool_use_id')
  })
})

/** The id of the chat's running run, once admitted. */
async function runningId(): Promise<string> {
  const ready = deferred<string>()
  const poll = () => {
    const run = ctx.store.runs.runningRun(chatId)
    if (run) ready.resolve(run.id)
    else setTimeout(poll, 5)
  }
  poll()
  return ready.promise
}
