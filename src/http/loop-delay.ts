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
    // The histogram holds each period between its own timer's runs, in ns. When this timer runs
    // before the histogram's after a long block, the reset drops the late period; how late this
    // timer itself ran still shows it.
    const histogramLate = histogram.count === 0 ? 0 : histogram.mean / 1e6 - RESOLUTION_MS
    const ownLate = now - lastTick - sampleMs
    ms = Math.max(0, histogramLate, ownLate)
    lastTick = now
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
