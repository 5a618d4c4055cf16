import { afterEach, describe, expect, it } from 'vitest'
import { createActor, fromPromise, type Actor } from 'xstate'
import { chatMachine } from '../../machines/chat.machine.ts'
import type { AppendOutcome, AppendPartsInput, ChatInput, DeleteChatInput } from '../../machines/chat.types.ts'
import { ChatRuntime, followMachine } from '../../src/actors/chat-runtime.ts'
import { NotFoundError, RunInProgressError, UnavailableError, ValidationError } from '../../src/domain/errors.ts'
import type { PreparedPart } from '../../src/domain/turns/submission.ts'

/**
 * APPEND (decision 055): items written to a chat's ledger outside a turn, by the chat's actor. Only
 * at rest with no call pending; everything else is refused and writes nothing.
 */
const CHAT_ID = '3f8e1c2a-0000-4000-8000-0000000000a1'
const PART: PreparedPart = { body: { type: 'prompt', text: 'remember this' }, media: [], tokens: 3 }
const actors: Actor<typeof chatMachine>[] = []
afterEach(() => actors.splice(0).forEach((a) => a.stop()))

function harness(input: Partial<ChatInput> = {}) {
  const writes: { input: AppendPartsInput; resolve: (ordinals: number[]) => void; reject: (e: unknown) => void }[] = []
  const machine = chatMachine.provide({
    actors: {
      appendParts: fromPromise<number[], AppendPartsInput>(
        ({ input }) => new Promise<number[]>((resolve, reject) => writes.push({ input, resolve, reject })),
      ),
      deleteChat: fromPromise<void, DeleteChatInput>(async () => {}),
    },
  })
  const runtime = new ChatRuntime(CHAT_ID)
  const actor = createActor(machine, { input: { chatId: CHAT_ID, pendingCalls: [], latestCustomerRun: null, ...input } })
  followMachine(actor, runtime)
  actor.start()
  actors.push(actor)
  let next = 0
  const append = () => {
    const requestId = `append-${++next}`
    const answer = new Promise<AppendOutcome>((resolve) => runtime.appends.set(requestId, { resolve }))
    actor.send({ type: 'APPEND', requestId, parts: [PART] })
    return answer
  }
  return { actor, writes, append, state: () => actor.getSnapshot().value }
}

describe('chat machine: APPEND', () => {
  it('at rest with nothing pending: idle → appending → idle, appendParts writes exactly the items, the caller gets their ordinals', async () => {
    const h = harness()
    const answer = h.append()
    expect(h.state()).toBe('appending')
    expect(h.writes.map((w) => w.input)).toEqual([{ chatId: CHAT_ID, parts: [PART] }])
    h.writes[0]!.resolve([41])
    expect(await answer).toEqual({ kind: 'appended', ordinals: [41] })
    expect(h.state()).toBe('idle')
    expect(h.actor.getSnapshot().context.appending).toBeNull()
  })

  it('with tool calls pending: refused (the call\'s result must follow it), nothing written, still awaiting the results', async () => {
    const h = harness({ pendingCalls: [{ tool_use_id: 'call-1', tool_name: 'get_weather', created_at: '2030-01-01T00:00:00.000Z', run_status: 'succeeded' }] })
    const answer = await h.append()
    expect(answer.kind).toBe('refused')
    expect((answer as { error: unknown }).error).toBeInstanceOf(ValidationError)
    expect(h.writes).toEqual([])
    expect(h.state()).toBe('awaitingToolResults')
  })

  it('while a run is left running in the ledger: refused with run_in_progress naming it, nothing written', async () => {
    const h = harness({ outstanding: { id: 'run-9', lease_owner: 'other', lease_expires_at: '2999-01-01T00:00:00.000Z' } as never })
    const answer = await h.append()
    expect((answer as { error: RunInProgressError }).error).toBeInstanceOf(RunInProgressError)
    expect((answer as { error: RunInProgressError }).error.message).toContain('run-9')
    expect(h.writes).toEqual([])
  })

  it('a second APPEND, or a turn, while one is being written is refused with 503 to retry; the first completes', async () => {
    const h = harness()
    const first = h.append()
    const second = await h.append()
    expect((second as { error: unknown }).error).toBeInstanceOf(UnavailableError)
    expect(h.writes).toHaveLength(1)
    h.writes[0]!.resolve([7])
    expect(await first).toEqual({ kind: 'appended', ordinals: [7] })
  })

  it('a failed write is answered with its error and leaves the chat at rest', async () => {
    const h = harness()
    const answer = h.append()
    h.writes[0]!.reject(new Error('disk full'))
    expect(await answer).toEqual({ kind: 'refused', error: new Error('disk full') })
    expect(h.state()).toBe('idle')
  })

  it('a DELETE while appending deletes the chat once the items are written; an APPEND then finds it gone', async () => {
    const h = harness()
    const answer = h.append()
    h.actor.send({ type: 'DELETE', requestId: 'delete-1' })
    expect(h.state()).toBe('appending')
    h.writes[0]!.resolve([3])
    expect(await answer).toEqual({ kind: 'appended', ordinals: [3] })
    expect(['deleting', 'deleted']).toContain(h.state())
    if (h.state() === 'deleting') expect((await h.append() as { error: unknown }).error).toBeInstanceOf(NotFoundError)
  })
})
