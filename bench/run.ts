/**
 * `npm run bench`: runs every benchmark of bench/, one after the other, each in its own Node process
 * (`node --expose-gc --import tsx bench/NAME.ts`), so no benchmark's heap, database or sockets weigh
 * on the next. Each writes its own section of BENCHMARKS.md.
 *
 * `npm run bench -- NAME [NAME...]` runs only those. A failed benchmark does not stop the others;
 * the exit code is non-zero if any failed.
 */
import { spawn } from 'node:child_process'
import { REPO_ROOT } from '../test/e2e/server-process.ts'

/** In the order `npm run bench` runs them. */
export const BENCHMARKS = ['foundation', 'config-resolution', 'usage-report', 'turns', 'stream-memory', 'packing', 'token-estimation', 'estimator-error', 'vendor', 'stall', 'publish', 'overload', 'cluster', 'fork', 'resume', 'shutdown'] as const
type Name = (typeof BENCHMARKS)[number]

const log = (message: string) => process.stderr.write(`bench: ${message}\n`)

function parseArgs(argv: string[]): Name[] {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`usage: npm run bench [-- NAME...]\nbenchmarks: ${BENCHMARKS.join(', ')}\n`)
    process.exit(0)
  }
  const unknown = argv.filter((a) => !(BENCHMARKS as readonly string[]).includes(a))
  if (unknown.length > 0) {
    log(`unknown benchmark ${unknown.join(', ')}; known: ${BENCHMARKS.join(', ')}`)
    process.exit(2)
  }
  return argv.length === 0 ? [...BENCHMARKS] : (argv as Name[])
}

/** The command as the user typed it, recorded in each section. */
function commandOf(argv: string[]): string {
  const viaNpm = process.env.npm_lifecycle_event === 'bench'
  const base = viaNpm ? 'npm run bench' : 'node --import tsx bench/run.ts'
  if (argv.length === 0) return base
  return viaNpm ? `${base} -- ${argv.join(' ')}` : `${base} ${argv.join(' ')}`
}

let current: ReturnType<typeof spawn> | null = null
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    // The child cleans up its own servers on SIGTERM.
    current?.kill('SIGTERM')
    process.exit(130)
  })
}

function runOne(name: Name, command: string): Promise<number | null> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', `bench/${name}.ts`], {
      cwd: REPO_ROOT,
      env: { ...process.env, BENCH_COMMAND: command },
      stdio: 'inherit',
    })
    current = child
    child.once('exit', (code, signal) => {
      current = null
      resolve(signal ? null : code)
    })
  })
}

const argv = process.argv.slice(2)
const names = parseArgs(argv)
const command = commandOf(argv)
const failed: string[] = []
for (const name of names) {
  const started = Date.now()
  log(`=== ${name} ===`)
  const code = await runOne(name, command)
  const seconds = ((Date.now() - started) / 1000).toFixed(0)
  if (code === 0) log(`=== ${name}: done in ${seconds} s ===`)
  else {
    log(`=== ${name}: FAILED (exit ${code}) after ${seconds} s ===`)
    failed.push(name)
  }
}
if (failed.length > 0) {
  log(`failed: ${failed.join(', ')}`)
  process.exit(1)
}
