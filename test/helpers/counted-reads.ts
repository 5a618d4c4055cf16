/**
 * Work on a JSON value, counted rather than timed (issue 36: no test asserts wall-clock time).
 * `countedReads(value, budget)` gives the value behind proxies that count every read of it and of
 * everything reached through it (a property, its keys, whether it has one), and throw once the
 * reads pass `budget`: a walk that visits the value exponentially often (Ajv's inlining check
 * visits each nested array twice per level, 2^depth) fails at once instead of never returning.
 * The value reads as the value: proxies of arrays are arrays, and one object always gets the same proxy.
 */

export type ReadTally = { reads: number; nodes: number; budget: number }

const tally: ReadTally = { reads: 0, nodes: 0, budget: Infinity }

/** Objects, arrays and other values in `value`, each counted once. */
export function nodesOf(value: unknown): number {
  let nodes = 0
  const stack: unknown[] = [value]
  while (stack.length > 0) {
    const v = stack.pop()
    nodes++
    if (v !== null && typeof v === 'object') stack.push(...Object.values(v))
  }
  return nodes
}

class ReadBudgetExceeded extends Error {
  constructor() {
    super(`over ${tally.budget} reads of a value of ${tally.nodes} nodes: the walk is not linear in its size`)
    this.name = 'ReadBudgetExceeded'
  }
}

function count(): void {
  if (++tally.reads > tally.budget) throw new ReadBudgetExceeded()
}

/** `value` with every read counted from zero, against a budget of `readsPerNode` reads a node of it. */
export function countedReads<T>(value: T, readsPerNode: number): T {
  const proxies = new WeakMap<object, object>()
  const wrap = (v: unknown): unknown => {
    if (v === null || typeof v !== 'object') return v
    let proxy = proxies.get(v)
    if (!proxy) {
      proxy = new Proxy(v, {
        get(target, key, receiver) {
          count()
          return wrap(Reflect.get(target, key, receiver))
        },
        has(target, key) {
          count()
          return Reflect.has(target, key)
        },
        ownKeys(target) {
          count()
          return Reflect.ownKeys(target)
        },
        getOwnPropertyDescriptor(target, key) {
          count()
          return Reflect.getOwnPropertyDescriptor(target, key)
        },
      })
      proxies.set(v, proxy)
    }
    return proxy
  }
  tally.nodes = nodesOf(value)
  tally.budget = readsPerNode * tally.nodes
  tally.reads = 0
  return wrap(value) as T
}

/** The reads of the last value given to `countedReads`, so far. */
export function readTally(): ReadTally {
  return { ...tally }
}
