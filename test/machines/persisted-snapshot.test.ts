import { describe, expect, it, vi } from 'vitest'
import { createActor, fromPromise, type Actor } from 'xstate'
import { chatMachine } from '../../machines/chat.machine.ts'
import type { SettledRun } from '../../machines/run-settlement.machine.ts'
import type { ChatEmitted, ChatInput, RunAdmission, StreamRunInput } from '../../machines/chat.types.ts'
import type { Submission } from '../../src/domain/turns/submission.ts'
import type { TurnFacts } from '../../src/domain/turns/admission-rules.ts'
import { runOutcomeFixture } from '../helpers/run-outcome-fixture.ts'

/**
 * Issue 25: the chat machine's context is data, so a chat's actor can be persisted mid-turn with
 * getPersistedSnapshot, carried as JSON, restored in a new host and go on deciding as the original.
 */
const CHAT = 'chat-persisted'
const submission = (runId: string, input: unknown[] = [{ type: 'prompt', text: 'hi' }]) =>
  ({
    runId,
    orgId: 'org',
    apiKeyId: null,
    chatId: CHAT,
    namespace: null,
    request: { model: 'sandbox/echo', input },
    model: { id: 'model', name: 'sandbox/echo' },
    input: input.map((body) => ({ body, media: [], tokens: 1 })),
  }) as unknown as Submission
const data = (runId: string): RunAdmission => ({ runId, createdAt: '2030-01-02T03:04:05.000Z', startedAtMs: 0, estimatedInputTokens: 5, compaction: null, refits: 0 })

/** A host's machine with fakes that only record: streams never end unless told, settlements succeed. */
function host() {
  const streams: StreamRunInput[] = []
  const ends: Array<(status: 'succeeded' | 'cancelled') => void> = []
  const machine = chatMachine.provide({
    actors: {
      readTurn: fromPromise(async (): Promise<TurnFacts> => ({ runningRuns: { count: 0, cap: 10 }, overflow: null, budget: null, unmetToolChoice: null })),
      writeTurn: fromPromise(async ({ input }) => data(input.submission.runId)),
      streamRun: fromPromise(({ input }) => {
        streams.push(input)
        return new Promise((resolve) => ends.push((status) => resolve(runOutcomeFixture(status))))
      }),
      settleRun: fromPromise(async (): Promise<SettledRun> => ({ cost: '0', eager: null })),
    },
  })
  return { machine, streams, ends }
}

/** Everything the actor emits, as plain data (an error by its class and code). */
function recordEmitted(actor: Actor<typeof chatMachine>) {
  const seen: unknown[] = []
  for (const type of ['admitted', 'rejected', 'abortRequested', 'deleteAnswered', 'forkAnswered', 'compacting', 'relinquished'] as const) {
    actor.on(type, (e: ChatEmitted) => {
      const error = 'error' in e ? (e.error as { constructor: { name: string }; code?: string; details?: unknown }) : null
      seen.push(error ? { ...e, error: { name: error.constructor.name, code: error.code, details: error.details } } : e)
    })
  }
  return seen
}

/** Whether a value is plain data all through: no functions, no class instances. */
function isPlainData(value: unknown): boolean {
  if (value === null || ['string', 'number', 'boolean', 'undefined'].includes(typeof value)) return true
  if (typeof value !== 'object') return false
  if (Array.isArray(value)) return value.every(isPlainData)
  const proto = Object.getPrototypeOf(value)
  return (proto === Object.prototype || proto === null) && Object.values(value as object).every(isPlainData)
}

const settle = async () => {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve))
}

