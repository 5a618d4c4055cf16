import { randomUUID } from 'node:crypto'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { createChatActorHost, type ChatActorHost } from '../../src/actors/chat-actor-host.ts'
import { createContextHistory } from '../../src/actors/context-history.ts'
import { LEASE_TTL_MS, type RunDeps } from '../../src/actors/run-deps.ts'
import type { Admission } from '../../src/actors/turn-types.ts'
import { RunInProgressError, UnavailableError } from '../../src/domain/errors.ts'
import { estimateTokens } from '../../src/domain/tokens/estimate-tokens.ts'
import type { TurnRequest } from '../../src/domain/turns/submission.ts'
import { createConfigResolver } from '../../src/store/config-resolution.ts'
import type { ReplicationRoleSource } from '../../src/store/replication-role.ts'
import { openTempStore } from '../helpers/temp-store.ts'
import { deferred, echo, insertRun, prepareTurn, sandboxCatalogue, scriptedModel, untilAborted, usageEntries, withFakes } from '../helpers/turns.ts'
import { admitted } from '../helpers/admitted.ts'
import { decodeSubmission, prepareSubmission } from '../../src/http/prepare-submission.ts'
import { decodeAttachment } from '../../src/domain/turns/decode-attachment.ts'
import { PNG_3X2, PNG_3X2_B64 } from '../helpers/media-fixtures.ts'

const NODE = 'node-a'
let temp: ReturnType<typeof openTempStore>
let offset = 0
let hosts: { host: ChatActorHost; stop: () => void }[] = []
let orgId: string

/** Holds every run open until cancelled; `reached` resolves when a run is streaming. */
let reached = deferred()
const HOLD = { ...echo(), id: randomUUID(), name: 'fake/hold', provider: 'fake', vendor_model_id: 'hold' }

function deps(nodeId = NODE): RunDeps {
  return {
    store: temp.store,
    resolver: createConfigResolver(temp.store),
    languageModelFor: withFakes({
      hold: scriptedModel(async (emit, options) => {
        emit({ type: 'text-start', id: 't' })
        emit({ type: 'text-delta', id: 't', delta: 'holding' })
        reached.resolve()
        await untilAborted(options.abortSignal)
      }),
    }),
    modelById: (id) => [...sandboxCatalogue(), HOLD].find((m) => m.id === id),
    now: () => new Date(Date.now() + offset),
    nodeId,
    leaseTtlMs: LEASE_TTL_MS,
    history: createContextHistory(temp.store),
  }
}

function startHost(options: Parameters<typeof createChatActorHost>[1] = {}, nodeId = NODE) {
  const host = createChatActorHost(deps(nodeId), options)
  const stop = host.start()
  hosts.push({ host, stop })
  return host
}

