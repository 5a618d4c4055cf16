import { rebuildRunFrames } from '../../actors/replay-run.ts'
import type { RunFrame } from '../../actors/run-channel.ts'
import type { PartRow } from '../../store/parts.ts'
import type { RunRow } from '../../store/runs.ts'
import type { FrameSource } from './write-run-stream.ts'

/** How often a reader of a run that runs elsewhere (another node, or none since a restart) reads its copy again. */
export const LEDGER_POLL_MS = 200

/**
 * A run's frames rebuilt from this node's copy of the ledger (decision 038). An ended run's are
 * all there at once. A run still running with no channel here (relayed to another node, or left
 * by a node that stopped) is read again every LEDGER_POLL_MS while a reader waits: each block comes
 * once it is persisted, whole, and the terminal frame once the run is settled (by its node, or as
 * interrupted by the sweep).
 */
export function ledgerFrames(read: () => { run: RunRow; parts: PartRow[] } | null): FrameSource {
  let frames: RunFrame[] = []
  let ended = false
  const refresh = () => {
    const now = read()
    if (now === null) {
      ended = true
      return
    }
    const rebuilt = rebuildRunFrames(now.run, now.parts)
    const last = frames.at(-1)?.seq ?? 0
    frames = [...frames, ...rebuilt.filter((f) => f.seq > last)]
    ended = now.run.status !== 'running'
  }
  refresh()
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
      const timer = setInterval(() => {
        const before = frames.length
        refresh()
        if (ended) clearInterval(timer)
        if (frames.length > before || ended) wake()
      }, LEDGER_POLL_MS)
      return () => clearInterval(timer)
    },
  }
}
