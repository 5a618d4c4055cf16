/**
 * Where a turn's server CPU goes: runs the real server under `--cpu-prof` with 32 connections looping
 * 20-delta sandbox turns (as bench/turns does), then prints the heaviest functions by self time and
 * the share of our own source files by inclusive time. Not a benchmark: profiling slows the server.
 *   node bench/profile-turns.ts [seconds]  (PROFILE_CONCURRENCY=1 for one connection)
 */
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs'
import { Agent } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase } from '../src/store/database.ts'
import { createStore } from '../src/store/index.ts'
import { startServer } from '../test/e2e/server-process.ts'
import { procCpuSeconds } from './lib.ts'
import { sse } from './sse-client.ts'

const SECONDS = Number(process.argv[2] ?? 8)
const CONCURRENCY = Number(process.env.PROFILE_CONCURRENCY ?? 32)
const BODY = JSON.stringify({ model: 'sandbox/echo', input: [{ type: 'prompt', text: '/long 20' }] })

type Node = { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; hitCount: number; children?: number[] }

const dataDir = mkdtempSync(join(tmpdir(), 'parley-profile-'))
const profDir = join(dataDir, 'prof')
const db = openDatabase(join(dataDir, 'parley.db'))
const store = createStore(db)
const org = store.organisations.create('Profile', 'profile')
const { key } = store.apiKeys.create(org.id, 'profile')
store.balance.add(org.id, 'topup', '1000000')
const chats = Array.from({ length: CONCURRENCY }, (_, i) => store.chats.create({ orgId: org.id, namespace: 'profile', title: `c${i}`, description: null, userMetadata: {} }).id)
db.close()

// PROFILE_OFF=1: no profiler, just turns/s and the server's CPU per turn (to compare two versions).
const profiling = process.env.PROFILE_OFF !== '1'
const server = await startServer({
  args: [...(profiling ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : []), ...(process.env.PROFILE_HEAP ? ['--heap-prof', `--heap-prof-dir=${process.env.PROFILE_HEAP}`] : []), 'src/main.ts'],
  env: { DATA_DIR: dataDir },
})
const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY })
const headers = { authorization: `Bearer ${key}` }
let turns = 0
const cpuBefore = await procCpuSeconds(server.child.pid!)
const deadline = performance.now() + SECONDS * 1000
await Promise.all(
  chats.map(async (chat) => {
    while (performance.now() < deadline) {
      const o = await sse({ agent, url: server.url, path: `/api/v1/chats/${chat}/responses`, headers, body: BODY, timeoutMs: 30_000 })
      if (o.status === 200) turns++
    }
  }),
)
agent.destroy()
const cpuPerTurnUs = (((await procCpuSeconds(server.child.pid!)) - cpuBefore) * 1e6) / turns
await server.stop(10_000)
console.log(`${turns} turns in ${SECONDS} s: ${(turns / SECONDS).toFixed(0)}/s, server CPU ${cpuPerTurnUs.toFixed(0)} µs/turn${profiling ? ' (under the profiler)' : ''}`)
if (!profiling) process.exit(0)

const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'))!
const profile = JSON.parse(readFileSync(join(profDir, file), 'utf8')) as { nodes: Node[]; samples: number[]; timeDeltas: number[] }
const byId = new Map(profile.nodes.map((n) => [n.id, n]))
const total = profile.nodes.reduce((s, n) => s + n.hitCount, 0)
const short = (url: string) => url.replace(/^file:\/\/.*?\/(node_modules\/|src\/|machines\/)/, '$1').replace(/^node:/, '')
const label = (n: Node) => `${n.callFrame.functionName || '(anonymous)'} ${short(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`

const self = new Map<string, number>()
for (const n of profile.nodes) self.set(label(n), (self.get(label(n)) ?? 0) + n.hitCount)
const pct = (h: number) => `${((h / total) * 100).toFixed(1).padStart(5)}%`
const only = process.env.PROFILE_ONLY
console.log(`\nself time${only ? ` (${only} only)` : ''}`)
for (const [name, hits] of [...self].filter(([name]) => !only || name.includes(only)).sort((a, b) => b[1] - a[1]).slice(0, 45)) console.log(pct(hits), name)

// Self time by where the code lives: a package, a folder of ours, node's internals.
const place = (url: string) => {
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)
  if (pkg) return pkg[1]!
  const ours = /\/(src\/[^/]+|machines)\//.exec(url)
  if (ours) return ours[1]!
  return url === '' ? '(native, gc, idle)' : 'node internals'
}
const byPlace = new Map<string, number>()
for (const n of profile.nodes) byPlace.set(place(n.callFrame.url), (byPlace.get(place(n.callFrame.url)) ?? 0) + n.hitCount)
console.log('\nself time by place')
for (const [name, hits] of [...byPlace].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(pct(hits), name)

// Inclusive time per function of ours (counted once per stack even when recursive).
const inclusive = new Map<string, number>()
const walk = (id: number, seen: Set<string>) => {
  const n = byId.get(id)!
  const name = label(n)
  const ours = process.env.PROFILE_ALL === '1' ? n.callFrame.url !== '' : /\/(src|machines)\//.test(n.callFrame.url)
  const fresh = ours && !seen.has(name)
  if (fresh) seen.add(name)
  let hits = n.hitCount
  for (const c of n.children ?? []) hits += walk(c, seen)
  if (fresh) {
    inclusive.set(name, (inclusive.get(name) ?? 0) + hits)
    seen.delete(name)
  }
  return hits
}
walk(profile.nodes[0]!.id, new Set())
console.log('\ninclusive time, our functions')
for (const [name, hits] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, 60)) console.log(pct(hits), name)

// Who calls the functions named on the command line (after the seconds), by inclusive time.
const parentOf = new Map<number, number>()
for (const n of profile.nodes) for (const c of n.children ?? []) parentOf.set(c, n.id)
const subtree = (id: number): number => byId.get(id)!.hitCount + (byId.get(id)!.children ?? []).reduce((s, c) => s + subtree(c), 0)
for (const wanted of process.argv.slice(3)) {
  const stacks = new Map<string, number>()
  for (const n of profile.nodes) {
    if (n.callFrame.functionName !== wanted) continue
    const chain: string[] = []
    for (let p = parentOf.get(n.id); p !== undefined && chain.length < 8; p = parentOf.get(p)) chain.push(label(byId.get(p)!))
    stacks.set(chain.join(' < '), (stacks.get(chain.join(' < ')) ?? 0) + subtree(n.id))
  }
  console.log(`\ncallers of ${wanted}`)
  for (const [chain, hits] of [...stacks].sort((a, b) => b[1] - a[1]).slice(0, 6)) console.log(pct(hits), chain)
}
