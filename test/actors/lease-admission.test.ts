import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { createActor, fromPromise, type Actor } from 'xstate'
import { createChatActorHost, type ChatActorHost } from '../../src/actors/chat-actor-host.ts'
import { createContextHistory } from '../../src/actors/context-history.ts'
import type { RunDeps } from '../../src/actors/run-deps.ts'
import type { Submission } from '../../src/actors/turn-types.ts'
import type { ChatFacts } from '../../src/domain/turns/decide-admission.ts'
import { RunInProgressError } from '../../src/domain/errors.ts'
import type { TurnRequest } from '../../src/domain/turns/submission.ts'
import { createConfigResolver } from '../../src/store/config-resolution.ts'
import { openDatabase } from '../../src/store/database.ts'
import { migrations } from '../../src/store/migrations/index.ts'
import { chatMachine, ledgerVerdict } from '../../machines/chat.machine.ts'
import type { LedgerView, ReadTurnInput, ReapRunInput } from '../../machines/chat.types.ts'
import type { TurnFacts } from '../../src/domain/turns/admission-rules.ts'
import { openTempStore } from '../helpers/temp-store.ts'
import { deferred, insertRun, prepareTurn, sandboxCatalogue, usageEntries, withFakes } from '../helpers/turns.ts'
import { admitted } from '../helpers/admitted.ts'

/**
 * Issue 11: after a restart under another node id, the ledger holds a `running` run that no actor
 * of this node holds. A turn is refused (409 run_in_progress naming it) while its lease is live,
 * whoever owns it; once the lease has expired the run is settled as `interrupted`, by the turn that
 * finds it or by the sweep at the lease's expiry, and never are two customer runs of a chat running.
 */

const NODE = 'node-b'
const OTHER = 'node-a'
const TTL = 30_000
let temp: ReturnType<typeof openTempStore>
let offset = 0
let hosts: { host: ChatActorHost; stop: () => void }[] = []
let orgId: string

function deps(): RunDeps {
  return {
    store: temp.store,
    resolver: createConfigResolver(temp.store),
    languageModelFor: withFakes({}),
    modelById: (id) => sandboxCatalogue().find((m) => m.id === id),
    now: () => new Date(Date.now() + offset),
    nodeId: NODE,
    leaseTtlMs: TTL,
    history: createContextHistory(temp.store),
  }
}

function startHost(options: Parameters<typeof createChatActorHost>[1] = {}) {
  const host = createChatActorHost(deps(), options)
  const stop = host.start()
  hosts.push({ host, stop })
  return host
}

beforeEach(() => {
  temp = openTempStore()
  offset = 0
  orgId = temp.store.organisations.create('org', 'org').id
  temp.store.balance.add(orgId, 'topup', '10')
})
afterEach(() => {
  vi.useRealTimers()
  for (const { host, stop } of hosts.splice(0)) {
    stop()
    host.stopAll()
  }
  temp.close()
})

const newChat = () => temp.store.chats.create({ orgId, namespace: null, title: null, description: null, userMetadata: {} }).id

const submission = (chatId: string, request: Partial<TurnRequest> = {}) => prepareTurn(orgId, chatId, request)

/** A run another node was streaming when it went away: its input and part of its answer written. */
function orphan(chatId: string, leaseExpiresAt: string, { origin = 'customer' as 'customer' | 'compaction', toolCall = false } = {}) {
  const runId = insertRun(temp.store, { org_id: orgId, chat_id: chatId, origin, lease_owner: OTHER, lease_expires_at: leaseExpiresAt, manifest: { estimated_input_tokens: 100, markup_percent: '5' } })
  temp.store.parts.append(chatId, [
    ...(origin === 'customer' ? [{ body: { type: 'prompt' as const, text: 'question' }, runId }] : []),
    { body: { type: 'message', text: 'half an answ' }, runId },
    ...(toolCall ? [{ body: { type: 'tool_call' as const, arguments: '{}', tool_name: 'lookup', tool_use_id: 'call_orphan' }, runId }] : []),
  ])
  return runId
}

