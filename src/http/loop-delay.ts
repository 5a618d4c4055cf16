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
  const timer = setInterval(() => {
    // The histogram holds each period between the sampling timer's runs, in ns.
    ms = histogram.count === 0 ? 0 : Math.max(0, histogram.mean / 1e6 - RESOLUTION_MS)
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
