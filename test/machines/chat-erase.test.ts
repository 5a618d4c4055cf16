import { afterEach, describe, expect, it } from 'vitest'
import { createActor, fromPromise, type Actor } from 'xstate'
import { chatMachine } from '../../machines/chat.machine.ts'
import type { AppendOutcome, ChatInput, DeleteChatInput, EraseOutcome, ErasePartsInput } from '../../machines/chat.types.ts'
import { ChatRuntime, followMachine } from '../../src/actors/chat-runtime.ts'
import { NotFoundError, RunInProgressError, UnavailableError } from '../../src/domain/errors.ts'
import type { ErasablePart } from '../../src/domain/chats/erase-parts.ts'
import type { ChatFacts } from '../../src/domain/turns/decide-admission.ts'
import type { PendingCall } from '../../src/domain/turns/close-pending-calls.ts'

/**
 * ERASE (docs/decisions/056-erasing-items.md): a part erased from a chat's ledger by the chat's actor,
 * at rest only, with the rest of its tool call's exchange; the chat's facts are read again after.
 */
const CHAT_ID = '3f8e1c2a-0000-4000-8000-0000000000e1'
const PROMPT: ErasablePart = { ordinal: 12, body: { type: 'prompt', text: 'forget this' } }
const CALL: ErasablePart = { ordinal: 20, body: { type: 'tool_call', tool_name: 'get_weather', tool_use_id: 'call-1', arguments: '{}' } }
const RESULT: ErasablePart = {
  ordinal: 23,
  body: { type: 'tool_result', tool_name: 'get_weather', tool_use_id: 'call-1', text: 'sunny', is_error: false, trust: 'trusted' },
}
const PENDING: PendingCall = { tool_use_id: 'call-1', tool_name: 'get_weather', created_at: '2030-01-01T00:00:00.000Z', run_status: 'succeeded' }
const AT_REST: ChatFacts = { pendingCalls: [], latestCustomerRun: { id: 'run-1', status: 'succeeded' } }

const actors: Actor<typeof chatMachine>[] = []
afterEach(() => actors.splice(0).forEach((a) => a.stop()))

function harness(input: Partial<ChatInput> = {}) {
  const erasures: { input: ErasePartsInput; resolve: (facts: ChatFacts) => void; reject: (e: unknown) => void }[] = []
  const deleted: string[] = []
  const machine = chatMachine.provide({
    actors: {
      eraseParts: fromPromise<ChatFacts, ErasePartsInput>(({ input }) => new Promise<ChatFacts>((resolve, reject) => erasures.push({ input, resolve, reject }))),
      deleteChat: fromPromise<void, DeleteChatInput>(async ({ input }) => {
        deleted.push(input.chatId)
      }),
    },
  })
  const runtime = new ChatRuntime(CHAT_ID)
  const actor = createActor(machine, { input: { chatId: CHAT_ID, pendingCalls: [], latestCustomerRun: null, ...input } })
  followMachine(actor, runtime)
  actor.start()
  actors.push(actor)
  let next = 0
  const erase = (target: ErasablePart, exchange: ErasablePart[] = []) => {
    const requestId = `erase-${++next}`
    const answer = new Promise<EraseOutcome>((resolve) => runtime.erasures.set(requestId, { resolve }))
    actor.send({ type: 'ERASE', requestId, target, exchange })
    return answer
  }
  const append = () => {
    const requestId = `append-${++next}`
    const answer = new Promise<AppendOutcome>((resolve) => runtime.appends.set(requestId, { resolve }))
    actor.send({ type: 'APPEND', requestId, parts: [{ body: { type: 'prompt', text: 'x' }, media: [], tokens: 1 }] })
    return answer
  }
  return { actor, runtime, erasures, deleted, erase, append, state: () => actor.getSnapshot().value }
}

