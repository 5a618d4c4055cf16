import { monitorEventLoopDelay } from 'node:perf_hooks'

/**
 * How much later than asked the event loop ran its timers over the last sample: how far one turn
 * of the loop outlasts the timer's resolution. Node 20's libuv accepts one new connection per turn
 * of the loop, so this is also how slowly the node takes new clients in
 * (docs/decisions/033-running-run-caps.md).
 */
export type LoopDelay = {
  /** The mean lateness over the last sample, in ms (0 when the loop kept up). */
  readonly ms: number
  stop(): void
}

/** Node's histogram samples with a timer of this period; it is also what an idle loop reads. */
const RESOLUTION_MS = 10

export function watchLoopDelay(sampleMs = 100): LoopDelay {
  const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS })
  histogram.enable()
  let ms = 0
  let lastTick = performance.now()
  const timer = setInterval(() => {
    const now = performance.now()
    // How late this timer ran. After a long block it may run before the histogram's timer, whose
    // late period the reset below would then drop: that period is counted here as one more sample.
    const ownLateMs = now - lastTick - sampleMs
    lastTick = now
    // The histogram holds each period between its own timer's runs, in ns.
    const seenMaxMs = histogram.count === 0 ? 0 : histogram.max / 1e6 - RESOLUTION_MS
    const lostMs = ownLateMs > seenMaxMs + RESOLUTION_MS ? ownLateMs + RESOLUTION_MS : null
    const count = histogram.count + (lostMs === null ? 0 : 1)
    const totalMs = (histogram.count === 0 ? 0 : (histogram.mean / 1e6) * histogram.count) + (lostMs ?? 0)
    ms = count === 0 ? 0 : Math.max(0, totalMs / count - RESOLUTION_MS)
    histogram.reset()
  }, sampleMs)
  timer.unref()
  return {
    get ms() {
      return ms
    },
    stop() {
      clearInterval(timer)
      histogram.disable()
    },
  }
}
