/**
 * `npm run bench -- stall` (issue 22): does one hostile request stall everyone else? Against the
 * real server process, a poller on its own thread asks `GET /healthz` every 10 ms
 * (test/helpers/healthz-poller.ts) while each case of test/helpers/hostile-requests.ts runs: a
 * 16 MB nested body to the turn route, ten 1 MB nested bodies to an unknown path without a key, a
 * 20 MiB attachment, 20 × 1.2 MB attachments, 31 MiB of prompt text, `/long 40000`.
 *
 * Each case runs ROUNDS times; before each round the poller runs alone for as long as the round then
 * takes, and that quiet window is the round's control. Reported: the worst `/healthz` latency in
 * the case and in its control, and the excess (case minus control), worst over the rounds. The aim
 * (issue 22): no case delays an answer by more than 100 ms beyond its control.
 *
 * Environment: BENCH_ITERATIONS (rounds per case, default 3).
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Agent } from 'undici'
import { startHealthzPoller, nowAbsolute, type PollSample } from '../test/helpers/healthz-poller.ts'
import { HOSTILE_CASES, type HostileTarget } from '../test/helpers/hostile-requests.ts'
import { seedOrganisation } from '../test/helpers/seed-organisation.ts'
import { REPO_ROOT, startServer } from '../test/e2e/server-process.ts'
import { writeSection } from './benchmarks-file.ts'
import { envNumber, fmt, installCleanup, loadLine, log, runMain, sectionHead, sleep } from './lib.ts'

const ROUNDS = Math.trunc(envNumber('BENCH_ITERATIONS', 3))
const POLL_EVERY_MS = 10
/** The shortest quiet window: enough polls for a worst case to mean something. */
const MIN_CONTROL_MS = 1_000

const { removeLater, cleanup } = installCleanup()

type Round = { caseWorst: number; controlWorst: number; polls: number; caseMs: number; statuses: number[]; terminals: Array<string | null> }

const worst = (samples: PollSample[]) => samples.reduce((max, s) => Math.max(max, s.ms), 0)

async function main(): Promise<void> {
  const loadBefore = loadLine()
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-stall-'))
  removeLater(dataDir)
  const { key } = seedOrganisation(dataDir, { name: 'Benchmark', credit: '1000000' })

  const server = await startServer({ env: { DATA_DIR: dataDir, LOG_LEVEL: 'warn' }, readyPath: '/healthz', timeoutMs: 60_000 })
  const auth = { authorization: `Bearer ${key}` }
  const agent = new Agent({ connections: 32 })
  const target: HostileTarget = {
    url: server.url,
    auth,
    newChat: async () => {
      const res = await fetch(`${server.url}/api/v1/chats`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{}' })
      return ((await res.json()) as { id: string }).id
    },
  }
  const poller = startHealthzPoller(server.url, POLL_EVERY_MS)
  await sleep(500)

  const rows: string[] = []
  const figures: Array<{ name: string; excess: number }> = []
  for (const hostile of HOSTILE_CASES) {
    const rounds: Round[] = []
    let lastCaseMs = MIN_CONTROL_MS
    for (let round = 0; round < ROUNDS; round++) {
      const quietFrom = nowAbsolute()
      await sleep(Math.max(MIN_CONTROL_MS, lastCaseMs))
      const control = await poller.between(quietFrom, nowAbsolute())
      const from = nowAbsolute()
      const outcome = await hostile.run(target, agent)
      const to = nowAbsolute()
      const during = await poller.between(from, to)
      lastCaseMs = to - from
      const wrong = outcome.statuses.filter((s) => s !== hostile.expected)
      if (wrong.length > 0) throw new Error(`${hostile.name}: expected ${hostile.expected}, got ${outcome.statuses.join(', ')}`)
      rounds.push({ caseWorst: worst(during), controlWorst: worst(control), polls: during.length, caseMs: lastCaseMs, ...outcome })
      log(`${hostile.name} round ${round + 1}: worst ${fmt(worst(during), 1)} ms (control ${fmt(worst(control), 1)} ms), ${during.length} polls over ${fmt(lastCaseMs)} ms`)
    }
    const excess = Math.max(...rounds.map((r) => r.caseWorst - r.controlWorst))
    figures.push({ name: hostile.name, excess })
    const caseWorst = Math.max(...rounds.map((r) => r.caseWorst))
    const controlWorst = Math.max(...rounds.map((r) => r.controlWorst))
    const terminals = [...new Set(rounds.flatMap((r) => r.terminals).filter((t) => t !== null))]
    rows.push(
      `| ${hostile.name} | ${hostile.expected}${terminals.length ? ` (${terminals.join(', ')})` : ''} | ${fmt(Math.max(...rounds.map((r) => r.caseMs)))} ms | ${fmt(caseWorst, 1)} ms | ${fmt(controlWorst, 1)} ms | ${fmt(excess, 1)} ms | ${excess <= 100 ? 'yes' : 'no'} |`,
    )
  }
  await poller.stop()
  await agent.close()
  await server.stop()

  const section = [
    ...sectionHead('Stalls: /healthz while hostile requests run', 'bench/stall.ts', loadBefore),
    `- **Load**: a poller on its own thread asks \`GET /healthz\` every ${POLL_EVERY_MS} ms over one keep-alive connection, one request at a time, for the whole run.`,
    `  Each case runs ${ROUNDS} times (test/helpers/hostile-requests.ts); before each round the poller runs alone for as long as the previous round took (at least ${MIN_CONTROL_MS / 1000} s): that window is the round's control.`,
    '  "Excess" is the worst `/healthz` latency during the case minus the worst in its control, the largest over the rounds. Aim: at most 100 ms.',
    '',
    '| Case | Answer | Case took (max) | /healthz worst, case | /healthz worst, control | Excess | ≤ 100 ms |',
    '|---|--:|--:|--:|--:|--:|:-:|',
    ...rows,
  ].join('\n')
  writeSection(join(REPO_ROOT, 'BENCHMARKS.md'), 'stall', section)
  log(JSON.stringify(figures))
}

runMain(main, cleanup)
