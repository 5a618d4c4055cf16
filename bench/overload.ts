/**
 * `npm run bench -- overload` (issue 22, item 7): are new clients let in while old ones stream?
 * Against the real server process, 256 clients on their own keep-alive connections loop `/long 200`
 * turns on `sandbox/echo` for 6 s: half start at once, half half a second later, while the first
 * half stream (test/helpers/turn-clients.ts; each wave on its own thread). Reported per round: how
 * long each client's first turn waited for its first frame, or for its refusal (503 or 429 with
 * Retry-After), the slowest of each wave, and how many turns were served and refused.
 * The floor, measured in the same run: one client's first frame on the idle server.
 * The aim: no client waits more than 2 s for either.
 *
 * Environment: BENCH_ITERATIONS (rounds, default 3).
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { seedOrganisation } from '../test/helpers/seed-organisation.ts'
import { runClients, type ClientsRun } from '../test/helpers/turn-clients.ts'
import { REPO_ROOT, startServer } from '../test/e2e/server-process.ts'
import { writeSection } from './benchmarks-file.ts'
import { envNumber, fmt, installCleanup, loadLine, log, runMain, sectionHead, sleep } from './lib.ts'

const ROUNDS = Math.trunc(envNumber('BENCH_ITERATIONS', 3))
const CLIENTS = 256
const AIM_MS = 2_000
const BODY = JSON.stringify({ model: 'sandbox/echo', input: [{ type: 'prompt', text: '/long 200' }] })

const { removeLater, cleanup } = installCleanup()

/** A first turn's wait: for its first frame if it streamed, else for its answer. */
const waitOf = (t: ClientsRun['firstTurns'][number]) => (t.kind === 'streamed' ? t.firstFrameMs : t.ms)
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0

async function main(): Promise<void> {
  const loadBefore = loadLine()
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-overload-'))
  removeLater(dataDir)
  const { key, chats } = seedOrganisation(dataDir, { name: 'Overload', credit: '1000000', chats: CLIENTS, namespace: 'overload' })
  // One organisation holds every client: its cap on running runs is raised so that the node's own fairness is measured.
  const server = await startServer({ env: { DATA_DIR: dataDir, LOG_LEVEL: 'warn', MAX_RUNNING_RUNS_PER_ORG: '100000' }, readyPath: '/healthz', timeoutMs: 60_000 })
  const auth = { authorization: `Bearer ${key}` }
  const options = { url: server.url, auth, body: BODY, timeoutMs: 20_000 }

  const floors: number[] = []
  const rows: string[] = []
  const figures: Array<{ round: number; worstMs: number }> = []
  for (let round = 0; round < ROUNDS; round++) {
    await sleep(1_000)
    const alone = await runClients({ ...options, chats: chats.slice(0, 1), firstWave: 1, lateAfterMs: 0, loopForMs: 0 })
    const floor = waitOf(alone.firstTurns[0]!)
    floors.push(floor)
    const run = await runClients({ ...options, chats, firstWave: CLIENTS / 2, lateAfterMs: 500, loopForMs: 6_000 })
    const failed = run.firstTurns.filter((t) => t.kind === 'failed')
    if (failed.length > 0) throw new Error(`round ${round + 1}: ${failed.length} first turns failed: ${JSON.stringify(failed[0])}`)
    const all = run.firstTurns.map(waitOf).sort((a, b) => a - b)
    const worstOf = (late: boolean) => Math.max(0, ...run.firstTurns.filter((t) => t.late === late).map(waitOf))
    const refused = run.firstTurns.filter((t) => t.kind === 'refused').length
    const worst = all.at(-1) ?? 0
    figures.push({ round: round + 1, worstMs: worst })
    log(`round ${round + 1}: floor ${fmt(floor)} ms; first turns p50 ${fmt(percentile(all, 0.5))} ms, p99 ${fmt(percentile(all, 0.99))} ms, worst ${fmt(worst)} ms (early ${fmt(worstOf(false))}, late ${fmt(worstOf(true))}); ${refused} refused; ${run.turns} turns, ${run.refusals} later refusals`)
    rows.push(
      `| ${round + 1} | ${fmt(floor)} ms | ${fmt(percentile(all, 0.5))} ms | ${fmt(percentile(all, 0.99))} ms | ${fmt(worstOf(false))} ms | ${fmt(worstOf(true))} ms | ${CLIENTS - refused} / ${refused} | ${run.turns - run.refusals} / ${run.refusals} | ${worst <= AIM_MS ? 'yes' : 'no'} |`,
    )
  }
  await server.stop()

  const section = [
    ...sectionHead('Overload: new clients while 128 others stream', 'bench/overload.ts', loadBefore),
    `- **Load**: ${CLIENTS} clients, each on its own keep-alive connection, loop \`/long 200\` turns on \`sandbox/echo\` for 6 s; ${CLIENTS / 2} start at once and ${CLIENTS / 2} half a second later, each wave on its own thread (test/helpers/turn-clients.ts). One organisation, its running-run cap raised; the node's defaults otherwise (MAX_CONCURRENT_TURNS 1024, SHED_FROM_TURNS 32, SHED_LOOP_DELAY_MS 3).`,
    '  "Wait" is how long a client\'s first turn waited for its first frame, or for its refusal (503 with Retry-After). Floor: one client\'s first frame on the idle server, in the same round. Aim: no wait over 2 s (issue 22, item 7).',
    '',
    '| Round | Floor | Wait p50 | Wait p99 | Worst, first wave | Worst, second wave | First turns streamed / refused | Later turns streamed / refused | ≤ 2 s |',
    '|--:|--:|--:|--:|--:|--:|--:|--:|:-:|',
    ...rows,
  ].join('\n')
  writeSection(join(REPO_ROOT, 'BENCHMARKS.md'), 'overload', section)
  log(JSON.stringify({ floors, figures }))
}

runMain(main, cleanup)
