import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'

/** Process settings from the environment, with the embedded defaults of README.md. */
export type Settings = {
  port: number
  host: string
  dataDir: string
  databaseFile: string
  logLevel: string
  production: boolean
  sandbox: boolean
  /** RATE_LIMIT_PER_MINUTE: requests a minute per API key on each node (decision 011); null: no limit. */
  rateLimitPerMinute: number | null
  /**
   * REQUEST_TIMEOUT_MS: how long a client may take to send a whole request, headers and body
   * (issue 11: slow bodies); the headers alone get at most 10 s of it. A response, such as a
   * turn's stream, is never bounded by it.
   */
  requestTimeoutMs: number
  /**
   * LiteFS (decision 009): the mount holding the database, and the file that names the primary
   * (present on replicas only). Null without LiteFS: the one process is the primary.
   */
  litefs: { dir: string; primaryFile: string; lagFile: string; primaryPort: number; positionFile: string } | null
  /**
   * SHUTDOWN_GRACE_MS: on SIGTERM or SIGINT, how long running runs may go on streaming before they
   * are stopped and settled as interrupted (docs/decisions/009-multi-node-litefs.md). Fly's
   * `kill_timeout` (fly.toml) must leave room for it and for the settlements after it.
   */
  shutdownGraceMs: number
  /**
   * MAX_RUNNING_RUNS_PER_ORG: how many customer runs one organisation may have `running` at once,
   * across all its chats and nodes (docs/decisions/033-running-run-caps.md); past it a turn answers
   * 429 `rate_limited` with Retry-After.
   */
  maxRunningRunsPerOrg: number
  /**
   * MAX_CONCURRENT_TURNS: how many turns this node serves at once, from their arrival until their
   * stream ends or the client hangs up (decision 033); past it a turn answers 503 `unavailable`
   * with Retry-After at once.
   */
  maxConcurrentTurns: number
  /**
   * SHED_LOOP_DELAY_MS and SHED_FROM_TURNS: while this node serves at least SHED_FROM_TURNS turns
   * and its event loop runs SHED_LOOP_DELAY_MS late, a new turn answers 503 `unavailable`
   * (reason `overloaded`) with Retry-After (decision 033).
   */
  shedLoopDelayMs: number
  shedFromTurns: number
  /**
   * MAX_READERS_PER_RUN, MAX_READERS_PER_KEY and MAX_EVENT_READERS: how many readers of runs' events
   * this node holds open at once, per run, per API key and in all (docs/decisions/062-bounded-event-readers.md);
   * past the first two a reader answers 429 `rate_limited`, past the third 503 `unavailable`, with
   * Retry-After. The node's bound defaults to what its open-file limit leaves beside its turns.
   */
  readerLimits: { perRun: number; perKey: number; perNode: number }
}

/** 10 s: most turns end within it; fly.toml's kill_timeout of 30 s leaves 20 s for the rest. */
export const DEFAULT_SHUTDOWN_GRACE_MS = 10_000

/** 60 s to send a request: the largest turn body (32 MiB) still fits an upload of about 4.5 Mbit/s. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000

/** 64 running runs per organisation: far more than one tenant's interactive use, far fewer than it takes to crowd a node. */
export const DEFAULT_MAX_RUNNING_RUNS_PER_ORG = 64

/** 1024 turns in flight per node: an open stream costs little memory, but not nothing (issue 22: 5,000 took 204 MiB). */
export const DEFAULT_MAX_CONCURRENT_TURNS = 1024

/** Loop delay past which a busy node sheds new turns (decision 033: the overload test's figures). */
export const DEFAULT_SHED_LOOP_DELAY_MS = 3

/** Turns in flight below which a node never sheds: a late loop then has another cause (a CPU-bound neighbour). */
export const DEFAULT_SHED_FROM_TURNS = 32

/** Readers of one run's events: a team's dashboards and tabs on a run, far from what crowds a node. */
export const DEFAULT_MAX_READERS_PER_RUN = 256

/** Event streams one API key holds: a busy client's, and a quarter of a small node's room. */
export const DEFAULT_MAX_READERS_PER_KEY = 1024

/** Event streams per node at most, whatever the open-file limit: about 10.5 KiB each, ~200 MiB in all. */
export const MAX_EVENT_READERS_CEILING = 20_000

/**
 * The node's bound on event readers when MAX_EVENT_READERS is not set: the open-file limit less what
 * the rest of the server may hold open at once, so that health answers, admissions and the turns
 * themselves always find a descriptor. Each turn in flight may hold two (its client's socket and its
 * vendor's); 256 more cover the database files of every connection, the worker threads, the
 * listening socket, health and admin requests. Never below 32, never above the ceiling.
 */
export function defaultEventReaders(openFiles: number, maxConcurrentTurns: number): number {
  const turns = 2 * Math.min(maxConcurrentTurns, Math.floor(openFiles / 4))
  return Math.min(MAX_EVENT_READERS_CEILING, Math.max(32, openFiles - turns - 256))
}

/** The reader bounds when none are configured, for a node with this process's open-file limit. */
export function defaultReaderLimits(maxConcurrentTurns: number, openFiles: number | null = readOpenFileLimit()) {
  // Without a readable limit: Linux's usual soft limit of 1024.
  return { perRun: DEFAULT_MAX_READERS_PER_RUN, perKey: DEFAULT_MAX_READERS_PER_KEY, perNode: defaultEventReaders(openFiles ?? 1024, maxConcurrentTurns) }
}

