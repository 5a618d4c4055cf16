/**
 * Part of bench/turns.ts, run by it in a process of its own (`node --expose-gc --import tsx
 * bench/actor-memory.ts N`): the heap an idle hydrated chat actor costs. Builds the host the way
 * src/main.ts and test/helpers/test-app.ts do (src/compose.ts), over a real SQLite file, then
 *
 * 1. hydrates N chats' actors with `host.preload` (no turn): heapUsed after − before, over N;
 * 2. runs one cheap sandbox turn on each of those N chats (`host.submit`, waiting for the run to
 *    settle and the actor to be idle again): heapUsed after − the same before, over N;
 * 3. parks them (`host.evictIdle` past `parkAfterMs`: each actor stopped and kept as its persisted
 *    snapshot, with its chat's packing history): heapUsed after − the same before, over N. This is
 *    what an idle chat costs a node once the host's sweep has passed.
 *
 * Prints one JSON object on stdout.
 */
import { fixedCatalogue } from '../src/providers/catalogue/catalogue-service.ts'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { composeApp } from '../src/compose.ts'
import type { TurnRequest } from '../src/domain/turns/submission.ts'
import { prepareSubmission } from '../src/http/prepare-submission.ts'
import { loadCatalogue } from '../src/providers/catalogue/load-catalogue.ts'
import { openDatabase } from '../src/store/database.ts'
import { createStore } from '../src/store/index.ts'
import { installCleanup, log, runMain, sleep } from './lib.ts'
import { settledOf } from '../src/actors/run-channel.ts'

const N = Math.trunc(Number(process.argv[2] ?? 5_000))
const WARM = 200
/** Turns in flight at once while the actors are given a turn each. */
const PARALLEL = 50

const { removeLater, cleanup } = installCleanup()

const gc = (globalThis as { gc?: () => void }).gc
if (!gc) throw new Error('run with node --expose-gc')

async function settledHeap(): Promise<number> {
  // Let timers and promise chains of the last turns finish, then collect fully, twice.
  await sleep(50)
  for (let i = 0; i < 4; i++) {
    gc!()
    await sleep(10)
  }
  return process.memoryUsage().heapUsed
}

async function main(): Promise<void> {
  if (!Number.isInteger(N) || N <= 0) throw new Error(`N must be a positive integer, got ${process.argv[2]}`)
  const dir = mkdtempSync(join(tmpdir(), 'parley-bench-actors-'))
  removeLater(dir)
  const db = openDatabase(join(dir, 'parley.db'))
  const store = createStore(db)
  const sandbox = loadCatalogue().entries.filter((e) => e.provider === 'sandbox')
  const echo = sandbox.find((e) => e.name === 'sandbox/echo')!
  const deps = composeApp({
    store,
    catalogue: fixedCatalogue(sandbox),
    allModels: sandbox,
    env: { NODE_ID: 'bench-node' },
    build: { version: '0.0.0-bench', commit: 'bench' },
    // Nothing is evicted while it is measured (the host's sweeper is not started either).
    hostOptions: { idleEvictMs: 3_600_000, maxIdleActors: 1_000_000 },
  })
  const host = deps.host

  const org = store.organisations.create('Bench', 'bench')
  const { id: keyId } = store.apiKeys.create(org.id, 'bench')
  store.balance.add(org.id, 'topup', '1000')
  const createChats = db.transaction((count: number, namespace: string) =>
    Array.from({ length: count }, (_, i) => store.chats.create({ orgId: org.id, namespace, title: `chat ${i}`, description: null, userMetadata: {} }).id),
  )
  const warm = createChats(WARM, 'bench/warm')
  const measured = createChats(N, 'bench/actors')

  const request: TurnRequest = { model: 'sandbox/echo', input: [{ type: 'prompt', text: 'hello' }] } as TurnRequest
  const turnOn = async (chatId: string) => {
    const { submission } = prepareSubmission(request, echo, { orgId: org.id, apiKeyId: keyId, chatId, namespace: 'bench/actors' })
    await settledOf(host.submit(submission))
  }
  const turns = async (chats: string[]) => {
    let next = 0
    await Promise.all(
      Array.from({ length: PARALLEL }, async () => {
        while (next < chats.length) await turnOn(chats[next++]!)
      }),
    )
    // The actor leaves `settling` once its settle promise resolves; wait until every actor is idle.
    await sleep(100)
  }

  // Warm-up: the code paths of hydration and of a turn, compiled and their caches filled, outside the measurement.
  for (const chatId of warm.slice(0, WARM / 2)) host.preload(chatId)
  await turns(warm)
  const baseActors = host.size

  const before = await settledHeap()
  const t0 = performance.now()
  for (const chatId of measured) host.preload(chatId)
  const preloadMs = performance.now() - t0
  const afterPreload = await settledHeap()
  if (host.size !== baseActors + N) throw new Error(`expected ${baseActors + N} actors, the host has ${host.size}`)

  log(`actor memory: one turn on each of ${N} chats`)
  const t1 = performance.now()
  await turns(measured)
  const turnsMs = performance.now() - t1
  const afterTurn = await settledHeap()
  const runs = (db.prepare("SELECT count(*) AS n FROM runs WHERE status = 'succeeded'").get() as { n: number }).n
  if (runs !== WARM + N) throw new Error(`expected ${WARM + N} succeeded runs, found ${runs}`)
  if (host.size !== baseActors + N) throw new Error(`expected ${baseActors + N} actors after the turns, the host has ${host.size}`)
  // The host's sweep parks actors unused for parkAfterMs (1 s); this is that sweep, run now.
  host.evictIdle(Date.now() + 60_000)
  const afterPark = await settledHeap()
  if (host.parkedCount < N) throw new Error(`expected ${N} parked chats, the host has ${host.parkedCount}`)

  const result = {
    actors: N,
    heapBefore: before,
    perActorPreloaded: (afterPreload - before) / N,
    perActorAfterTurn: (afterTurn - before) / N,
    perChatParked: (afterPark - before) / N,
    preloadUsPerActor: (preloadMs * 1000) / N,
    turnsPerSecondInProcess: N / (turnsMs / 1000),
    rss: process.memoryUsage().rss,
  }
  host.stopAll()
  db.close()
  process.stdout.write(`${JSON.stringify(result)}\n`)
}

runMain(main, cleanup)
