import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Agent } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { nowAbsolute, startHealthzPoller, type HealthzPoller } from '../helpers/healthz-poller.ts'
import { HOSTILE_CASES, type HostileTarget } from '../helpers/hostile-requests.ts'
import { seedOrganisation } from '../helpers/seed-organisation.ts'
import { startServer, type ServerProcess } from './server-process.ts'
import { machineCeiling } from '../helpers/machine-timeouts.ts'

/**
 * The stall suite (issue 22): each hostile request of items 1–3 (test/helpers/hostile-requests.ts)
 * against the real server process, while a poller on its own thread asks `/healthz` every 10 ms.
 * Each case must be answered as it should be (a turn's stream read to its `done`), and `/healthz`
 * must go on answering 200 while it runs. How long the answers took is reported here and measured
 * against a control in bench/stall.ts (BENCHMARKS.md), not asserted: this machine may be busy.
 */

let dataDir: string
let server: ServerProcess
let poller: HealthzPoller
let target: HostileTarget
const agent = new Agent({ connections: 16 })

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'parley-stall-'))
  const { key } = seedOrganisation(dataDir, { name: 'Stall', credit: '1000' })
  server = await startServer({ env: { DATA_DIR: dataDir }, readyPath: '/healthz', timeoutMs: 90_000 })
  const auth = { authorization: `Bearer ${key}` }
  target = {
    url: server.url,
    auth,
    newChat: async () => {
      const res = await fetch(`${server.url}/api/v1/chats`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{}' })
      expect(res.status).toBe(201)
      return ((await res.json()) as { id: string }).id
    },
  }
  poller = startHealthzPoller(server.url, 10)
}, machineCeiling(120_000))

afterAll(async () => {
  await poller?.stop()
  await agent.close()
  await server?.stop()
  rmSync(dataDir, { recursive: true, force: true })
})

describe('no hostile request stops /healthz from answering (issue 22)', () => {
  for (const hostile of HOSTILE_CASES) {
    it(hostile.name, { timeout: 120_000 }, async () => {
      const from = nowAbsolute()
      const outcome = await hostile.run(target, agent)
      const to = nowAbsolute()
      const polls = await poller.between(from, to)
      expect(outcome.statuses.every((s) => s === hostile.expected), JSON.stringify(outcome)).toBe(true)
      if (hostile.expected === 200) expect(outcome.terminals.every((t) => t === 'done'), JSON.stringify(outcome)).toBe(true)
      // Every poll that overlapped the case was answered, and answered 200.
      expect(polls.length).toBeGreaterThan(0)
      expect(polls.filter((p) => p.status !== 200)).toEqual([])
      console.log(`${hostile.name}: ${polls.length} /healthz answers, worst ${Math.max(...polls.map((p) => p.ms)).toFixed(1)} ms, case took ${(to - from).toFixed(0)} ms`)
    })
  }
})
