/**
 * Keeps a stream's relay from holding the event loop (issue 22): a burst of parts that are all ready
 * (the sandbox's `/long 40000`, a vendor's buffered chunks) would otherwise be read, reduced and
 * written in microtasks alone, and no timer, socket or other request would run until it ended.
 *
 * `pace()` is called once per part. Every `everyParts` parts, once `budgetMs` of continuous work
 * has passed since the loop last turned over, or once all streams' paced work in this turn of the
 * loop reaches `sharedBudgetMs`, it returns a promise that resolves on `setImmediate`,
 * after the loop's pending I/O and timers; otherwise it returns undefined, so `await pace()` costs a
 * microtask at most. It never reorders anything: the caller simply resumes later.
 */
export type IoPacer = () => Promise<void> | undefined

/** Parts between turns of the loop, at most. */
export const PACE_EVERY_PARTS = 256
/** Continuous work before the loop turns over, at most, in milliseconds. */
export const PACE_BUDGET_MS = 3

/**
 * Work all streams together may do in one turn of the loop before each yields, in milliseconds.
 * Node 20's libuv takes one new connection per turn of the loop, so short turns are what lets new
 * clients in while many streams run (decision 033: 2 ms brought the overload test's slowest new
 * client from about 2.7 s to about 1.2 s).
 */
export const SHARED_BUDGET_MS = 2

/**
 * When this turn of the loop's paced work began: the first pace of a turn notes it, and a
 * setImmediate forgets it as the turn ends, so every stream's work counts against one budget.
 */
const loopTurn = { armed: false, startedAt: 0 }
function pacedWorkThisTurn(now: number): number {
  if (!loopTurn.armed) {
    loopTurn.armed = true
    loopTurn.startedAt = now
    setImmediate(() => {
      loopTurn.armed = false
    })
  }
  return now - loopTurn.startedAt
}

export function createIoPacer(everyParts = PACE_EVERY_PARTS, budgetMs = PACE_BUDGET_MS, sharedBudgetMs = SHARED_BUDGET_MS): IoPacer {
  let parts = 0
  let since = performance.now()
  return () => {
    parts += 1
    const now = performance.now()
    if (parts < everyParts && now - since < budgetMs && pacedWorkThisTurn(now) < sharedBudgetMs) return undefined
    return new Promise<void>((resolve) =>
      setImmediate(() => {
        parts = 0
        since = performance.now()
        resolve()
      }),
    )
  }
}