describe('a chat actor persisted mid-turn and restored in a new host (getPersistedSnapshot)', () => {
  it('its context is plain data; restored from JSON it makes the same decisions as the original', async () => {
    const first = host()
    const input: ChatInput = { chatId: CHAT, pendingCalls: [], latestCustomerRun: { id: 'run-0', status: 'succeeded' } }
    const original = createActor(first.machine, { input }).start()
    original.send({ type: 'SUBMIT', requestId: 'r1', submission: submission('run-1'), at: '2030-01-02T03:04:05.000Z' })
    await settle()
    expect(original.getSnapshot().value).toEqual({ running: { streaming: 'live' } })
    expect(isPlainData(original.getSnapshot().context)).toBe(true)

    const persisted = original.getPersistedSnapshot()
    const carried = JSON.parse(JSON.stringify(persisted)) as typeof persisted
    expect(carried).toEqual(persisted)

    const second = host()
    // The input is the ledger's hydration; a snapshot given, the actor is restored from it instead.
    const restored = createActor(second.machine, { snapshot: carried, input }).start()
    expect(restored.getSnapshot().value).toEqual(original.getSnapshot().value)
    expect(restored.getSnapshot().context).toEqual(original.getSnapshot().context)
    // The restored host streams the same run: its invoked actor is started again with the same data.
    await settle()
    expect(second.streams).toEqual([{ chatId: CHAT, admission: data('run-1') }])

    // The same events, the same decisions.
    const fromOriginal = recordEmitted(original)
    const fromRestored = recordEmitted(restored)
    for (const actor of [original, restored]) {
      actor.send({ type: 'SUBMIT', requestId: 'r2', submission: submission('run-2'), at: '2030-01-02T03:04:06.000Z' })
      actor.send({ type: 'CANCEL', runId: 'someone-else' })
      actor.send({ type: 'FORK', requestId: 'f1', upToOrdinal: 4, ledger: { lastOrdinal: 6, lastSettledOrdinal: 3 } })
      actor.send({ type: 'CANCEL', runId: 'run-1' })
    }
    expect(fromOriginal).toEqual([
      { type: 'rejected', requestId: 'r2', error: { name: 'RunInProgressError', code: 'run_in_progress', details: { run_id: 'run-1' } } },
      { type: 'forkAnswered', requestId: 'f1', outcome: expect.objectContaining({ kind: 'refused' }) },
      { type: 'abortRequested', runId: 'run-1' },
    ])
    expect(fromRestored).toEqual(fromOriginal)
    expect(restored.getSnapshot().value).toEqual({ running: { streaming: 'cancelling' } })
    expect(original.getSnapshot().value).toEqual({ running: { streaming: 'cancelling' } })

    // Both settle the run as cancelled and come to rest with the same facts.
    first.ends[0]!('cancelled')
    second.ends[0]!('cancelled')
    await settle()
    expect(restored.getSnapshot().value).toBe('idle')
    expect(restored.getSnapshot().context).toEqual(original.getSnapshot().context)
    expect(restored.getSnapshot().context.latestCustomerRun).toEqual({ id: 'run-1', status: 'cancelled' })
    original.stop()
    restored.stop()
  })

  it('at rest with calls pending, a restored actor refuses and admits exactly what the original does', async () => {
    const calls = [{ tool_use_id: 'call_a', tool_name: 'lookup', created_at: '2030-01-02T03:04:05.000Z', run_status: 'succeeded' as const }]
    const input: ChatInput = { chatId: CHAT, pendingCalls: calls, latestCustomerRun: { id: 'run-0', status: 'succeeded' } }
    const original = createActor(host().machine, { input }).start()
    const persisted = original.getPersistedSnapshot()
    const restored = createActor(host().machine, { snapshot: JSON.parse(JSON.stringify(persisted)) as typeof persisted, input }).start()
    expect(restored.getSnapshot().value).toBe('awaitingToolResults')
    const seen = [recordEmitted(original), recordEmitted(restored)]
    const unknownId = submission('run-u', [{ type: 'tool_result', tool_use_id: 'nope', text: 'x' }])
    const answer = submission('run-a', [{ type: 'tool_result', tool_use_id: 'call_a', text: 'x' }])
    for (const actor of [original, restored]) {
      actor.send({ type: 'SUBMIT', requestId: 'u', submission: unknownId, at: '2030-01-02T03:04:06.000Z' })
      actor.send({ type: 'SUBMIT', requestId: 'a', submission: answer, at: '2030-01-02T03:04:06.000Z' })
    }
    await settle()
    expect(seen[0]).toEqual([
      { type: 'rejected', requestId: 'u', error: expect.objectContaining({ code: 'unknown_tool_use_id' }) },
      { type: 'admitted', requestId: 'a', runId: 'run-a' },
    ])
    expect(seen[1]).toEqual(seen[0])
    original.stop()
    restored.stop()
  })

  it('persisted while the turn is being written, restored: writeTurn is invoked again with the same data, and the run streams', async () => {
    const writes: unknown[][] = [[], []]
    const machineWith = (i: number) =>
      host().machine.provide({
        actors: {
          writeTurn: fromPromise(({ input }) => {
            writes[i]!.push(input)
            // The first host never finishes writing: it is persisted meanwhile.
            return i === 0 ? new Promise<never>(() => undefined) : Promise.resolve(data(input.submission.runId))
          }),
        },
      })
    const input: ChatInput = { chatId: CHAT, pendingCalls: [], latestCustomerRun: null }
    const original = createActor(machineWith(0), { input }).start()
    original.send({ type: 'SUBMIT', requestId: 'r1', submission: submission('run-1'), at: '2030-01-02T03:04:05.000Z' })
    await settle()
    expect(original.getSnapshot().value).toEqual({ running: { packing: 'writing' } })
    const persisted = original.getPersistedSnapshot()
    const restored = createActor(machineWith(1), { snapshot: JSON.parse(JSON.stringify(persisted)) as typeof persisted, input }).start()
    const seen = recordEmitted(restored)
    await settle()
    // The host's packed turn is runtime memory, not data: the host never restores a snapshot (it
    // rebuilds an actor from the ledger), so what a restored writeTurn gets is the machine's data.
    expect(writes[1]).toEqual(writes[0])
    expect(seen).toEqual([{ type: 'admitted', requestId: 'r1', runId: 'run-1' }])
    expect(restored.getSnapshot().value).toEqual({ running: { streaming: 'live' } })
    original.stop()
    restored.stop()
  })

  it('persisted while its settlement waits to be tried again: the chat is restored in that wait with its attempts, and settles', async () => {
    let failing = true
    const settles: string[] = []
    const machine = host().machine.provide({
      actors: {
        streamRun: fromPromise(async () => runOutcomeFixture('succeeded')),
        // The first host's backoff never ends: it is persisted while it waits.
        settleBackoff: fromPromise(() => (failing ? new Promise<void>(() => undefined) : Promise.resolve())),
        settleRun: fromPromise(async ({ input }): Promise<SettledRun> => {
          settles.push(input.runId)
          if (failing) throw new Error('database is locked')
          return { cost: '0.01', eager: null }
        }),
      },
    })
    const input: ChatInput = { chatId: CHAT, pendingCalls: [], latestCustomerRun: null }
    const original = createActor(machine, { input }).start()
    original.send({ type: 'SUBMIT', requestId: 'r1', submission: submission('run-1'), at: '2030-01-02T03:04:05.000Z' })
    await vi.waitFor(() => expect(settles).toHaveLength(1))
    const persisted = original.getPersistedSnapshot()
    original.stop()
    const carried = JSON.parse(JSON.stringify(persisted)) as typeof persisted
    expect(isPlainData(carried)).toBe(true)
    // A persisted snapshot is typed opaque; as JSON it holds the state and the context, attempts included.
    const asJson = carried as unknown as { value: unknown; context: { settleAttempts: number; admission: { runId: string } } }
    expect(asJson.value).toEqual({ running: { settling: 'backingOff' } })
    expect(asJson.context).toMatchObject({ settleAttempts: 1, admission: { runId: 'run-1' } })
    // Restored, the backoff is invoked again (a delayed transition would be lost: XState does not persist it).
    failing = false
    const restored = createActor(machine, { snapshot: carried, input }).start()
    await vi.waitFor(() => expect(restored.getSnapshot().value).toBe('idle'))
    expect(settles).toEqual(['run-1', 'run-1'])
    expect(restored.getSnapshot().context.latestCustomerRun).toEqual({ id: 'run-1', status: 'succeeded' })
    restored.stop()
  })
})