const inMs = (ms: number) => new Date(Date.now() + offset + ms).toISOString()
const runningCustomerRuns = (chatId: string) =>
  temp.db.prepare(`SELECT COUNT(*) AS n FROM runs WHERE chat_id = ? AND status = 'running' AND origin = 'customer'`).get(chatId) as { n: number }

let requests = 0
/** Sends SUBMIT; the returned mock gets what the machine emits about it: its refusal, or its admission's run id. */
function submitTo(actor: Actor<typeof chatMachine>, submission: Submission, ledger?: LedgerView) {
  const respond = vi.fn<(o: { kind: 'rejected'; error: unknown } | { kind: 'admitted'; runId: string }) => void>()
  const requestId = `r${++requests}`
  actor.on('rejected', (e) => e.requestId === requestId && respond({ kind: 'rejected', error: e.error }))
  actor.on('admitted', (e) => e.requestId === requestId && respond({ kind: 'admitted', runId: e.runId }))
  actor.send({ type: 'SUBMIT', requestId, submission, at: ledger?.at ?? new Date().toISOString(), ...(ledger ? { ledger } : {}) })
  return respond
}

describe('admission against a lease held elsewhere', () => {
  it('refuses a turn with run_in_progress naming the orphan while its lease is live, and writes nothing', async () => {
    const chatId = newChat()
    const runId = orphan(chatId, inMs(TTL))
    const host = startHost({ leaseRenewMs: 60_000 })
    const before = temp.db.prepare('SELECT COUNT(*) AS n FROM parts').get() as { n: number }

    for (let i = 0; i < 3; i++) {
      const refused = admitted(host.submit(submission(chatId)))
      await expect(refused).rejects.toBeInstanceOf(RunInProgressError)
      await expect(refused).rejects.toMatchObject({ code: 'run_in_progress', details: { run_id: runId } })
    }
    expect(temp.store.runs.getById(runId)!.status).toBe('running')
    expect(temp.db.prepare('SELECT COUNT(*) AS n FROM parts').get()).toEqual(before)
    expect(runningCustomerRuns(chatId).n).toBe(1)
    // The actor stays at rest: a later turn is judged on the ledger again.
    expect(host.channelOf(chatId, runId)).toBeNull()
  })

  it('refuses it whoever owns the lease: this node too, when no actor here holds the run', async () => {
    const chatId = newChat()
    const host = startHost({ leaseRenewMs: 60_000 })
    const runId = orphan(chatId, inMs(TTL))
    temp.db.prepare('UPDATE runs SET lease_owner = ? WHERE id = ?').run(NODE, runId)
    await expect(admitted(host.submit(submission(chatId)))).rejects.toMatchObject({ code: 'run_in_progress', details: { run_id: runId } })
  })

  it('settles an orphan whose lease expired as interrupted, once, and admits the turn', async () => {
    const chatId = newChat()
    const runId = orphan(chatId, inMs(TTL))
    const host = startHost({ leaseRenewMs: 60_000 })
    // The lease runs out; no sweep has run since (the renewal tick is a minute away, and the clock jumped).
    offset = TTL + 1
    const admission = await admitted(host.submit(submission(chatId)))
    const reaped = temp.store.runs.getById(runId)!
    expect(reaped.status).toBe('failed')
    expect(reaped.error).toBe('interrupted')
    expect(reaped.settled_at).not.toBeNull()
    expect(usageEntries(temp.store, runId)).toHaveLength(1)
    expect(runningCustomerRuns(chatId).n).toBeLessThanOrEqual(1)
    await admission.channel.settled
    expect(temp.store.runs.getById(admission.runId)!.status).toBe('succeeded')
    expect(usageEntries(temp.store, runId)).toHaveLength(1)
  })

  it('closes the orphan’s tool calls like any failed run’s once it is settled (the actor reads the ledger again)', async () => {
    const chatId = newChat()
    const runId = orphan(chatId, inMs(TTL), { toolCall: true })
    const host = startHost({ leaseRenewMs: 60_000 })
    await expect(admitted(host.submit(submission(chatId)))).rejects.toBeInstanceOf(RunInProgressError)
    offset = TTL + 1
    const admission = await admitted(host.submit(submission(chatId)))
    expect(admission.closedToolCalls).toEqual(['call_orphan'])
    const tombstone = temp.store.parts.ofRun(admission.runId).map((p) => JSON.parse(p.body)).find((b) => b.type === 'tool_result')
    expect(tombstone).toMatchObject({ tool_use_id: 'call_orphan', tombstone_reason: 'cancelled' })
    await admission.channel.settled
    expect(temp.store.runs.getById(runId)!.error).toBe('interrupted')
  })

  it('a compaction run of the chat does not hold its turns: compaction runs run beside a customer run', async () => {
    const chatId = newChat()
    orphan(chatId, inMs(TTL), { origin: 'compaction' })
    const host = startHost({ leaseRenewMs: 60_000 })
    const admission = await admitted(host.submit(submission(chatId)))
    await admission.channel.settled
    expect(temp.store.runs.getById(admission.runId)!.status).toBe('succeeded')
  })
})

