import { randomUUID } from 'node:crypto'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createChatActorHost, type ChatActorHost } from '../../src/actors/chat-actor-host.ts'
import { createContextHistory } from '../../src/actors/context-history.ts'
import type { RunDeps } from '../../src/actors/run-deps.ts'
import { framesOf as loggedFrames, type RunChannel, type RunFrame } from '../../src/actors/run-channel.ts'
import { UnavailableError } from '../../src/domain/errors.ts'
import { createConfigResolver } from '../../src/store/config-resolution.ts'
import { ALWAYS_PRIMARY, type ReplicationRole, type ReplicationRoleSource } from '../../src/store/replication-role.ts'
import { openTempStore } from '../helpers/temp-store.ts'
import { deferred, echo, insertRun, prepareTurn, sandboxCatalogue, scriptedModel, untilAborted, usageEntries, withFakes } from '../helpers/turns.ts'
import { admitted } from '../helpers/admitted.ts'

/**
 * Issue 20 at the actor host, over a real ledger: what a node does with its runs when it shuts down
 * (drain), is demoted (relinquishAll) or promoted (takeOver) under LiteFS, and how a cancel of a run
 * that no actor here streams is answered (docs/decisions/009-multi-node-litefs.md).
 */

const NODE = 'node-a'
const TTL = 30_000
let temp: ReturnType<typeof openTempStore>
let orgId: string
let reached = deferred()
let hosts: { host: ChatActorHost; stop: () => void }[] = []

/** Streams "holding on" and then holds the run open until it is aborted. */
const HOLD = { ...echo(), id: randomUUID(), name: 'fake/hold', provider: 'fake', vendor_model_id: 'hold' }

function deps(): RunDeps {
  return {
    store: temp.store,
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
    now: () => new Date(),
    nodeId: NODE,
    leaseTtlMs: TTL,
    history: createContextHistory(temp.store),
  }
}

/** A LiteFS role whose answer the test sets: LiteFS guarantees one writer. */
function litefsRoleDouble(initial: ReplicationRole = { kind: 'primary' }) {
  let role = initial
  const source: ReplicationRoleSource = { current: () => role, exclusiveWriter: true }
  return { source, set: (next: ReplicationRole) => (role = next) }
}

function startHost(role: ReplicationRoleSource = ALWAYS_PRIMARY) {
  const host = createChatActorHost(deps(), { role, onError: () => undefined, leaseRenewMs: 60_000 })
  const stop = host.start()
  hosts.push({ host, stop })
  return host
}

