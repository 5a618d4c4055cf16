import { randomUUID } from 'node:crypto'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { createChatActorHost, type ChatActorHost } from '../../src/actors/chat-actor-host.ts'
import { createContextHistory } from '../../src/actors/context-history.ts'
import type { RunDeps } from '../../src/actors/run-deps.ts'
import { framesOf as loggedFrames, type RunChannel, type RunFrame } from '../../src/actors/run-channel.ts'
import { RunInProgressError } from '../../src/domain/errors.ts'
import type { TurnRequest } from '../../src/domain/turns/submission.ts'
import { createConfigResolver } from '../../src/store/config-resolution.ts'
import type { Store } from '../../src/store/index.ts'
import { openTempStore } from '../helpers/temp-store.ts'
import { deferred, echo, insertRun, prepareTurn, sandboxCatalogue, scriptedModel, untilAborted, usageEntries, withFakes } from '../helpers/turns.ts'
import { admitted } from '../helpers/admitted.ts'

/**
 * Issue 12 at the actor host, over a real ledger (decision 020): a chat deleted while its run
 * streams, a settlement that fails (the store's settlement write made to throw, as a full disk or a
 * refused write would), and a chat whose actor is hydrated while the ledger shows its run running.
 */

const NODE = 'node-a'
const TTL = 30_000
let temp: ReturnType<typeof openTempStore>
let offset = 0
let hosts: { host: ChatActorHost; stop: () => void }[] = []
let orgId: string
let reached = deferred()
/** While true, every settlement write throws (the run's `finish`), the sweep's too. */
let settlementFails = false
let failedSettlements = 0
const reported: string[] = []

/** Streams "holding" and then holds the run open until it is aborted. */
const HOLD = { ...echo(), id: randomUUID(), name: 'fake/hold', provider: 'fake', vendor_model_id: 'hold' }

/** The store, with the settlement write (`runs.finish`) failing on demand. */
function failingStore(store: Store): Store {
  return {
    ...store,
    runs: {
      ...store.runs,
      finish: (...args: Parameters<Store['runs']['finish']>) => {
        if (settlementFails) {
          failedSettlements++
          throw new Error('SQLITE_FULL: database or disk is full')
        }
        return store.runs.finish(...args)
      },
    },
  }
}

function deps(): RunDeps {
  const store = failingStore(temp.store)
  return {
    store,
    resolver: createConfigResolver(temp.store),
    languageModelFor: withFakes({
      hold: scriptedModel(async (emit, options) => {
        emit({ type: 'text-start', id: 't' })
        emit({ type: 'text-delta', id: 't', delta: 'holding on' })
        reached.resolve()
        await untilAborted(options.abortSignal)
      }),
    }),
    modelById: (id) => [...sandboxCatalogue(), HOLD].find((m) => m.id === id),
    now: () => new Date(Date.now() + offset),
    nodeId: NODE,
    leaseTtlMs: TTL,
    history: createContextHistory(temp.store),
  }
}

function startHost(options: Parameters<typeof createChatActorHost>[1] = {}, runDeps = deps()) {
  const host = createChatActorHost(runDeps, { onError: (what) => reported.push(what), ...options })
  const stop = host.start()
  hosts.push({ host, stop })
  return { host, runDeps }
}

beforeEach(() => {
  temp = openTempStore()
  offset = 0
  reached = deferred()
  settlementFails = false
  failedSettlements = 0
  reported.length = 0
  orgId = temp.store.organisations.create('org', 'org').id
  temp.store.balance.add(orgId, 'topup', '10')
})
afterEach(() => {
  for (const { host, stop } of hosts.splice(0)) {
    stop()
    host.stopAll()
  }
  temp.close()
})

const newChat = () => temp.store.chats.create({ orgId, namespace: null, title: null, description: null, userMetadata: {} }).id

const submission = (chatId: string, request: Partial<TurnRequest> = {}, model = echo()) => prepareTurn(orgId, chatId, request, model)

/** The frames' events and data, as a client reads them (their positions are decision 038's, tested there). */
const framesOf = (log: RunChannel): Array<Pick<RunFrame, 'event' | 'data'>> => loggedFrames(log).map((f) => ({ event: f.event, data: f.data }))
const count = (sql: string, ...params: unknown[]) => (temp.db.prepare(sql).get(...params) as { n: number }).n
const rowsOfChat = (chatId: string) => ({
  chats: count('SELECT COUNT(*) AS n FROM chats WHERE id = ?', chatId),
  parts: count('SELECT COUNT(*) AS n FROM parts WHERE chat_id = ?', chatId),
})