describe('the sweep at a lease’s expiry', () => {
  it('settles another node’s run the moment its lease expires, without waiting for the renewal tick', async () => {
    // A fake clock (timers and Date; the actors' promises and setImmediate stay real), moved by hand:
    // what settles the run is shown by how far the clock went, never by how long the test waited.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] })
    const LEASE_LEFT_MS = 1_500
    const chatId = newChat()
    const expiresAt = inMs(LEASE_LEFT_MS)
    const runId = orphan(chatId, expiresAt, { toolCall: true })
    const host = startHost({ leaseRenewMs: 60_000 })
    const status = () => temp.store.runs.getById(runId)!.status
    /** Lets the actors finish what the clock set off: a bounded number of turns of the event loop, no time. */
    const drain = async () => {
      for (let i = 0; i < 50 && status() === 'running'; i++) await new Promise((resolve) => setImmediate(resolve))
    }
    expect(status()).toBe('running')
    // The chat's actor exists (hydrated with the orphan as its latest run) before the sweep settles it.
    await expect(admitted(host.submit(submission(chatId)))).rejects.toMatchObject({ details: { run_id: runId } })
    // Up to its lease's last millisecond the run is another node's: left running.
    await vi.advanceTimersByTimeAsync(LEASE_LEFT_MS - 1)
    await drain()
    expect(status()).toBe('running')
    // A few milliseconds past the expiry it is settled. The renewal tick is 60 s of this clock away and
    // never ran, and no turn came: the timer set at the lease's expiry settled it.
    await vi.advanceTimersByTimeAsync(10)
    await drain()
    expect(status()).toBe('failed')
    expect(temp.store.runs.getById(runId)!.completed_at! >= expiresAt).toBe(true)
    expect(temp.store.runs.getById(runId)!.error).toBe('interrupted')
    expect(usageEntries(temp.store, runId)).toHaveLength(1)
    vi.useRealTimers()
    // The next turn sees the ledger as the sweep left it: the orphan's call is closed as cancelled.
    const admission = await admitted(host.submit(submission(chatId)))
    expect(admission.closedToolCalls).toEqual(['call_orphan'])
    await admission.channel.settled
    expect(usageEntries(temp.store, runId)).toHaveLength(1)
  })

  it('once serving, a lapsed run of a chat with no actor here is settled by that chat’s actor, loaded for it: customer and compaction runs alike (issue 25)', async () => {
    const customerChat = newChat()
    const compactionChat = newChat()
    // Both leases lapse after the start's own sweep: the timer at their expiry finds them. 1.5 s, not
    // less: on a loaded machine the host may start later than a shorter lapse, and its start-up sweep
    // (which settles without loading actors) would find them instead.
    const customerRun = orphan(customerChat, inMs(1_500), { toolCall: true })
    const compactionRun = orphan(compactionChat, inMs(1_500), { origin: 'compaction' })
    const host = startHost({ leaseRenewMs: 60_000 })
    expect(host.size).toBe(0)
    await vi.waitFor(
      () => {
        expect(temp.store.runs.getById(customerRun)).toMatchObject({ status: 'failed', error: 'interrupted' })
        expect(temp.store.runs.getById(compactionRun)).toMatchObject({ status: 'failed', error: 'interrupted' })
      },
      { timeout: 5_000, interval: 10 },
    )
    // Loaded to settle them: each chat's actor now knows what the ledger says.
    expect(host.size).toBe(2)
    expect(usageEntries(temp.store, customerRun)).toHaveLength(1)
    expect(usageEntries(temp.store, compactionRun)).toEqual([expect.objectContaining({ entry_type: 'compaction' })])
    const next = await admitted(host.submit(submission(customerChat)))
    expect(next.closedToolCalls).toEqual(['call_orphan'])
    await next.channel.settled
  })

  it('renews at a third of the lease by default, so its own runs never look expired', async () => {
    const chatId = newChat()
    const host = createChatActorHost({ ...deps(), leaseTtlMs: 600 })
    hosts.push({ host, stop: host.start() })
    const gate = deferred()
    const admission = await admitted(host.submit(submission(chatId, { input: [{ type: 'prompt', text: '/slow 100\n/long 20' }] })))
    setTimeout(() => gate.resolve(), 1_500).unref()
    await gate.promise
    // 1.5 s is more than two leases: renewed all along, never swept.
    expect(temp.store.runs.getById(admission.runId)!.status).toBe('running')
    await expect(admitted(host.submit(submission(chatId)))).rejects.toMatchObject({ details: { run_id: admission.runId } })
    await admission.channel.settled
    expect(temp.store.runs.getById(admission.runId)!.status).toBe('succeeded')
  })
})

