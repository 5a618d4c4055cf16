/**
 * `npm run bench -- stream-memory` (issue 34, memory): what an idle open stream costs the server,
 * in one server process started with bench/memory-probe.mjs (which reads the process's memory on
 * SIGUSR2, before and after a full collection):
 *
 * - **turn streams**: N chats (BENCH_STREAMS, default 2,000) each given a `/slow 60000` turn of one
 *   word: each `POST /api/v1/chats/{id}/responses` answers 200, streams its opening frames
 *   (`run`, `config_warnings`, `translation_warnings`) and then waits on the sandbox
 *   vendor for 60 s before its one delta. That wait is the idle stream: a socket, the request, the
 *   run's channel, its actor in `streaming`, the provider call in flight. Memory is read with all N
 *   open and none past its first delta, and compared with the same reading before they opened.
 * - **readers of one run**: R readers (BENCH_READERS, default 10,000) of one running run
 *   (`GET /api/v1/runs/{id}/events`), idle while the run waits on its vendor; the run is then
 *   cancelled and every reader must end with it.
 *
 * Environment: BENCH_STREAMS, BENCH_READERS; BENCH_SNAPSHOT=DIR also writes a heap snapshot of the
 * server with the streams open (and one before) into DIR, for attribution (the section then notes it).
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { Agent } from 'node:http'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { REPO_ROOT, startServer, type ServerProcess } from '../test/e2e/server-process.ts'
import { seedOrganisation } from '../test/helpers/seed-organisation.ts'
import { writeSection } from './benchmarks-file.ts'
import { actorMemory, envNumber, fmt, installCleanup, loadLine, log, runMain, sectionHead, sleep } from './lib.ts'
import { sse, type SseOutcome } from './sse-client.ts'

const STREAMS = Math.trunc(envNumber('BENCH_STREAMS', 2_000))
const READERS = Math.trunc(envNumber('BENCH_READERS', 10_000))
const ACTORS = Math.trunc(envNumber('BENCH_ACTORS', 5_000))
const SNAPSHOT_DIR = process.env.BENCH_SNAPSHOT ? resolve(process.env.BENCH_SNAPSHOT) : null
/** How long each measured stream waits on the vendor before its one delta. */
const IDLE_MS = 60_000
const STREAM_PROMPT = `/slow ${IDLE_MS}\n/long 1`
/** Requests being opened at once; an open stream (its `run` frame read) no longer counts. */
const OPENING = 64
const WARM_TURNS = 32
const WARM_STREAMS = 200
const CAPS = String(STREAMS + READERS + 1_000)

const { removeLater, cleanup } = installCleanup()

type Reading = {
  rss: number
  rssAnon: number
  heapUsed: number
  gcRss: number
  gcRssAnon: number
  gcHeapUsed: number
  gcExternal: number
  gcArrayBuffers: number
  snapshot?: string
}

/** Asks the server's probe for a reading (SIGUSR2) and waits for its line on stderr. */
async function probe(server: ServerProcess, snapshot?: string): Promise<Reading> {
  if (snapshot) writeFileSync(process.env.MEMORY_PROBE_SNAPSHOT!, snapshot)
  const seen = server.stderr().split('memory-probe ').length
  server.child.kill('SIGUSR2')
  const deadline = Date.now() + 120_000
  for (;;) {
    const parts = server.stderr().split('memory-probe ')
    if (parts.length > seen) return JSON.parse(parts[seen]!.split('\n')[0]!) as Reading
    if (Date.now() > deadline) throw new Error(`no memory-probe reading within 120 s; stderr: ${server.stderr().slice(-2000)}`)
    await sleep(20)
  }
}

/**
 * Opens one SSE request per item, at most OPENING at once (a request stops counting once its `run`
 * frame came), and resolves once all are open, with their outcomes still pending.
 */
