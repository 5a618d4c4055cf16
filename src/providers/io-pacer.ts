/**
 * Keeps a stream's relay from holding the event loop (issue 22): a burst of parts that are all ready
 * (the sandbox's `/long 40000`, a vendor's buffered chunks) would otherwise be read, reduced and
 * written in microtasks alone, and no timer, socket or other request would run until it ended.
 *
 * `pace()` is called once per part. Every `everyParts` parts, or once `budgetMs` of continuous work
 * has passed since the loop last turned over, it returns a promise that resolves on `setImmediate`,
 * after the loop's pending I/O and timers; otherwise it returns undefined, so `await pace()` costs a
 * microtask at most. It never reorders anything: the caller simply resumes later.
 */
export type IoPacer = () => Promise<void> | undefined

/** Parts between turns of the loop, at most. */
export const PACE_EVERY_PARTS = 256
/** Continuous work before the loop turns over, at most, in milliseconds. */
export const PACE_BUDGET_MS = 3

export function createIoPacer(everyParts = PACE_EVERY_PARTS, budgetMs = PACE_BUDGET_MS): IoPacer {
  let parts = 0
  let since = performance.now()
  return () => {
    parts += 1
    if (parts < everyParts && performance.now() - since < budgetMs) return undefined
    return new Promise<void>((resolve) =>
      setImmediate(() => {
        parts = 0
        since = performance.now()
        resolve()
      }),
    )
  }
}
