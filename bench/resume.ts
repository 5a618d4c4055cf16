/**
 * `npm run bench -- resume` (issue 24): how long a client that resumes a run's stream waits, from
 * sending GET /api/v1/runs/{run_id}/events with its Last-Event-ID to the first frame it had not
 * seen, at concurrency 1 and 100, on one real server process (`sandbox/echo`):
 *
 * - **running**: C turns of `/slow 20` and 300 words stream at once; each client reads to its fifth
 *   delta and drops the connection; 100 ms later all C resume at once, joining their runs' live
 *   channels (the frames that came while they were away first), and read on to `done`;
 * - **ended**: once the runs have ended, the same C clients resume again from the same ids at once:
 *   each stream is rebuilt from the ledger (the run's parts and row) and read to `done`.
 *
 * Every resumed stream is checked: it ends with `done`, and its first frame's id follows the one
 * resumed from. Environment: BENCH_ITERATIONS (rounds per concurrency, default 3).
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { REPO_ROOT, startServer } from '../test/e2e/server-process.ts'
import { readFrames, type Frame } from '../test/e2e/run-events-client.ts'
import { seedOrganisation } from '../test/helpers/seed-organisation.ts'
import { writeSection } from './benchmarks-file.ts'
import { envNumber, fmt, installCleanup, loadLine, log, runMain, sectionHead, sleep, stats } from './lib.ts'

const ROUNDS = Math.trunc(envNumber('BENCH_ITERATIONS', 3))
const CONCURRENCY = [1, 100]
const TURN = '/slow 20\n/long 300'
const { removeLater, cleanup } = installCleanup()

const seqOf = (id: string) => Number(id.slice(id.lastIndexOf(':') + 1))

/** Reads an SSE answer (test/e2e/run-events-client.ts); `stopAfter` drops it after the frame it approves. */
async function read(url: string, init: RequestInit, stopAfter: (frames: Frame[]) => boolean = () => false) {
  const answer = await readFrames(url, init, stopAfter)
  if (answer.status !== 200) throw new Error(`${url}: HTTP ${answer.status} ${answer.text}`)
  return { frames: answer.frames, firstFrameMs: answer.firstFrameMs }
}

async function main(): Promise<void> {
  const loadBefore = loadLine()
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-resume-'))
  removeLater(dataDir)
  const most = Math.max(...CONCURRENCY)
  const { key, chats } = seedOrganisation(dataDir, { name: 'Resume', credit: '1000000', chats: most * ROUNDS * CONCURRENCY.length, namespace: 'resume' })
  // One organisation holds every client: its cap on running runs and the node's shedding are raised, so the resume itself is measured.
  const server = await startServer({ env: { DATA_DIR: dataDir, LOG_LEVEL: 'warn', MAX_RUNNING_RUNS_PER_ORG: '100000', SHED_FROM_TURNS: '100000' }, readyPath: '/healthz', timeoutMs: 60_000 })
  const auth = { authorization: `Bearer ${key}` }
  const events = (runId: string, lastId: string) => read(`${server.url}/api/v1/runs/${runId}/events`, { headers: { ...auth, 'last-event-id': lastId } })
  const check = (what: string, resumedFrom: string, frames: Frame[]) => {
    if (frames.at(-1)?.event !== 'done') throw new Error(`${what}: the resumed stream ended with ${frames.at(-1)?.event ?? 'nothing'}`)
    if (seqOf(frames[0]!.id!) <= seqOf(resumedFrom)) throw new Error(`${what}: the first frame ${frames[0]!.id} does not follow ${resumedFrom}`)
  }

  let next = 0
  const rows: string[] = []
  const figures: Array<Record<string, number>> = []
  for (const c of CONCURRENCY) {
    const live: number[] = []
    const rebuilt: number[] = []
    let liveFrames = 0
    let rebuiltFrames = 0
    for (let round = 0; round < ROUNDS; round++) {
      await sleep(500)
      const mine = chats.slice(next, next + c)
      next += c
      const dropped = await Promise.all(
        mine.map(async (chat) => {
          const turn = await read(
            `${server.url}/api/v1/chats/${chat}/responses`,
            { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'sandbox/echo', max_tokens: 4000, input: [{ type: 'prompt', text: TURN }] }) },
            (frames) => frames.filter((f) => f.event === 'delta').length === 5,
          )
          return { runId: turn.frames[0]!.id!.slice(0, turn.frames[0]!.id!.lastIndexOf(':')), lastId: turn.frames.at(-1)!.id! }
        }),
      )
      // Away for 100 ms (about five deltas): the first frame of the resumed stream is one replayed from the channel, not the next one the provider makes.
      await sleep(100)
      const joined = await Promise.all(dropped.map((d) => events(d.runId, d.lastId)))
      joined.forEach((r, i) => check(`running, client ${i}`, dropped[i]!.lastId, r.frames))
      live.push(...joined.map((r) => r.firstFrameMs!))
      liveFrames += joined.reduce((n, r) => n + r.frames.length, 0)
      const again = await Promise.all(dropped.map((d) => events(d.runId, d.lastId)))
      again.forEach((r, i) => check(`ended, client ${i}`, dropped[i]!.lastId, r.frames))
      rebuilt.push(...again.map((r) => r.firstFrameMs!))
      rebuiltFrames += again.reduce((n, r) => n + r.frames.length, 0)
      log(`concurrency ${c}, round ${round + 1}: running p50 ${fmt(stats(live).p50, 1)} ms; ended p50 ${fmt(stats(rebuilt).p50, 1)} ms`)
    }
    for (const [kind, samples, frames] of [
      ['running (live channel)', live, liveFrames],
      ['ended (rebuilt from the ledger)', rebuilt, rebuiltFrames],
    ] as const) {
      const s = stats(samples)
      figures.push({ concurrency: c, p50: s.p50, p99: s.p99, max: s.max })
      rows.push(`| ${c} | ${kind} | ${s.n} | ${fmt(s.p50, 1)} ms | ${fmt(s.p99, 1)} ms | ${fmt(s.max, 1)} ms | ${fmt(frames / s.n)} |`)
    }
  }
  await server.stop()

  const section = [
    ...sectionHead('Resume: reconnecting to a run’s stream', 'bench/resume.ts', loadBefore),
    `- **Load**: one server process, \`sandbox/echo\`. At concurrency C, C clients each stream a turn of \`/slow 20\` and 300 words (about 6 s), drop it after the fifth delta, and 100 ms later (about five deltas on) all resume at once with \`GET /api/v1/runs/{run_id}/events\` and \`Last-Event-ID\`: the runs are still running, so they join the live channel (what came while they were away first). Once the runs have ended, the same C clients resume from the same ids at once: rebuilt from the ledger. ${ROUNDS} rounds per C; each resumed stream is read to \`done\` and checked. One organisation, its running-run cap and the node's shedding (SHED_FROM_TURNS) raised.`,
    '  "First frame": from sending the request to the first frame the client had not seen (for a running run, one replayed from the channel). "Frames": frames per resumed stream (a rebuilt block\'s rest comes as one delta).',
    '',
    '| Concurrency | Run | Resumes | First frame p50 | p99 | max | Frames |',
    '|--:|:--|--:|--:|--:|--:|--:|',
    ...rows,
  ].join('\n')
  writeSection(join(REPO_ROOT, 'BENCHMARKS.md'), 'resume', section)
  log(JSON.stringify(figures))
}

runMain(main, cleanup)