/** This process's soft limit on open files (Linux: /proc/self/limits); null where it cannot be read. */
export function readOpenFileLimit(limits = '/proc/self/limits'): number | null {
  try {
    const line = readFileSync(limits, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'))
    const soft = line?.slice('Max open files'.length).trim().split(/\s+/)[0]
    if (soft === undefined) return null
    if (soft === 'unlimited') return Number.MAX_SAFE_INTEGER
    const n = Number(soft)
    return Number.isInteger(n) && n > 0 ? n : null
  } catch {
    return null
  }
}

/** A positive whole number from the environment, or `fallback` when unset or empty. */
function positiveInteger(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} must be a positive whole number, got ${raw}`)
  return value
}

export function readSettings(env: NodeJS.ProcessEnv = process.env, openFiles: number | null = readOpenFileLimit()): Settings {
  const production = env.NODE_ENV === 'production'
  const dataDir = resolve(env.DATA_DIR ?? './data')
  const port = Number(env.PORT ?? 8080)
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`PORT must be a port number, got ${env.PORT}`)
  const sandbox = (env.SANDBOX ?? (production ? 'off' : 'on')) === 'on'
  const rateLimit = env.RATE_LIMIT_PER_MINUTE === undefined || env.RATE_LIMIT_PER_MINUTE === '' ? null : Number(env.RATE_LIMIT_PER_MINUTE)
  if (rateLimit !== null && (!Number.isInteger(rateLimit) || rateLimit <= 0)) {
    throw new Error(`RATE_LIMIT_PER_MINUTE must be a positive whole number, got ${env.RATE_LIMIT_PER_MINUTE}`)
  }
  const requestTimeoutMs = env.REQUEST_TIMEOUT_MS === undefined || env.REQUEST_TIMEOUT_MS === '' ? DEFAULT_REQUEST_TIMEOUT_MS : Number(env.REQUEST_TIMEOUT_MS)
  if (!Number.isInteger(requestTimeoutMs) || requestTimeoutMs <= 0) {
    throw new Error(`REQUEST_TIMEOUT_MS must be a positive whole number of milliseconds, got ${env.REQUEST_TIMEOUT_MS}`)
  }
  const shutdownGraceMs = env.SHUTDOWN_GRACE_MS === undefined || env.SHUTDOWN_GRACE_MS === '' ? DEFAULT_SHUTDOWN_GRACE_MS : Number(env.SHUTDOWN_GRACE_MS)
  if (!Number.isInteger(shutdownGraceMs) || shutdownGraceMs < 0) {
    throw new Error(`SHUTDOWN_GRACE_MS must be a whole number of milliseconds, got ${env.SHUTDOWN_GRACE_MS}`)
  }
  const litefsDir = env.LITEFS_DIR ? resolve(env.LITEFS_DIR) : null
  const primaryPort = Number(env.LITEFS_PRIMARY_PORT ?? port)
  if (!Number.isInteger(primaryPort) || primaryPort <= 0 || primaryPort > 65535) {
    throw new Error(`LITEFS_PRIMARY_PORT must be a port number, got ${env.LITEFS_PRIMARY_PORT}`)
  }
  const maxConcurrentTurns = positiveInteger(env, 'MAX_CONCURRENT_TURNS', DEFAULT_MAX_CONCURRENT_TURNS)
  const readerDefaults = defaultReaderLimits(maxConcurrentTurns, openFiles)
  return {
    port,
    host: env.HOST ?? '127.0.0.1',
    dataDir,
    databaseFile: resolve(litefsDir ?? dataDir, 'parley.db'),
    logLevel: env.LOG_LEVEL ?? 'info',
    production,
    sandbox,
    rateLimitPerMinute: rateLimit,
    requestTimeoutMs,
    shutdownGraceMs,
    maxRunningRunsPerOrg: positiveInteger(env, 'MAX_RUNNING_RUNS_PER_ORG', DEFAULT_MAX_RUNNING_RUNS_PER_ORG),
    maxConcurrentTurns,
    readerLimits: {
      perRun: positiveInteger(env, 'MAX_READERS_PER_RUN', readerDefaults.perRun),
      perKey: positiveInteger(env, 'MAX_READERS_PER_KEY', readerDefaults.perKey),
      perNode: positiveInteger(env, 'MAX_EVENT_READERS', readerDefaults.perNode),
    },
    shedLoopDelayMs: positiveInteger(env, 'SHED_LOOP_DELAY_MS', DEFAULT_SHED_LOOP_DELAY_MS),
    shedFromTurns: positiveInteger(env, 'SHED_FROM_TURNS', DEFAULT_SHED_FROM_TURNS),
    litefs: litefsDir
      ? {
          dir: litefsDir,
          primaryFile: resolve(env.LITEFS_PRIMARY_FILE ?? resolve(litefsDir, '.primary')),
          lagFile: resolve(env.LITEFS_LAG_FILE ?? resolve(litefsDir, '.lag')),
          primaryPort,
          positionFile: resolve(env.LITEFS_POSITION_FILE ?? resolve(litefsDir, 'parley.db-pos')),
        }
      : null,
  }
}