describe('chat machine: ERASE', () => {
  it('at rest: idle → erasing → idle, eraseParts erases exactly the part, the caller gets its ordinal', async () => {
    const h = harness()
    const answer = h.erase(PROMPT)
    expect(h.state()).toBe('erasing')
    expect(h.erasures.map((e) => e.input)).toEqual([{ chatId: CHAT_ID, ordinals: [12] }])
    h.erasures[0]!.resolve(AT_REST)
    expect(await answer).toEqual({ kind: 'erased', ordinals: [12] })
    expect(h.state()).toBe('idle')
    expect(h.actor.getSnapshot().context.erasing).toBeNull()
  })

  it('a tool result is erased with its call, and a call with its result: no vendor takes half an exchange', async () => {
    const h = harness()
    const byResult = h.erase(RESULT, [CALL, RESULT])
    expect(h.erasures[0]!.input.ordinals).toEqual([20, 23])
    h.erasures[0]!.resolve(AT_REST)
    expect(await byResult).toEqual({ kind: 'erased', ordinals: [20, 23] })
    const byCall = h.erase(CALL, [CALL, RESULT])
    expect(h.erasures[1]!.input.ordinals).toEqual([20, 23])
    h.erasures[1]!.resolve(AT_REST)
    await byCall
  })

  it('with calls pending, a pending call can be erased: the chat reads its facts again and is at rest with none pending', async () => {
    const h = harness({ pendingCalls: [PENDING], latestCustomerRun: { id: 'run-1', status: 'succeeded' } })
    expect(h.state()).toBe('awaitingToolResults')
    const answer = h.erase(CALL, [CALL])
    expect(h.state()).toBe('erasing')
    h.erasures[0]!.resolve(AT_REST)
    expect((await answer).kind).toBe('erased')
    expect(h.state()).toBe('idle')
    expect(h.actor.getSnapshot().context.pendingCalls).toEqual([])
  })

  it('erasing an older part while calls are pending leaves them pending', async () => {
    const h = harness({ pendingCalls: [PENDING], latestCustomerRun: { id: 'run-1', status: 'succeeded' } })
    const answer = h.erase(PROMPT)
    h.erasures[0]!.resolve({ pendingCalls: [PENDING], latestCustomerRun: { id: 'run-1', status: 'succeeded' } })
    await answer
    expect(h.state()).toBe('awaitingToolResults')
  })

  it('while a run is left running in the ledger: refused with run_in_progress naming it, nothing erased', async () => {
    const h = harness({ outstanding: { id: 'run-9', lease_owner: 'other', lease_expires_at: '2999-01-01T00:00:00.000Z' } as never })
    const answer = await h.erase(PROMPT)
    expect(answer.kind).toBe('refused')
    expect((answer as { error: RunInProgressError }).error).toBeInstanceOf(RunInProgressError)
    expect((answer as { error: RunInProgressError }).error.message).toContain('run-9')
    expect(h.erasures).toEqual([])
  })

  it('a second ERASE, an APPEND or a turn while one is erased is refused with 503 to retry; the first completes', async () => {
    const h = harness()
    const first = h.erase(PROMPT)
    const second = await h.erase(CALL, [CALL])
    expect((second as { error: unknown }).error).toBeInstanceOf(UnavailableError)
    const appended = await h.append()
    expect((appended as { error: unknown }).error).toBeInstanceOf(UnavailableError)
    expect(h.erasures).toHaveLength(1)
    h.erasures[0]!.resolve(AT_REST)
    expect(await first).toEqual({ kind: 'erased', ordinals: [12] })
  })

  it('an erasure that cannot be written is refused with its error, and the chat is at rest again', async () => {
    const h = harness()
    const answer = h.erase(PROMPT)
    h.erasures[0]!.reject(new Error('disk full'))
    const outcome = await answer
    expect(outcome.kind).toBe('refused')
    expect(h.state()).toBe('idle')
  })

  it('a DELETE during the erasure is carried out after it; an ERASE of a deleted chat is refused 404', async () => {
    const h = harness()
    const answer = h.erase(PROMPT)
    h.actor.send({ type: 'DELETE', requestId: 'delete-1' })
    h.erasures[0]!.resolve(AT_REST)
    expect((await answer).kind).toBe('erased')
    await new Promise((r) => setTimeout(r, 0))
    expect(h.deleted).toEqual([CHAT_ID])
  })

  it('while the chat is being deleted: refused 404', async () => {
    const h = harness()
    // deleteChat never ends here: the chat stays in `deleting`.
    const stuck = chatMachine.provide({ actors: { deleteChat: fromPromise<void, DeleteChatInput>(() => new Promise(() => {})) } })
    const runtime = new ChatRuntime(CHAT_ID)
    const actor = createActor(stuck, { input: { chatId: CHAT_ID, pendingCalls: [], latestCustomerRun: null } })
    followMachine(actor, runtime)
    actor.start()
    actors.push(actor)
    actor.send({ type: 'DELETE', requestId: 'd' })
    expect(actor.getSnapshot().value).toBe('deleting')
    const answer = new Promise<EraseOutcome>((resolve) => runtime.erasures.set('e', { resolve }))
    actor.send({ type: 'ERASE', requestId: 'e', target: PROMPT, exchange: [] })
    expect(((await answer) as { error: unknown }).error).toBeInstanceOf(NotFoundError)
    expect(h.erasures).toEqual([])
  })
})