describe('DELETE through the chat actor', () => {
  it('mid-stream: the run is stopped and settled cancelled (chat_deleted) and billed once, then the rows, the actor and its kept history go', async () => {
    const { host, runDeps } = startHost({ leaseRenewMs: 60_000 })
    const forget = vi.spyOn(runDeps.history, 'forget')
    const chatId = newChat()
    const admission = await admitted(host.submit(submission(chatId, {}, HOLD)))
    await reached.promise
    expect(host.size).toBe(1)

    expect(await host.delete(orgId, chatId)).toBe(true)

    // The stream ended with a clear error, not upstream_error, and no retry hint.
    const last = framesOf(admission.log).at(-1)!
    expect(last).toEqual({
      event: 'error',
      data: { code: 'chat_deleted', message: 'the chat was deleted while this run streamed', details: { run_id: admission.runId } },
    })
    // Settled before the rows went: cancelled, for what it used (its packed input and what it streamed).
    const run = temp.store.runs.getById(admission.runId)!
    expect(run).toMatchObject({ status: 'cancelled', error: 'the chat was deleted while this run streamed', lease_owner: null })
    expect(run.settled_at).not.toBeNull()
    expect(run.cost_units).toBeGreaterThan(0n)
    expect(usageEntries(temp.store, admission.runId)).toHaveLength(1)
    expect(rowsOfChat(chatId)).toEqual({ chats: 0, parts: 0 })
    // The actor is gone, and what was kept for the chat with it.
    expect(host.size).toBe(0)
    expect(forget).toHaveBeenCalledWith(chatId)
    expect(host.channelOf(chatId, admission.runId)).toBeNull()

    // A repeat finds nothing (404), and nothing is billed again.
    expect(await host.delete(orgId, chatId)).toBe(false)
    expect(usageEntries(temp.store, admission.runId)).toHaveLength(1)
    expect(reported).toEqual([])
  })

  it('two DELETEs at once: one deletes, the other finds the chat gone', async () => {
    const { host } = startHost({ leaseRenewMs: 60_000 })
    const chatId = newChat()
    await admitted(host.submit(submission(chatId, {}, HOLD)))
    await reached.promise
    const both = await Promise.all([host.delete(orgId, chatId), host.delete(orgId, chatId)])
    expect(both.sort()).toEqual([false, true])
    expect(host.size).toBe(0)
  })

  it('at rest: the rows go, runs and balance entries stay; another organisation’s DELETE finds nothing', async () => {
    const { host } = startHost({ leaseRenewMs: 60_000 })
    const chatId = newChat()
    const admission = await admitted(host.submit(submission(chatId)))
    await admission.channel.settled
    const other = temp.store.organisations.create('other', 'other').id
    expect(await host.delete(other, chatId)).toBe(false)
    expect(rowsOfChat(chatId).chats).toBe(1)
    expect(await host.delete(orgId, chatId)).toBe(true)
    expect(rowsOfChat(chatId)).toEqual({ chats: 0, parts: 0 })
    expect(temp.store.runs.getById(admission.runId)!.status).toBe('succeeded')
    expect(usageEntries(temp.store, admission.runId)).toHaveLength(1)
    expect(host.size).toBe(0)
  })
})