describe('one running customer run per chat in the ledger (migration 0009)', () => {
  it('the index refuses a second running customer run, not a compaction run beside it', () => {
    const chatId = newChat()
    orphan(chatId, inMs(TTL))
    expect(() => orphan(chatId, inMs(TTL))).toThrow(/UNIQUE/)
    expect(() => orphan(chatId, inMs(TTL), { origin: 'compaction' })).not.toThrow()
    expect(() => orphan(chatId, inMs(TTL), { origin: 'compaction' })).not.toThrow()
    expect(() => orphan(newChat(), inMs(TTL))).not.toThrow()
  })

  it('a ledger that already holds two keeps the newest running and ends the older as interrupted', () => {
    const file = `${temp.dir}/old.db`
    // The schema before 0009, and two running customer runs of one chat in it (as issue 11 could leave).
    const before = openDatabase(file, { migrations: migrations.slice(0, migrations.findIndex((m) => m.name === '0009-one-running-customer-run')) })
    const insert = (id: string, createdAt: string) =>
      before
        .prepare(
          `INSERT INTO runs (id, org_id, chat_id, origin, status, model_id, model_name, created_at, manifest, lease_owner, lease_expires_at)
           VALUES (?, 'org', 'chat', 'customer', 'running', 'm', 'm', ?, '{}', 'a', ?)`,
        )
        .run(id, createdAt, '2030-01-01T00:00:00.000Z')
    before.pragma('foreign_keys = OFF')
    insert('older', '2026-01-01T00:00:00.000Z')
    insert('newer', '2026-01-01T00:00:01.000Z')
    before.close()

    const after = openDatabase(file)
    after.pragma('foreign_keys = OFF')
    const rows = after.prepare(`SELECT id, status, error, lease_owner FROM runs ORDER BY id`).all()
    expect(rows).toEqual([
      { id: 'newer', status: 'running', error: null, lease_owner: 'a' },
      { id: 'older', status: 'failed', error: 'interrupted', lease_owner: null },
    ])
    after.close()
  })
})

