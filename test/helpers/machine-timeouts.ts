import { availableParallelism, loadavg } from 'node:os'

/**
 * How long the tests wait for a process: a server to answer, the admin CLI to finish, a cluster
 * node to be ready (docs/decisions/019-test-suite-speed.md, "Under load").
 *
 * A fixed wait is right for one machine only. On a quiet 2-core machine a server answers within
 * about 2 s and the whole suite takes about 6 min; on one with a load of 14–21, servers took longer
 * than their fixed 15–25 s and 19 files failed (issue 23, item 9), although nothing was wrong with
 * them but their share of the CPU. So a wait is a base — generous for a quiet machine — times how
 * busy the machine is: the 1-minute load average per core the process may run on, clamped to
 * [MIN_SCALE, MAX_SCALE].
 *
 * - The floor (MIN_SCALE, 2) is generous on purpose: the load average lags (a CPU hog started 20 s
 *   ago shows as about a third of its load), and the suite's own workers and servers add load after
 *   a wait was computed. It only makes a failing wait report later, never a passing one fail.
 * - The ceiling (MAX_SCALE, 5) keeps a process that will never answer from holding a file for ever;
 *   at a load of 10 per core a server that answers in 2 s when quiet answers in about 20 s, well
 *   within 15 s × 5.
 * - In a container the load average is the host's while the parallelism may be the container's: the
 *   scale only comes out larger, which the ceiling bounds.
 * - PARLEY_TIMEOUT_SCALE (a number ≥ 1) replaces the measure, for a machine known to be slow.
 *
 * These are bounds on waiting, not measures: no assertion depends on them, and a wait that holds
 * on a quiet machine holds the same way on a busy one, only later.
 */
export const MIN_SCALE = 2
export const MAX_SCALE = 5

/** The base wait for a server process to answer its ready path (×scale). */
export const SERVER_START_MS = 15_000
/** The base wait for one admin CLI run (npm, tsx, the command) to finish (×scale). */
export const CLI_RUN_MS = 15_000

function scaleFromEnv(): number | null {
  const raw = process.env.PARLEY_TIMEOUT_SCALE
  if (raw === undefined || raw === '') return null
  const value = Number(raw)
  return Number.isFinite(value) && value >= 1 ? value : null
}

/** Runnable processes per core over the last minute (0 where the platform has no load average). */
export function machineBusy(): number {
  return loadavg()[0]! / Math.max(1, availableParallelism())
}

/** The factor a base wait is multiplied by now: the load per core, clamped to [MIN_SCALE, MAX_SCALE]. */
export function machineScale(): number {
  return scaleFromEnv() ?? Math.min(MAX_SCALE, Math.max(MIN_SCALE, machineBusy()))
}

/** `baseMs` (the wait a quiet machine needs, with room) scaled by how busy the machine is now. */
export function machineTimeout(baseMs: number): number {
  return Math.round(baseMs * machineScale())
}

/**
 * A vitest test or hook timeout enclosing waits of `machineTimeout`: `baseMs` (the sum of its waits'
 * bases and the rest of its work) times the largest scale a wait inside it can get. A timeout read
 * when the file is collected must not cut short a wait scaled later, when the machine may be busier;
 * scaling by the ceiling leaves room for that, and the inner wait, scaled by the load of its moment,
 * is the one that reports a process that does not answer.
 */
export function machineCeiling(baseMs: number): number {
  return Math.round(baseMs * Math.max(MAX_SCALE, scaleFromEnv() ?? 0))
}
