import { spawn, type ChildProcess } from 'node:child_process'
import { createServer } from 'node:net'
import { fileURLToPath } from 'node:url'
import { CLI_RUN_MS, machineTimeout, SERVER_START_MS } from '../helpers/machine-timeouts.ts'

/**
 * Under vitest, the responses of every server started here are recorded by the child and checked
 * against its /openapi.json after the test file (test/helpers/contract-check.ts); benchmarks
 * import this module too, without vitest, and record nothing.
 */
const contract = process.env.VITEST ? await import('../helpers/contract-check.ts') : null

/** The repository root: the working directory of every child process started here. */
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url))

/** A port that was free a moment ago: listen on port 0, read the port, close. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.unref()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      if (address === null || typeof address === 'string') {
        server.close()
        reject(new Error('no port assigned'))
        return
      }
      server.close(() => resolve(address.port))
    })
  })
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Polls `check` until it returns something other than undefined/false, or fails after `timeoutMs`. */
export async function waitFor<T>(
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 10_000,
  intervalMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let lastError: unknown
  for (;;) {
    try {
      const value = await check()
      if (value !== undefined && value !== false) return value
    } catch (error) {
      lastError = error
    }
    if (Date.now() > deadline) {
      const cause = lastError instanceof Error ? ` (last error: ${lastError.message})` : ''
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${cause}`)
    }
    await sleep(intervalMs)
  }
}

/** Every child started here and not yet stopped, so a runner can kill them on its way out. */
const live = new Set<ChildProcess>()

/** Kills (SIGKILL) every child still running; synchronous, so it is safe in a process 'exit' handler. */
export function killAllChildren(): void {
  for (const child of live) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  }
  live.clear()
}

export type ServerProcess = {
  url: string
  port: number
  child: ChildProcess
  /** Everything the process wrote so far. */
  stdout: () => string
  stderr: () => string
  /** SIGTERM, then SIGKILL if it has not exited within `graceMs`. Resolves with the exit code (null if killed by a signal). */
  stop: (graceMs?: number) => Promise<number | null>
}

export type StartOptions = {
  /** Node arguments; defaults to the real server as `npm start` runs it (`node src/main.ts`: Node's own type stripping, decision 049). */
  args?: string[]
  env?: Record<string, string | undefined>
  /** Path answering 2xx once the server is ready. */
  readyPath?: string
  /** A command the server is started under, e.g. `['prlimit', '--nofile=5000:5000']` (it execs node in the same process). */
  prefix?: string[]
  /**
   * The wait for the ready path on a quiet machine (default SERVER_START_MS); startServer scales it
   * by how busy the machine is (test/helpers/machine-timeouts.ts).
   */
  timeoutMs?: number
}

/** Spawns a server on a free port and resolves once GET `readyPath` answers, within `timeoutMs` scaled. */
export async function startServer(options: StartOptions = {}): Promise<ServerProcess> {
  const timeoutMs = machineTimeout(options.timeoutMs ?? SERVER_START_MS)
  // One ready request's own bound: a busy machine may take longer than a second to answer one.
  const pollMs = machineTimeout(1_000)
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  // A stopped server's running runs get 1 s (not 10 s) before they are interrupted, within stop()'s grace.
  const env: NodeJS.ProcessEnv = { ...process.env, HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'warn', SHUTDOWN_GRACE_MS: '1000' }
  // Vitest sets NODE_ENV=test; the child decides for itself unless told.
  delete env.NODE_ENV
  for (const [name, value] of Object.entries(options.env ?? {})) {
    if (value === undefined) delete env[name]
    else env[name] = value
  }
  let args = options.args ?? ['src/main.ts']
  const server = args.indexOf('src/main.ts')
  const contractLog = contract?.contractCheckEnabled && server >= 0 ? contract.newLogFile() : null
  if (contractLog !== null) {
    env.PARLEY_CONTRACT_LOG = contractLog
    args = [...args.slice(0, server), '--import', contract!.RECORDER_PATH, ...args.slice(server)]
  }
  const [command, ...commandArgs] = [...(options.prefix ?? []), process.execPath, ...args]
  const child = spawn(command!, commandArgs, {
    cwd: REPO_ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  live.add(child)
  let out = ''
  let err = ''
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (out += chunk))
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (err += chunk))
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => {
      live.delete(child)
      resolve(code)
    })
  })
  const running = () => child.exitCode === null && child.signalCode === null

  const stop = async (graceMs = machineTimeout(5_000)) => {
    if (running()) {
      child.kill('SIGTERM')
      const timer = setTimeout(() => running() && child.kill('SIGKILL'), graceMs)
      const code = await exited
      clearTimeout(timer)
      return code
    }
    return exited
  }

  try {
    await waitFor(
      `${url}${options.readyPath ?? '/'} to answer`,
      async () => {
        if (!running()) throw new Error(`server exited with ${child.exitCode ?? child.signalCode}: ${err.trim()}`)
        const response = await fetch(`${url}${options.readyPath ?? '/'}`, { signal: AbortSignal.timeout(pollMs) })
        await response.arrayBuffer()
        return response.ok
      },
      timeoutMs,
      100,
    )
  } catch (error) {
    await stop(1_000)
    throw new Error(`${(error as Error).message}\nstdout: ${out}\nstderr: ${err}`)
  }
  if (contractLog !== null) {
    const document = await fetch(`${url}/openapi.json`, { signal: AbortSignal.timeout(machineTimeout(10_000)) })
    contract!.setLogDocument(contractLog, await document.text())
  }
  return { url, port, child, stdout: () => out, stderr: () => err, stop }
}

export type CliResult = { code: number | null; stdout: string; stderr: string }

/**
 * Runs `npm run -s admin -- ...args` against `dataDir` (and `extraEnv`), bounded by `baseMs` (the
 * bound on a quiet machine, default CLI_RUN_MS) scaled by how busy the machine is.
 */
export function runAdmin(dataDir: string, args: string[], baseMs = CLI_RUN_MS, extraEnv: Record<string, string> = {}): Promise<CliResult> {
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, ...extraEnv }
  delete env.NODE_ENV
  return runCommand('npm', ['run', '-s', 'admin', '--', ...args], { cwd: REPO_ROOT, env, timeoutMs: machineTimeout(baseMs) })
}

/** Runs a command to its end and collects its output; past `timeoutMs` it is killed and the promise rejects. */
export function runCommand(command: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs: number }): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`${command} ${args.join(' ')} did not finish within ${options.timeoutMs} ms; stderr: ${stderr}`))
    }, options.timeoutMs)
    child.once('error', (error) => {
      clearTimeout(timer)
      reject(error)
    })
    child.once('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })
}
