import { rebuildRunFrames } from '../../actors/replay-run.ts'
import type { RunEvent, RunEventSource } from '../../actors/run-channel.ts'
import type { PartRow } from '../../store/parts.ts'
import type { RunRow } from '../../store/runs.ts'
import { storageStall } from '../../store/storage-stall.ts'

/** How often a reader of a run that runs elsewhere (another node, or none since a restart) reads its copy again. */
export const LEDGER_POLL_MS = 200

/**
 * A run's frames rebuilt from this node's copy of the ledger (decision 038). An ended run's are
 * all there at once. A run still running with no channel here (relayed to another node, or left
 * by a node that stopped) is read again every LEDGER_POLL_MS while a reader waits: each block comes
 * once it is persisted, whole, and the terminal frame once the run is settled (by its node, or as
 * interrupted by the sweep).
 */
export function ledgerFrames(read: () => { run: RunRow; parts: PartRow[] } | null): RunEventSource {
  let frames: Extract<RunEvent, { type: 'frame' }>[] = []
  let ended = false
  const refresh = () => {
    const now = read()
    if (now === null) {
      ended = true
      return
    }
    const rebuilt = rebuildRunFrames(now.run, now.parts)
    const last = frames.at(-1)?.frame.seq ?? 0
    frames = [...frames, ...rebuilt.filter((f) => f.seq > last).map((frame) => ({ type: 'frame' as const, frame }))]
    ended = now.run.status !== 'running'
  }
  refresh()
  // One timer however many readers wait: each is woken when frames arrive or the run ends.
  const waiting = new Set<() => void>()
  let timer: NodeJS.Timeout | null = null
  const poll = () => {
    // The ledger is read on the event loop: not while litefs does not answer (decision 048).
    if (storageStall.stalled()) return
    const before = frames.length
    refresh()
    const woken = frames.length > before || ended
    if (ended || waiting.size === 0) stopPolling()
    if (woken) for (const wake of [...waiting]) wake()
  }
  const stopPolling = () => {
    if (timer) clearInterval(timer)
    timer = null
  }
  return {
    at: (index) => frames[index],
    get size() {
      return frames.length
    },
    get hasEnded() {
      return ended
    },
    wake(wake) {
      if (ended) return () => {}
      waiting.add(wake)
      timer ??= setInterval(poll, LEDGER_POLL_MS)
      return () => {
        waiting.delete(wake)
        if (waiting.size === 0) stopPolling()
      }
    },
  }
}

/**
 * The rebuilt streams readers are reading now, one per run (issue 24: memory bounded per run,
 * whatever the number of readers): a second reader of a run joins the first's frames rather than
 * rebuilding its own, and the frames go when the last reader does.
 */
export function ledgerFrameSources() {
  const open = new Map<string, { source: RunEventSource; readers: number }>()
  return {
    /** The run's shared source; call `release` once the reader is done with it. */
    acquire(runId: string, read: () => { run: RunRow; parts: PartRow[] } | null): { source: RunEventSource; release: () => void } {
      let entry = open.get(runId)
      if (!entry) {
        entry = { source: ledgerFrames(read), readers: 0 }
        open.set(runId, entry)
      }
      entry.readers++
      const held = entry
      let released = false
      return {
        source: held.source,
        release: () => {
          if (released) return
          released = true
          held.readers--
          if (held.readers === 0 && open.get(runId) === held) open.delete(runId)
        },
      }
    },
    /** Runs whose rebuilt frames are held (for tests of the bound). */
    get size() {
      return open.size
    },
  }
}