async function openAll(
  count: number,
  request: (i: number, onFrame: (event: string, data: string) => void) => Promise<SseOutcome>,
  /** Whether a stream may end before the last opens (the warm-up's short ones). */
  mayEnd = false,
): Promise<{ outcomes: Promise<SseOutcome>[]; seconds: number; deltas: () => number; ended: () => number; runIds: string[] }> {
  let open = 0
  let ended = 0
  let deltas = 0
  let opening = 0
  let lastError = ''
  const runIds: string[] = []
  const waiters: (() => void)[] = []
  const started = performance.now()
  const outcomes: Promise<SseOutcome>[] = []
  for (let i = 0; i < count; i++) {
    while (opening >= OPENING) await new Promise<void>((resolve) => waiters.push(resolve))
    opening++
    let counted = false
    const release = () => {
      if (counted) return
      counted = true
      opening--
      waiters.shift()?.()
    }
    outcomes.push(
      request(i, (event, data) => {
        if (event === 'run') {
          open++
          runIds.push((JSON.parse(data) as { run_id: string }).run_id)
          release()
        }
        if (event === 'delta') deltas++
        if (event === 'done' || event === 'error') ended++
        if (event === 'error' && !mayEnd) lastError = data
      }).finally(release),
    )
  }
  const deadline = performance.now() + IDLE_MS
  while (open < count && performance.now() < deadline && (mayEnd || ended === 0)) await sleep(20)
  if (open < count) throw new Error(`only ${open} of ${count} streams opened (${ended} already ended${lastError ? `; an error frame: ${lastError}` : ''})`)
  return { outcomes, seconds: (performance.now() - started) / 1000, deltas: () => deltas, ended: () => ended, runIds }
}

