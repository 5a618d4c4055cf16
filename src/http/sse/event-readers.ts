import { ReaderCapacityError, ReadersLimitError } from '../../domain/errors.ts'

/**
 * How many readers of runs' events (`GET /api/v1/runs/{id}/events`) this node holds open at once
 * (docs/decisions/062-bounded-event-readers.md): per run, per API key and in all. Each open stream
 * holds a socket, a file descriptor, until its run ends; past these bounds a reader is refused at
 * once, before anything is read or opened.
 */
export type ReaderLimits = { perRun: number; perKey: number; perNode: number }

/** Retry-After for a refused reader: a reader leaves when its run ends, seconds away; jittered so that the refused do not come back together. */
export const READER_RETRY_AFTER_S = { base: 2, spread: 4 }

const retryAfter = (random: () => number) => READER_RETRY_AFTER_S.base + Math.floor(random() * READER_RETRY_AFTER_S.spread)

/**
 * The open readers, counted. `admitKey` is asked first (before the run is looked up, so a refused
 * reader costs no read), `admitRun` once the run is known to be the caller's (so a count of another
 * organisation's readers never shows). Each returns the function that gives the place back, once.
 */
export function eventReaders(limits: ReaderLimits, random: () => number = Math.random) {
  let open = 0
  const byKey = new Map<string, number>()
  const byRun = new Map<string, number>()
  const bump = (counts: Map<string, number>, id: string, by: number) => {
    const n = (counts.get(id) ?? 0) + by
    if (n === 0) counts.delete(id)
    else counts.set(id, n)
  }
  return {
    get open() {
      return open
    },
    /** The node's and the key's bounds, checked and held together: throws the refusal past either. */
    admitKey(keyId: string): () => void {
      if (open >= limits.perNode) throw new ReaderCapacityError(limits.perNode, retryAfter(random))
      if ((byKey.get(keyId) ?? 0) >= limits.perKey) throw new ReadersLimitError('key_readers', limits.perKey, retryAfter(random))
      open++
      bump(byKey, keyId, 1)
      let held = true
      return () => {
        if (!held) return
        held = false
        open--
        bump(byKey, keyId, -1)
      }
    },
    /** The run's bound, checked and held: throws the refusal past it. */
    admitRun(runId: string): () => void {
      if ((byRun.get(runId) ?? 0) >= limits.perRun) throw new ReadersLimitError('run_readers', limits.perRun, retryAfter(random))
      bump(byRun, runId, 1)
      let held = true
      return () => {
        if (!held) return
        held = false
        bump(byRun, runId, -1)
      }
    },
  }
}
export type EventReaders = ReturnType<typeof eventReaders>
