/**
 * What every benchmark of bench/ shares: settings from the environment, the machine line, the exact
 * command of the run, statistics over samples, formatting, and cleanup on the way out.
 */
import { execFileSync, spawn } from 'node:child_process'
import { rmSync } from 'node:fs'
import { arch, cpus, loadavg, platform, totalmem } from 'node:os'
import { killAllChildren, REPO_ROOT } from '../test/e2e/server-process.ts'

export const log = (message: string) => process.stderr.write(`bench: ${message}\n`)

/** A positive number from the environment, or the fallback. */
export function envNumber(name: string, fallback: number): number {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, got "${raw}"`)
  return value
}

/** The settings a benchmark reads; they are written into the command line it records. */
export const SETTINGS = [
  'BENCH_DURATION',
  'BENCH_WARMUP',
  'BENCH_CONNECTIONS',
  'BENCH_ITERATIONS',
  'BENCH_ENTRIES',
  'BENCH_TURNS_DURATION',
  'BENCH_ACTORS',
  'BENCH_STREAMS',
  'BENCH_READERS',
  'BENCH_SNAPSHOT',
  'BENCH_ROUNDS',
  'BENCH_VENDOR_PROFILE',
] as const

/**
 * The exact command that produced a section: what `npm run bench` (bench/run.ts) passed down in
 * BENCH_COMMAND, else the direct invocation of the benchmark's own file.
 */
export function commandLine(file: string): string {
  const overrides = SETTINGS.filter((name) => process.env[name])
    .map((name) => `${name}=${process.env[name]} `)
    .join('')
  return `${overrides}${process.env.BENCH_COMMAND ?? `node --import tsx ${file}`}`
}

export function machineLine(): string {
  const cpu = cpus()
  const gib = (totalmem() / 2 ** 30).toFixed(0)
  return `${process.version} on ${platform()} ${arch()}, ${cpu.length} × ${cpu[0]?.model.trim() ?? 'unknown CPU'}, ${gib} GiB RAM`
}

export const loadLine = () => loadavg().map((n) => n.toFixed(2)).join(', ')

export const nowStamp = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z')

/** The commit measured, and whether the code under measurement differed from it. */
export function commitLine(): string {
  try {
    const git = (...args: string[]) => execFileSync('git', args, { cwd: REPO_ROOT, encoding: 'utf8' })
    const head = git('rev-parse', '--short', 'HEAD').trim()
    // Porcelain lines are "XY path": two status columns and a space, so no trimming before slicing.
    const dirty = git('status', '--porcelain', '--', 'src', 'machines', 'catalogue', 'bench')
      .split('\n')
      .filter(Boolean)
      .map((line) => line.slice(3))
    if (dirty.length === 0) return head
    const listed = dirty.slice(0, 5).join(', ') + (dirty.length > 5 ? ` and ${dirty.length - 5} more` : '')
    return `${head}, with uncommitted changes: ${listed}`
  } catch {
    return 'unknown (no git)'
  }
}

/** The lines every section starts with. */
export function sectionHead(title: string, file: string, loadBefore: string): string[] {
  return [
    `## ${title}`,
    '',
    `- **Date**: ${nowStamp()}`,
    `- **Commit**: ${commitLine()}`,
    `- **Node**: ${machineLine()}`,
    `- **Command**: \`${commandLine(file)}\` (from the repository root)`,
    `- **Load average** when the run started: ${loadBefore} (the machine may be shared; compare the ratios).`,
  ]
}

export const fmt = (n: number, digits = 0) =>
  n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })

export const mean = (values: ArrayLike<number>) => {
  let sum = 0
  for (let i = 0; i < values.length; i++) sum += values[i]!
  return sum / values.length
}

/** Nearest-rank percentile of ascending samples. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!
}

export type Stats = { n: number; mean: number; p50: number; p99: number; min: number; max: number }

export function stats(samples: ArrayLike<number>): Stats {
  const sorted = Float64Array.from(samples as ArrayLike<number>).sort()
  return {
    n: sorted.length,
    mean: mean(sorted),
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    min: sorted[0] ?? Number.NaN,
    max: sorted[sorted.length - 1] ?? Number.NaN,
  }
}

/** A growable array of float samples (no boxing). */
export class Samples {
  private data = new Float64Array(1 << 12)
  length = 0
  push(value: number): void {
    if (this.length === this.data.length) {
      const grown = new Float64Array(this.data.length * 2)
      grown.set(this.data)
      this.data = grown
    }
    this.data[this.length++] = value
  }
  values(): Float64Array {
    return this.data.subarray(0, this.length)
  }
}

/** A small deterministic generator, so every run seeds the same data. */
export function rng(seed: number) {
  let s = seed >>> 0
  return () => {
    s = (s + 0x6d2b79f5) >>> 0
    let t = s
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/**
 * Kills the servers this process started and removes its temporary directories on every way out
 * (normal exit, error, Ctrl-C). Returns the function that registers a directory to remove.
 */
export function installCleanup(): { removeLater: (dir: string) => void; cleanup: () => void } {
  const dirs = new Set<string>()
  const cleanup = () => {
    killAllChildren()
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
    dirs.clear()
  }
  process.once('exit', cleanup)
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      log(`${signal}: stopping`)
      cleanup()
      process.exit(130)
    })
  }
  return { removeLater: (dir) => dirs.add(dir), cleanup }
}

/** Runs a benchmark's main, cleaning up and exiting non-zero on failure. */
export function runMain(main: () => Promise<void>, cleanup: () => void): void {
  main()
    .then(() => {
      cleanup()
      // Sockets of a client agent or a timer must not keep a finished benchmark alive.
      process.exit(0)
    })
    .catch((error: unknown) => {
      log(error instanceof Error ? (error.stack ?? error.message) : String(error))
      cleanup()
      process.exit(1)
    })
}

/** Reads a /proc/<pid>/status field in kB (VmRSS, VmHWM), or NaN off Linux. */
export async function procStatusKb(pid: number, field: 'VmRSS' | 'VmHWM'): Promise<number> {
  const { readFile } = await import('node:fs/promises')
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8')
    const match = new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, 'm').exec(status)
    return match ? Number(match[1]) : Number.NaN
  } catch {
    return Number.NaN
  }
}

let clockTicks: number | null = null

/** CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat; NaN off Linux. */
export async function procCpuSeconds(pid: number): Promise<number> {
  const { readFile } = await import('node:fs/promises')
  if (clockTicks === null) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100
    } catch {
      clockTicks = 100
    }
  }
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8')
    // Fields after the command name (which may hold spaces), counted from field 3: utime is 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) / clockTicks
  } catch {
    return Number.NaN
  }
}

/** bench/actor-memory.ts in a process of its own, on Node's type stripping as the server runs (decision 049). */
export function actorMemory(actors: number): Promise<Record<string, number>> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--expose-gc', 'bench/actor-memory.ts', String(actors)], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    let out = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk))
    const timer = setTimeout(() => child.kill('SIGKILL'), 300_000)
    child.once('exit', (code) => {
      clearTimeout(timer)
      if (code !== 0) return reject(new Error(`bench/actor-memory.ts exited with ${code}`))
      resolve(JSON.parse(out.trim().split('\n').at(-1)!) as Record<string, number>)
    })
  })
}