beforeEach(() => {
  temp = openTempStore()
  offset = 0
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

const submission = (chatId: string, request: Partial<TurnRequest> = {}, model = echo()) => prepareTurn(orgId, chatId, request, model)

/** A run left `running` by some node, as a crash leaves it: with its input and some output written. */
function strandedRun(chatId: string, leaseOwner: string, leaseExpiresAt: string) {
  const runId = insertRun(temp.store, { org_id: orgId, chat_id: chatId, lease_owner: leaseOwner, lease_expires_at: leaseExpiresAt, manifest: { estimated_input_tokens: 1000, markup_percent: '5' } })
  temp.store.parts.append(chatId, [
    { body: { type: 'prompt', text: 'question' }, runId },
    { body: { type: 'message', text: 'half an answ' }, runId },
  ])
  return runId
}

const inAMinute = () => new Date(Date.now() + 60_000).toISOString()

describe('start: runs nobody is streaming', () => {
  it('marks a run held by this node’s previous life failed (interrupted) and settles it once, for the usage known', async () => {
    const chatId = newChat()
    const runId = strandedRun(chatId, NODE, inAMinute())
    startHost()
    const run = temp.store.runs.getById(runId)!
    expect(run.status).toBe('failed')
    expect(run.error).toBe('interrupted')
    expect(run.settled_at).not.toBeNull()
    // Its usage never arrived: null on the run (spec §2.8); the charge is for the estimate.
    expect(run.usage).toBeNull()
    expect(
      temp.store.db
        .prepare('SELECT input_tokens, output_tokens, reasoning_tokens, cache_read_tokens, cache_write_tokens FROM balance_entries WHERE run_id = ?')
        .get(runId),
    ).toEqual({
      input_tokens: 1000,
      output_tokens: estimateTokens('half an answ'),
      reasoning_tokens: 0,
      cache_read_tokens: 0,
      cache_write_tokens: 0,
    })
    expect(usageEntries(temp.store, runId)).toHaveLength(1)

    // A second start (another restart) bills nothing again.
    startHost()
    expect(usageEntries(temp.store, runId)).toHaveLength(1)
  })

  it('leaves another node’s live run alone, and settles it once its lease has expired', async () => {
    const chatId = newChat()
    const runId = strandedRun(chatId, 'node-b', inAMinute())
    startHost({ leaseRenewMs: 5 })
    expect(temp.store.runs.getById(runId)!.status).toBe('running')
    offset = 2 * 60_000
    await vi.waitFor(() => expect(temp.store.runs.getById(runId)!.status).toBe('failed'), { timeout: 5_000 })
    expect(temp.store.runs.getById(runId)!.error).toBe('interrupted')
    expect(usageEntries(temp.store, runId)).toHaveLength(1)
  })

  it('keeps renewing the lease of a run it streams, so it is never swept as abandoned', async () => {
    const host = startHost({ leaseRenewMs: 5 })
    const chatId = newChat()
    const admission = await admitted(host.submit(submission(chatId, {}, HOLD)))
    await reached.promise
    offset = 10 * 60_000
    await vi.waitFor(
      () => expect(temp.store.runs.getById(admission.runId)!.lease_expires_at! > new Date(Date.now() + offset).toISOString()).toBe(true),
      { timeout: 5_000 },
    )
    expect(temp.store.runs.getById(admission.runId)!.status).toBe('running')
    await host.cancel(chatId, admission.runId)
    expect(temp.store.runs.getById(admission.runId)!.status).toBe('cancelled')
  })
})

describe('one actor per chat', () => {
  it('submit resolves with the admission once the run, its input and its key are written', async () => {
    const host = startHost()
    const chatId = newChat()
    const admission = await admitted(host.submit(submission(chatId, { idempotency_key: 'k' })))
    const run = temp.store.runs.getById(admission.runId)!
    expect(run.chat_id).toBe(chatId)
    expect(temp.store.parts.ofRun(admission.runId).map((p) => p.kind)).toContain('prompt')
    expect(temp.store.idempotencyKeys.runOf(orgId, 'k', new Date())).toBe(admission.runId)
    await admission.channel.settled
    expect(temp.store.runs.getById(admission.runId)!.status).toBe('succeeded')
  })

  it('a second submit while the chat runs is rejected with run_in_progress naming the run', async () => {
    const host = startHost()
    const chatId = newChat()
    const first = await admitted(host.submit(submission(chatId, {}, HOLD)))
    await expect(admitted(host.submit(submission(chatId)))).rejects.toMatchObject({ code: 'run_in_progress', details: { run_id: first.runId } })
    await expect(admitted(host.submit(submission(chatId)))).rejects.toBeInstanceOf(RunInProgressError)
    expect(host.channelOf(chatId, first.runId)).toBe(first.log)
    await host.cancel(chatId, first.runId)
  })

  it('cancel of a run that already ended changes nothing', async () => {
    const host = startHost()
    const chatId = newChat()
    const done = await admitted(host.submit(submission(chatId)))
    await done.channel.settled
    // The actor lets go of the run right after settling it.
    await vi.waitFor(() => expect(host.channelOf(chatId, done.runId)).toBeNull())
    await host.cancel(chatId, done.runId)
    expect(temp.store.runs.getById(done.runId)!.status).toBe('succeeded')
    await expect(host.cancel(newChat(), randomUUID())).resolves.toBeUndefined()
  })

  it('evicts idle actors beyond the bound and after the idle time, never a running one', async () => {
    const runDeps = deps()
    const forget = vi.spyOn(runDeps.history, 'forget')
    const host = createChatActorHost(runDeps, { maxIdleActors: 2, idleEvictMs: 60_000 })
    hosts.push({ host, stop: host.start() })
    const idleChats = [newChat(), newChat(), newChat(), newChat()]
    for (const chatId of idleChats) {
      const admission = await admitted(host.submit(submission(chatId)))
      await admission.channel.settled
      await vi.waitFor(() => expect(host.channelOf(chatId, admission.runId)).toBeNull())
    }
    const busyChat = newChat()
    const busy = await admitted(host.submit(submission(busyChat, {}, HOLD)))
    await reached.promise
    expect(host.size).toBe(5)

    expect(host.evictIdle()).toBe(2)
    expect(host.size).toBe(3)
    // What the actor kept goes with it (issue 25): the two oldest chats' packing history.
    expect(forget.mock.calls.map(([chatId]) => chatId)).toEqual(idleChats.slice(0, 2))
    // Past the idle time every idle actor goes; the running one stays.
    expect(host.evictIdle(Date.now() + 120_000)).toBe(2)
    expect(host.size).toBe(1)
    expect(host.channelOf(busyChat, busy.runId)).toBe(busy.log)
    await host.cancel(busyChat, busy.runId)

    // An evicted chat is rebuilt from the ledger on its next turn.
    const again = await admitted(host.submit(submission(idleChats[0]!)))
    await again.channel.settled
    expect(temp.store.runs.getById(again.runId)!.status).toBe('succeeded')
  })

  it('parks an idle actor as its persisted snapshot, keeps its packing history, and starts it from the snapshot without reading the ledger (issue 34)', async () => {
    const runDeps = deps()
    const forget = vi.spyOn(runDeps.history, 'forget')
    const host = createChatActorHost(runDeps, { parkAfterMs: 1_000, idleEvictMs: 60_000 })
    hosts.push({ host, stop: host.start() })
    const chatId = newChat()
    // A failed run: the chat's latest, which only a retry_of may follow (the snapshot must know it).
    const failed = await admitted(host.submit(submission(chatId, { input: [{ type: 'prompt', text: '/fail' }] })))
    await failed.channel.settled
    await vi.waitFor(() => expect(host.channelOf(chatId, failed.runId)).toBeNull())
    expect(temp.store.runs.getById(failed.runId)!.status).toBe('failed')
    const busyChat = newChat()
    const busy = await admitted(host.submit(submission(busyChat, {}, HOLD)))
    await reached.promise

    expect(host.evictIdle(Date.now() + 5_000)).toBe(0)
    expect(host.size).toBe(1)
    expect(host.parkedCount).toBe(1)
    expect(forget).not.toHaveBeenCalled()
    // The running chat is never parked.
    expect(host.channelOf(busyChat, busy.runId)).toBe(busy.log)
    await host.cancel(busyChat, busy.runId)

    const reads = vi.spyOn(temp.store.runs, 'latestCustomerRun')
    const retry = await admitted(host.submit(submission(chatId, { input: [], retry_of: failed.runId })))
    await retry.channel.settled
    // Admitted as a retry of the failed run: the snapshot knew it was the chat's latest. (It fails again: it resends `/fail`.)
    expect(temp.store.runs.getById(retry.runId)!.retry_of).toBe(failed.runId)
    expect(reads).not.toHaveBeenCalled()
    expect(host.parkedCount).toBe(0)

    // Past the idle time a parked chat is dropped with its packing history.
    await vi.waitFor(() => expect(host.channelOf(chatId, retry.runId)).toBeNull())
    host.evictIdle(Date.now() + 5_000)
    expect(host.parkedCount).toBe(2)
    expect(host.evictIdle(Date.now() + 120_000)).toBe(2)
    expect(host.parkedCount).toBe(0)
    expect(forget.mock.calls.map(([id]) => id).sort()).toEqual([chatId, busyChat].sort())
  })

  it('holds a submission\'s attachment bytes beside the machine, by hash, until admission has written them (issue 34, decision 049)', async () => {
    const host = startHost()
    const chatId = newChat()
    const request: TurnRequest = { model: 'sandbox/echo', input: [{ type: 'prompt', text: 'look', media: [{ mime: 'image/png', data_base64: PNG_3X2_B64 }] }] }
    const decoded = await decodeSubmission(request, echo(), { decodeAttachment: async (input) => decodeAttachment(input) })
    const { submission, attachments } = prepareSubmission(request, echo(), { orgId, apiKeyId: null, chatId, namespace: null }, decoded)
    const log = host.submit(submission, attachments)
    // Sent with the submission, the bytes wait in the host: the event the machine got names them by hash.
    expect(host.attachmentsHeld).toBe(1)
    expect(JSON.stringify(submission)).not.toContain(PNG_3X2_B64)
    const run = await admitted(log)
    await run.channel.settled
    expect(host.attachmentsHeld).toBe(0)
    const media = temp.store.parts.mediaOf([...temp.store.parts.ofRun(run.runId).map((p) => p.ordinal)], true)
    expect([...media.values()].flat().map((m) => (m as { bytes: Buffer }).bytes.equals(PNG_3X2))).toEqual([true])
  })

  it('answers "which node owns this chat?" in one place: this node when it is the primary', () => {
    const host = startHost()
    expect(host.ownerOf(newChat())).toEqual({ kind: 'local' })
  })
})

describe('on a LiteFS replica', () => {
  const replicaOf = (primaryUrl: string): ReplicationRoleSource => ({ current: () => ({ kind: 'replica', primaryUrl }), exclusiveWriter: true })

  it('says the primary owns every chat, or that no owner is known, and refuses turns', async () => {
    const host = startHost({ role: replicaOf('http://primary.internal:8080') })
    const chatId = newChat()
    expect(host.ownerOf(chatId)).toEqual({ kind: 'remote', url: 'http://primary.internal:8080' })
    await expect(admitted(host.submit(submission(chatId)))).rejects.toBeInstanceOf(UnavailableError)
    expect(temp.store.runs.latestCustomerRun(chatId)).toBeUndefined()
    const orphan = startHost({ role: { current: () => ({ kind: 'replica-without-primary' }), exclusiveWriter: true } })
    expect(orphan.ownerOf(chatId)).toEqual({ kind: 'unknown' })
  })

  it('neither sweeps nor renews: stranded runs wait for the primary, and are settled once this node is promoted', async () => {
    const chatId = newChat()
    // The old primary's run, its lease run out.
    const runId = strandedRun(chatId, 'node-old-primary', new Date(Date.now() - 1_000).toISOString())
    let role: ReturnType<ReplicationRoleSource['current']> = { kind: 'replica', primaryUrl: 'http://primary.internal:8080' }
    startHost({ role: { current: () => role, exclusiveWriter: true }, leaseRenewMs: 5 })
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(temp.store.runs.getById(runId)!.status).toBe('running')
    role = { kind: 'primary' }
    await vi.waitFor(() => expect(temp.store.runs.getById(runId)!.status).toBe('failed'), { timeout: 5_000 })
    expect(usageEntries(temp.store, runId)).toHaveLength(1)
  })
})