describe('a settlement that fails', () => {
  it('is tried again: failing twice, then written, the run settles once and its stream ends with done', async () => {
    const { host } = startHost({ leaseRenewMs: 60_000 })
    const chatId = newChat()
    settlementFails = true
    const admission = await admitted(host.submit(submission(chatId)))
    await vi.waitFor(() => expect(failedSettlements).toBe(2), { timeout: 5_000, interval: 10 })
    settlementFails = false
    await admission.channel.settled
    expect(framesOf(admission.log).at(-1)!.event).toBe('done')
    expect(temp.store.runs.getById(admission.runId)!.status).toBe('succeeded')
    expect(usageEntries(temp.store, admission.runId)).toHaveLength(1)
    // The chat takes the next turn (once the machine is back at rest, just after the stream's end).
    await new Promise((r) => setTimeout(r, 20))
    const next = await admitted(host.submit(submission(chatId)))
    await next.channel.settled
  })

  it('failing every time: the run is left to the sweep (lease released, never renewed), turns wait for it, and the sweep settles it once the store writes again', async () => {
    const { host } = startHost({ leaseRenewMs: 50 })
    const chatId = newChat()
    settlementFails = true
    const started = Date.now()
    const admission = await admitted(host.submit(submission(chatId)))
    await admission.channel.settled
    // Four attempts, three backoffs (200 + 800 + 3,200 ms).
    expect(failedSettlements).toBeGreaterThanOrEqual(4)
    expect(Date.now() - started).toBeGreaterThanOrEqual(4_200)
    expect(framesOf(admission.log).at(-1)).toEqual({
      event: 'error',
      data: {
        code: 'internal',
        message: 'the run could not be settled; it will be settled as interrupted for the usage known',
        details: { run_id: admission.runId },
      },
    })
    const left = temp.store.runs.getById(admission.runId)!
    expect(left).toMatchObject({ status: 'running', lease_owner: null })
    expect(Date.parse(left.lease_expires_at!)).toBeLessThanOrEqual(Date.now())
    // Ticks come and go: the lease is not renewed (the sweep tries, and fails while the store does).
    await new Promise((r) => setTimeout(r, 200))
    expect(temp.store.runs.getById(admission.runId)!.lease_expires_at).toBe(left.lease_expires_at)
    // The sweep hands it to the chat's actor, whose settlement (reapRun) fails while the store does.
    expect(reported).toContain(`run ${admission.runId} not reaped`)
    // No turn is admitted past it: the turn tries to settle it first, fails like the sweep, and is
    // answered 409 run_in_progress naming it.
    const refused = admitted(host.submit(submission(chatId)))
    await expect(refused).rejects.toBeInstanceOf(RunInProgressError)
    await expect(refused).rejects.toMatchObject({ details: { run_id: admission.runId } })
    expect(count(`SELECT COUNT(*) AS n FROM runs WHERE chat_id = ?`, chatId)).toBe(1)

    settlementFails = false
    await vi.waitFor(() => expect(temp.store.runs.getById(admission.runId)!.status).toBe('failed'), { timeout: 20_000, interval: 10 })
    const settled = temp.store.runs.getById(admission.runId)!
    expect(settled.error).toBe('interrupted')
    // Within its lease: long before a lease TTL after it was released.
    expect(Date.parse(settled.settled_at!) - Date.parse(left.lease_expires_at!)).toBeLessThan(TTL)
    expect(usageEntries(temp.store, admission.runId)).toHaveLength(1)
    // Settled by the chat's own actor, which knows it: no stale facts, nothing to drop.
    expect(host.size).toBe(1)
    // The chat is usable again.
    const next = await admitted(host.submit(submission(chatId)))
    await next.channel.settled
    expect(temp.store.runs.getById(next.runId)!.status).toBe('succeeded')
  }, 20_000)
})

describe('hydration of a chat whose ledger shows a running run', () => {
  /** A run of this node left running with a live lease: the actor that held it is gone (evicted, or a stalled release). */
  function runningRun(chatId: string, leaseExpiresAt: string) {
    const runId = insertRun(temp.store, { org_id: orgId, chat_id: chatId, lease_owner: NODE, lease_expires_at: leaseExpiresAt, manifest: { estimated_input_tokens: 100, markup_percent: '5' } })
    temp.store.parts.append(chatId, [
      { body: { type: 'prompt', text: 'question' }, runId },
      { body: { type: 'tool_call', arguments: '{}', tool_name: 'lookup', tool_use_id: 'call_1' }, runId },
    ])
    return runId
  }

  it('is not idle: turns are refused naming the run while its lease is live; once it lapsed the turn reaps it, closes its calls and runs', async () => {
    const { host } = startHost({ leaseRenewMs: 60_000 })
    const chatId = newChat()
    const runId = runningRun(chatId, new Date(Date.now() + TTL).toISOString())
    host.preload(chatId)
    const refused = admitted(host.submit(submission(chatId)))
    await expect(refused).rejects.toBeInstanceOf(RunInProgressError)
    await expect(refused).rejects.toMatchObject({ details: { run_id: runId } })

    offset = TTL + 1_000
    const admission = await admitted(host.submit(submission(chatId)))
    await admission.channel.settled
    expect(temp.store.runs.getById(runId)).toMatchObject({ status: 'failed', error: 'interrupted' })
    expect(usageEntries(temp.store, runId)).toHaveLength(1)
    // The orphan's call was closed, as a failed run's is.
    const tombstone = temp.db.prepare(`SELECT body FROM parts WHERE chat_id = ? AND kind = 'tool_result'`).get(chatId) as { body: string }
    expect(JSON.parse(tombstone.body)).toMatchObject({ tool_use_id: 'call_1', tombstone_reason: 'cancelled' })
  })

  it('DELETE of such a chat deletes it; the run, its lease lapsed, is settled in the same transaction', async () => {
    const { host } = startHost({ leaseRenewMs: 60_000 })
    const chatId = newChat()
    const runId = runningRun(chatId, new Date(Date.now() + TTL).toISOString())
    host.preload(chatId)
    offset = TTL + 1_000
    expect(await host.delete(orgId, chatId)).toBe(true)
    expect(rowsOfChat(chatId)).toEqual({ chats: 0, parts: 0 })
    expect(temp.store.runs.getById(runId)).toMatchObject({ status: 'failed', error: 'interrupted' })
    expect(usageEntries(temp.store, runId)).toHaveLength(1)
  })
})