beforeEach(() => {
  temp = openTempStore()
  reached = deferred()
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
const hold = (chatId: string) => prepareTurn(orgId, chatId, {}, HOLD)
const framesOf = (log: RunChannel): RunFrame[] => loggedFrames(log)
/** A run of `owner` that no actor of this host streams, with its lease `leaseMs` ahead. */
const foreignRun = (chatId: string, owner: string, leaseMs = TTL) =>
  insertRun(temp.store, {
    org_id: orgId,
    chat_id: chatId,
    lease_owner: owner,
    lease_expires_at: new Date(Date.now() + leaseMs).toISOString(),
    manifest: { estimated_input_tokens: 100, markup_percent: '5' },
  })

describe('cancel of a run no actor here streams', () => {
  it('without LiteFS, another node live lease: 503 naming the run and its owner; nothing changes', async () => {
    const host = startHost()
    const chatId = newChat()
    const runId = foreignRun(chatId, 'node-b')
    const refused = host.cancel(chatId, runId)
    await expect(refused).rejects.toBeInstanceOf(UnavailableError)
    await expect(refused).rejects.toMatchObject({ details: { run_id: runId, lease_owner: 'node-b' } })
    expect(temp.store.runs.getById(runId)!.status).toBe('running')
  })

  it('this node own lease (its previous life): settled now as interrupted, billed once', async () => {
    const host = startHost()
    const chatId = newChat()
    const runId = foreignRun(chatId, NODE)
    await host.cancel(chatId, runId)
    expect(temp.store.runs.getById(runId)).toMatchObject({ status: 'failed', error: 'interrupted' })
    expect(usageEntries(temp.store, runId)).toHaveLength(1)
    // The chat is free at once.
    const next = await admitted(host.submit(prepareTurn(orgId, chatId)))
    await next.channel.settled
    expect(temp.store.runs.getById(next.runId)!.status).toBe('succeeded')
  })

  it('an expired lease: settled now', async () => {
    const host = startHost()
    const chatId = newChat()
    const runId = foreignRun(chatId, 'node-b', -1_000)
    await host.cancel(chatId, runId)
    expect(temp.store.runs.getById(runId)!.status).toBe('failed')
  })

  it('on a LiteFS primary (the only writer), another node live lease: settled now', async () => {
    const host = startHost(litefsRoleDouble().source)
    const chatId = newChat()
    // Inserted after start: the start-up take-over did not see it.
    const runId = foreignRun(chatId, 'node-b')
    await host.cancel(chatId, runId)
    expect(temp.store.runs.getById(runId)).toMatchObject({ status: 'failed', error: 'interrupted' })
  })
})

describe('graceful shutdown (drain)', () => {
  it('a run that ends within the grace period settles as it ends', async () => {
    const host = startHost()
    const chatId = newChat()
    const admission = await admitted(host.submit(prepareTurn(orgId, chatId)))
    await host.drain(5_000)
    expect(temp.store.runs.getById(admission.runId)!.status).toBe('succeeded')
  })

  it('a run still streaming after the grace period is stopped, its output kept, and settled as interrupted: the chat is free at once', async () => {
    const host = startHost()
    const chatId = newChat()
    const admission = await admitted(host.submit(hold(chatId)))
    await reached.promise
    await host.drain(50)
    const run = temp.store.runs.getById(admission.runId)!
    expect(run).toMatchObject({ status: 'failed', error: 'interrupted', lease_owner: null })
    expect(usageEntries(temp.store, admission.runId)).toHaveLength(1)
    const texts = temp.store.parts.ofRun(admission.runId).map((p) => JSON.parse(p.body) as { type: string; text?: string })
    expect(texts).toContainEqual(expect.objectContaining({ type: 'message', text: 'holding on' }))
    const last = framesOf(admission.log).at(-1)!
    expect(last).toMatchObject({ event: 'error', data: { code: 'interrupted', details: { run_id: admission.runId } } })
    // Another process (the restarted node) admits the next turn at once: the ledger holds no running run.
    expect(temp.store.runs.runningCustomerRun(chatId)).toBeNull()
  })
})

describe('demotion (relinquishAll)', () => {
  it('running streams end with unavailable naming the run; nothing is written; the new primary takes the runs over at once', async () => {
    const role = litefsRoleDouble()
    const host = startHost(role.source)
    const chatId = newChat()
    const admission = await admitted(host.submit(hold(chatId)))
    await reached.promise
    role.set({ kind: 'replica', primaryUrl: 'http://127.0.0.1:1' })
    expect(host.relinquishAll('this node is no longer the primary')).toEqual([admission.runId])
    expect(host.size).toBe(0)
    const last = framesOf(admission.log).at(-1)!
    expect(last).toMatchObject({ event: 'error', data: { code: 'unavailable', details: { run_id: admission.runId } } })
    expect(temp.store.runs.getById(admission.runId)!.status).toBe('running')
    // Turns are no longer this node's.
    await expect(admitted(host.submit(prepareTurn(orgId, chatId)))).rejects.toBeInstanceOf(UnavailableError)

    // Another node is promoted over the same ledger: it settles the run at once, live lease or not.
    const promoted = createChatActorHost({ ...deps(), nodeId: 'node-b' }, { role: litefsRoleDouble().source, onError: () => undefined })
    const settled = promoted.takeOver()
    expect(settled.map((r) => r.id)).toEqual([admission.runId])
    expect(temp.store.runs.getById(admission.runId)).toMatchObject({ status: 'failed', error: 'interrupted' })
    expect(usageEntries(temp.store, admission.runId)).toHaveLength(1)
    const next = await admitted(promoted.submit(prepareTurn(orgId, chatId)))
    await next.channel.settled
    expect(temp.store.runs.getById(next.runId)!.status).toBe('succeeded')
    promoted.stopAll()
  })

  it('without LiteFS a start takes nothing over: another node live lease is left to its lease (decision 018)', () => {
    const chatId = newChat()
    const runId = foreignRun(chatId, 'node-b')
    const host = startHost()
    expect(host.takeOver()).toEqual([])
    expect(temp.store.runs.getById(runId)!.status).toBe('running')
  })

  it('a LiteFS primary starting settles every running run at once, whoever held it', () => {
    const chatId = newChat()
    const runId = foreignRun(chatId, 'node-b')
    startHost(litefsRoleDouble().source)
    expect(temp.store.runs.getById(runId)).toMatchObject({ status: 'failed', error: 'interrupted' })
  })
})