describe('the chat machine: the rule over the ledger’s view', () => {
  it('ledgerVerdict: free without a running run, held while its lease is live, orphaned at and after its expiry', () => {
    const run = { id: 'r', leaseOwner: 'a', leaseExpiresAt: '2030-01-01T00:00:10.000Z' }
    expect(ledgerVerdict(undefined)).toBe('free')
    expect(ledgerVerdict({ runningRun: null, at: '2030-01-01T00:00:00.000Z' })).toBe('free')
    expect(ledgerVerdict({ runningRun: run, at: '2030-01-01T00:00:09.999Z' })).toBe('held')
    expect(ledgerVerdict({ runningRun: run, at: '2030-01-01T00:00:10.000Z' })).toBe('orphaned')
    expect(ledgerVerdict({ runningRun: { ...run, leaseExpiresAt: null }, at: '2030-01-01T00:00:00.000Z' })).toBe('orphaned')
  })

  it('held: rejected at rest, nothing invoked; orphaned: reaping, then packing with the facts read afterwards', async () => {
    const admits: ReadTurnInput[] = []
    const reaps: { input: ReapRunInput; d: ReturnType<typeof deferred<ChatFacts>> }[] = []
    const machine = chatMachine.provide({
      actors: {
        readTurn: fromPromise<TurnFacts, ReadTurnInput>(({ input }) => {
          admits.push(input)
          return new Promise<TurnFacts>(() => {})
        }),
        reapRun: fromPromise<ChatFacts, ReapRunInput>(({ input }) => {
          const d = deferred<ChatFacts>()
          reaps.push({ input, d })
          return d.promise
        }),
      },
    })
    const actor = createActor(machine, { input: { chatId: 'chat', pendingCalls: [], latestCustomerRun: { id: 'orphan', status: 'running' } } })
    actor.start()
    const s = submission(newChat())
    const run = { id: 'orphan', leaseOwner: 'a', leaseExpiresAt: '2030-01-01T00:00:10.000Z' }

    const held = submitTo(actor, s, { runningRun: run, at: '2030-01-01T00:00:00.000Z' })
    expect(held).toHaveBeenCalledTimes(1)
    const outcome = held.mock.calls[0]![0] as { kind: string; error: RunInProgressError }
    expect(outcome.kind).toBe('rejected')
    expect(outcome.error.details).toEqual({ run_id: 'orphan' })
    expect(actor.getSnapshot().value).toBe('idle')
    expect(reaps).toHaveLength(0)

    const later = submitTo(actor, s, { runningRun: run, at: '2030-01-01T00:00:11.000Z' })
    expect(actor.getSnapshot().value).toEqual({ running: 'reaping' })
    expect(reaps[0]!.input).toEqual({ chatId: 'chat', run })
    // A submission meanwhile is refused like any during a turn.
    const meanwhile = submitTo(actor, s)
    expect(meanwhile.mock.calls[0]![0]).toMatchObject({ kind: 'rejected', error: expect.any(RunInProgressError) })

    const facts: ChatFacts = {
      pendingCalls: [{ tool_use_id: 'call_x', tool_name: 'lookup', created_at: '2030-01-01T00:00:00.000Z', run_status: 'failed' }],
      latestCustomerRun: { id: 'orphan', status: 'failed' },
    }
    reaps[0]!.d.resolve(facts)
    await vi.waitFor(() => expect(actor.getSnapshot().value).toEqual({ running: { packing: 'reading' } }))
    // Decided on the facts as the ledger has them after the reaping: the orphan's call closes `cancelled`.
    expect(admits[0]!.closing).toMatchObject({ closures: [{ tool_use_id: 'call_x', tombstone: 'cancelled' }], closesCallsOf: 'orphan' })
    expect(actor.getSnapshot().context.orphan).toBeNull()
    expect(later).not.toHaveBeenCalled()
    actor.stop()
  })

  it('a reaping that finds the lease renewed answers run_in_progress and goes back to rest', async () => {
    const machine = chatMachine.provide({
      actors: {
        reapRun: fromPromise<ChatFacts, ReapRunInput>(async ({ input }) => {
          throw new RunInProgressError(input.run.id)
        }),
      },
    })
    const actor = createActor(machine, { input: { chatId: 'chat', pendingCalls: [], latestCustomerRun: null } })
    actor.start()
    const run = { id: 'orphan', leaseOwner: 'a', leaseExpiresAt: '2030-01-01T00:00:10.000Z' }
    const respond = submitTo(actor, submission(newChat()), { runningRun: run, at: '2030-01-01T00:00:11.000Z' })
    await vi.waitFor(() => expect(respond).toHaveBeenCalledTimes(1))
    expect(respond.mock.calls[0]![0]).toMatchObject({ kind: 'rejected', error: { code: 'run_in_progress', details: { run_id: 'orphan' } } })
    expect(actor.getSnapshot().value).toBe('idle')
    expect(actor.getSnapshot().context.orphan).toBeNull()
    expect(actor.getSnapshot().context.queued).toBeNull()
    actor.stop()
  })
})
