/**
 * Reads a V8 `.cpuprofile` (what `node --cpu-prof` writes on exit) into self time per function and
 * per package or source file, for the benchmarks that say where a server's CPU goes.
 */
import { readFileSync } from 'node:fs'

type ProfileNode = {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number }
}
type CpuProfile = { nodes: ProfileNode[]; startTime: number; endTime: number; samples?: number[]; timeDeltas?: number[] }

/** `where` is `file:line:column` in the code V8 ran: for the project's files, tsx's compiled output, not the .ts source's lines. */
export type SelfTime = { name: string; where: string; group: string; ms: number; share: number }
export type ProfileSummary = {
  /** Sampled ms, all of it and less `(idle)` (the loop waiting for I/O), which the shares are of. */
  totalMs: number
  busyMs: number
  functions: SelfTime[]
  groups: SelfTime[]
}

/**
 * Where a frame's code lives: the npm package (`@ai-sdk/openai`, `fastify`), the project's file
 * (`src/http/app.ts`), Node's own (`node:internal/...`), or V8's pseudo-frames (`(garbage collector)`).
 */
export function groupOf(url: string, functionName: string): string {
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)'
  const path = url.replace(/^file:\/\//, '')
  const modules = path.lastIndexOf('/node_modules/')
  if (modules !== -1) {
    const [first, second] = path.slice(modules + '/node_modules/'.length).split('/')
    return first!.startsWith('@') ? `${first}/${second}` : first!
  }
  if (path.startsWith('node:')) return path
  const project = /\/((?:src|machines|catalogue|bench|test)\/.*)$/.exec(path)
  return project ? project[1]! : path
}

/**
 * Times in V8's profile are microseconds of the monotonic clock, the clock of
 * `process.hrtime.bigint()` in any process on the machine: a client can name a window of the
 * server's profile by reading its own clock.
 */
export type Window = { fromUs: number; toUs: number }

export const monotonicUs = () => Number(process.hrtime.bigint() / 1000n)

/**
 * Self ms per node id: each sample stands for the time until the next one, and belongs to the node
 * it sampled; only samples taken inside `window` count (all of them without one).
 */
function selfMsById(profile: CpuProfile, window: Window | null): Map<number, number> {
  const byId = new Map<number, number>()
  const samples = profile.samples ?? []
  const deltas = profile.timeDeltas ?? []
  if (samples.length === 0 || deltas.length !== samples.length) throw new Error('the profile has no samples with time deltas')
  let at = profile.startTime
  for (let i = 0; i < samples.length; i++) {
    at += deltas[i]!
    if (window && (at < window.fromUs || at > window.toUs)) continue
    const ms = (deltas[i + 1] ?? 0) / 1000
    byId.set(samples[i]!, (byId.get(samples[i]!) ?? 0) + ms)
  }
  return byId
}

type Total = { name: string; where: string; group: string; ms: number }

function ranked(totals: Map<string, Total>, busyMs: number, top: number): SelfTime[] {
  return [...totals.values()]
    .map((t) => ({ ...t, share: t.ms / busyMs }))
    .sort((a, b) => b.ms - a.ms)
    .slice(0, top)
}

export function summariseProfile(file: string, top = 25, window: Window | null = null): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile
  const selfMs = selfMsById(profile, window)
  const functions = new Map<string, Total>()
  const groups = new Map<string, Total>()
  let totalMs = 0
  let idleMs = 0
  for (const node of profile.nodes) {
    const ms = selfMs.get(node.id) ?? 0
    if (ms === 0) continue
    const { functionName, url, lineNumber, columnNumber } = node.callFrame
    const group = groupOf(url, functionName)
    totalMs += ms
    if (functionName === '(idle)') {
      idleMs += ms
      continue
    }
    const name = functionName || '(anonymous)'
    const where = url ? `${group}:${lineNumber + 1}:${columnNumber + 1}` : ''
    const f = functions.get(`${name} ${where}`) ?? { name, where, group, ms: 0 }
    f.ms += ms
    functions.set(`${name} ${where}`, f)
    const g = groups.get(group) ?? { name: group, where: '', group, ms: 0 }
    g.ms += ms
    groups.set(group, g)
  }
  const busyMs = totalMs - idleMs
  return { totalMs, busyMs, functions: ranked(functions, busyMs, top), groups: ranked(groups, busyMs, top) }
}