async function main(): Promise<void> {
  const loadBefore = loadLine()
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-stream-memory-'))
  removeLater(dataDir)
  const { key, chats } = seedOrganisation(dataDir, { name: 'Streams', credit: '1000000', chats: WARM_TURNS + WARM_STREAMS + STREAMS + 2, namespace: 'bench/streams' })
  const warmTurnChats = chats.slice(0, WARM_TURNS)
  const warmStreamChats = chats.slice(WARM_TURNS, WARM_TURNS + WARM_STREAMS)
  const streamChats = chats.slice(WARM_TURNS + WARM_STREAMS, WARM_TURNS + WARM_STREAMS + STREAMS)
  const [warmReaderChat, readerChat] = chats.slice(-2) as [string, string]
  const auth = { authorization: `Bearer ${key}` }

  let trigger: string | undefined
  if (SNAPSHOT_DIR) {
    mkdirSync(SNAPSHOT_DIR, { recursive: true })
    trigger = join(dataDir, 'snapshot-trigger')
    process.env.MEMORY_PROBE_SNAPSHOT = trigger
  }
  const server = await startServer({
    args: ['--expose-gc', '--import', './bench/memory-probe.mjs', 'src/main.ts'],
    env: {
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      MAX_RUNNING_RUNS_PER_ORG: CAPS,
      MAX_CONCURRENT_TURNS: CAPS,
      SHED_FROM_TURNS: CAPS,
      ...(trigger ? { MEMORY_PROBE_SNAPSHOT: trigger } : {}),
    },
    readyPath: '/healthz',
    timeoutMs: 60_000,
  })
  const agent = new Agent({ keepAlive: true, maxSockets: STREAMS + READERS + 64 })
  const turn = (chatId: string, text: string, onFrame?: (event: string, data: string) => void) =>
    sse({
      agent,
      url: server.url,
      path: `/api/v1/chats/${chatId}/responses`,
      headers: auth,
      body: JSON.stringify({ model: 'sandbox/echo', input: [{ type: 'prompt', text }] }),
      timeoutMs: 120_000,
      ...(onFrame ? { onFrame } : {}),
    })
  const reader = (runId: string, onFrame: (event: string, data: string) => void) =>
    sse({ agent, url: server.url, path: `/api/v1/runs/${runId}/events`, headers: auth, timeoutMs: 120_000, onFrame })
  const cancel = async (runId: string) => {
    const answer = await fetch(`${server.url}/api/v1/runs/${runId}/cancel`, { method: 'POST', headers: auth })
    if (!answer.ok) throw new Error(`cancel ${runId}: HTTP ${answer.status} ${await answer.text()}`)
  }
  const expect = (what: string, outcomes: SseOutcome[], ok: (o: SseOutcome) => boolean) => {
    const failed = outcomes.filter((o) => !ok(o))
    if (failed.length > 0) throw new Error(`${what}: ${failed.length} of ${outcomes.length} failed; first: status ${failed[0]!.status}, ${JSON.stringify(failed[0]!.counts)} ${failed[0]!.body.slice(0, 300)}`)
  }

  // Warm-up: ordinary turns, then streams of the measured kind (short), then readers of one run: the
  // code paths compiled and the server's pools filled before anything is measured.
  log('warm-up')
  for (let round = 0; round < 5; round++) {
    expect('warm-up turn', await Promise.all(warmTurnChats.map((c) => turn(c, '/long 20'))), (o) => o.terminal === 'done')
  }
  const warm = await openAll(WARM_STREAMS, (i, onFrame) => turn(warmStreamChats[i]!, '/slow 500\n/long 1', onFrame), true)
  expect('warm-up stream', await Promise.all(warm.outcomes), (o) => o.terminal === 'done')
  const warmRun = await openAll(1, (_, onFrame) => turn(warmReaderChat, '/slow 60000\n/long 1', onFrame))
  const warmReaders = await openAll(WARM_STREAMS, (_, onFrame) => reader(warmRun.runIds[0]!, onFrame))
  await cancel(warmRun.runIds[0]!)
  expect('warm-up reader', await Promise.all([...warmRun.outcomes, ...warmReaders.outcomes]), (o) => o.terminal !== null)
  // The host parks idle chats after 1 s (decision 046): let it, so the reading before holds no live actor either.
  await sleep(3_000)

  // Turn streams.
  const before = await probe(server, SNAPSHOT_DIR ? join(SNAPSHOT_DIR, 'before.heapsnapshot') : undefined)
  log(`opening ${fmt(STREAMS)} turn streams (${JSON.stringify(STREAM_PROMPT)})`)
  const streams = await openAll(STREAMS, (i, onFrame) => turn(streamChats[i]!, STREAM_PROMPT, onFrame))
  await sleep(500)
  const open = await probe(server, SNAPSHOT_DIR ? join(SNAPSHOT_DIR, 'streams.heapsnapshot') : undefined)
  if (streams.deltas() > 0 || streams.ended() > 0) throw new Error(`a stream had a delta (${streams.deltas()}) or ended (${streams.ended()}) before the reading: raise IDLE_MS`)
  log(`${fmt(STREAMS)} streams open in ${streams.seconds.toFixed(1)} s; waiting for them to end`)
  expect('stream', await Promise.all(streams.outcomes), (o) => o.status === 200 && o.terminal === 'done' && o.counts.delta === 1)
  await sleep(3_000)
  const afterStreams = await probe(server)

  // Readers of one running run.
  const run = await openAll(1, (_, onFrame) => turn(readerChat, '/slow 60000\n/long 1', onFrame))
  const runId = run.runIds[0]!
  await sleep(500)
  const readersBefore = await probe(server)
  log(`opening ${fmt(READERS)} readers of run ${runId}`)
  const readers = await openAll(READERS, (_, onFrame) => reader(runId, onFrame))
  await sleep(500)
  const readersOpen = await probe(server)
  if (readers.ended() > 0) throw new Error(`${readers.ended()} readers ended before the reading`)
  await cancel(runId)
  const ended = await Promise.all([...run.outcomes, ...readers.outcomes])
  // A cancelled run ends with its `error` frame (`cancelled`), to its own stream and every reader.
  expect('reader', ended, (o) => o.status === 200 && o.terminal === 'error')
  agent.destroy()
  await server.stop()

  log(`heap per idle actor: ${fmt(ACTORS)} actors, in a process of its own (bench/actor-memory.ts)`)
  const actors = await actorMemory(ACTORS)

  const per = (a: number, b: number, n: number) => (b - a) / n
  const kib = (bytes: number) => `${fmt(bytes / 1024, 1)} KiB`
  const mib = (bytes: number) => `${fmt(bytes / 2 ** 20, 1)} MiB`
  const figures = {
    streams: STREAMS,
    rssPerStream: per(before.rss, open.rss, STREAMS),
    gcRssPerStream: per(before.gcRss, open.gcRss, STREAMS),
    heapPerStream: per(before.gcHeapUsed, open.gcHeapUsed, STREAMS),
    externalPerStream: per(before.gcExternal, open.gcExternal, STREAMS),
    readers: READERS,
    rssPerReader: per(readersBefore.rss, readersOpen.rss, READERS),
    gcRssPerReader: per(readersBefore.gcRss, readersOpen.gcRss, READERS),
    heapPerReader: per(readersBefore.gcHeapUsed, readersOpen.gcHeapUsed, READERS),
    externalPerReader: per(readersBefore.gcExternal, readersOpen.gcExternal, READERS),
  }
  log(JSON.stringify({ figures, actors, before, open, afterStreams, readersBefore, readersOpen }))
  const actorTable = [
    '| Heap per chat actor (`bench/actor-memory.ts`, ' + fmt(actors.actors!) + ' actors) | Value |',
    '|---|--:|',
    `| idle hydrated actor (\`host.preload\`, no turn) | ${kib(actors.perActorPreloaded!)} |`,
    `| idle actor after one sandbox turn, live | ${kib(actors.perActorAfterTurn!)} |`,
    `| **idle chat once the host's sweep parked it** (decision 046; aim ≤ 4 KB) | **${kib(actors.perChatParked!)}** (${fmt(actors.perChatParked!)} bytes) |`,
  ].join('\n')
  const table = [
    '| Measure | Turn streams | Readers of one run |',
    '|---|--:|--:|',
    `| open at once | ${fmt(STREAMS)} | ${fmt(READERS)} |`,
    `| server RSS before (VmRSS, as it is) | ${mib(before.rss)} | ${mib(readersBefore.rss)} |`,
    `| server RSS with them open (as it is) | ${mib(open.rss)} | ${mib(readersOpen.rss)} |`,
    `| **RSS per idle stream** (aim ≤ 20 KiB) | **${kib(figures.rssPerStream)}** | **${kib(figures.rssPerReader)}** |`,
    `| RSS per idle stream, both readings after a full collection | ${kib(figures.gcRssPerStream)} | ${kib(figures.gcRssPerReader)} |`,
    `| V8 heap per idle stream (heapUsed after a full collection) | ${kib(figures.heapPerStream)} | ${kib(figures.heapPerReader)} |`,
    `| off-heap per idle stream (\`external\`: buffers) | ${kib(figures.externalPerStream)} | ${kib(figures.externalPerReader)} |`,
  ].join('\n')
  process.stdout.write(`${table}\n\n${actorTable}\n`)
  const section = [
    ...sectionHead('Stream memory: idle turn streams and readers of one run (issue 34)', 'bench/stream-memory.ts', loadBefore),
    '',
    table,
    '',
    `- **Turn streams**: ${fmt(STREAMS)} chats each send \`POST /api/v1/chats/{id}/responses\` with \`${STREAM_PROMPT.replace('\n', '\\n')}\` on \`sandbox/echo\`, ${OPENING} being opened at a time;`,
    `  each answers 200 and its opening frames (\`run\`, \`config_warnings\`, \`translation_warnings\`), then waits ${IDLE_MS / 1000} s on the vendor for its one delta.`,
    `  All were open after ${streams.seconds.toFixed(1)} s; memory was read 0.5 s later, before any delta. Each idle stream holds its socket, its request and reply, the run's channel with`,
    '  its opening frames, its chat\'s actor in `streaming` and the provider call in flight. All then ended with their delta and `done`.',
    `- **Readers**: one run of the same kind (\`/slow 60000\`) and ${fmt(READERS)} \`GET /api/v1/runs/{id}/events\` readers of it, ${OPENING} being opened at a time; read 0.5 s after the`,
    '  last had its opening frames; the run was then cancelled and every reader ended with its `error` (`cancelled`). A reader holds its socket, its request and reply, and a cursor on the run\'s one channel.',
    '- **Readings**: bench/memory-probe.mjs, loaded into the server process (`node --expose-gc --import ./bench/memory-probe.mjs src/main.ts`, as `npm start` runs it), reads',
    '  VmRSS from `/proc/self/status` on SIGUSR2 as it is (garbage included), then collects the heap in full and reads VmRSS and `process.memoryUsage()` again.',
    '  "Before" is the same process, warmed up (160 turns, 200 short streams, 200 readers of another run) and at rest, its chats parked. Per stream: (with − before) ÷ count.',
    `- Server: \`MAX_RUNNING_RUNS_PER_ORG\`, \`MAX_CONCURRENT_TURNS\` and \`SHED_FROM_TURNS\` at ${CAPS} (decision 033's caps out of the way), \`LOG_LEVEL=warn\`, fresh \`DATA_DIR\`.`,
    '  Kernel socket buffers are not in the process\'s RSS; the client is another process.',
    ...(SNAPSHOT_DIR ? [`- Heap snapshots written to ${SNAPSHOT_DIR} (before and with the streams open).`] : []),
    '',
    actorTable,
    '',
    '- Actors: `node --expose-gc bench/actor-memory.ts N` (as `npm run bench -- turns` runs it), in a process of its own: the host built as `src/main.ts` builds it,',
    '  N chats hydrated, then given one turn each, then parked by the host\'s sweep; `heapUsed` after full collections, less the same before, over N.',
    '  An idle chat is parked 1 s after its turn: that is what it costs a node at rest. A chat streaming has its live actor: that is in the turn streams\' figure above.',
  ].join('\n')
  writeSection(join(REPO_ROOT, 'BENCHMARKS.md'), 'stream-memory', section)
  log('wrote BENCHMARKS.md (section "stream-memory")')
}

runMain(main, cleanup)
