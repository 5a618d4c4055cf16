/**
 * Block cutting (decisions §5.3 `summarize`): the ledger cut into contiguous, sealed ranges of at
 * least BLOCK_TOKENS estimated tokens that never split a tool call from its result, nor a reasoning
 * part from the call it led to, and whose boundaries depend on the ledger alone.
 */
import fc from 'fast-check'
import { describe, expect, it, test } from 'vitest'
import { BLOCK_TOKENS, BlockIndex, blockKey, type Block } from '../../../src/domain/context/cut-blocks.ts'
import type { PackingHistory } from '../../../src/domain/context/packing-history.ts'
import type { PartBody } from '../../../src/domain/parts.ts'
import { Ledger, call, message, prompt, reasoning, result } from './context-fixtures.ts'

/** A part whose estimate is chosen: the body only matters for its kind and tool_use_id. */
type Spec = { ordinal: number; body: PartBody; tokens: number; runId?: string }

const ledgerOf = (specs: Spec[]) => {
  const ledger = new Ledger()
  for (const s of specs) ledger.add(s.ordinal, s.body, { tokens: s.tokens, runId: s.runId ?? null })
  return ledger
}

const P = (ordinal: number, tokens: number, runId?: string): Spec => ({ ordinal, body: prompt('p'), tokens, ...(runId ? { runId } : {}) })
const M = (ordinal: number, tokens: number, runId: string): Spec => ({ ordinal, body: message('m'), tokens, runId })
const R = (ordinal: number, tokens: number, runId: string): Spec => ({ ordinal, body: reasoning('r'), tokens, runId })
const C = (ordinal: number, id: string, tokens: number, runId: string): Spec => ({ ordinal, body: call(id, 'search', '{}'), tokens, runId })
const T = (ordinal: number, id: string, tokens: number, runId: string): Spec => ({ ordinal, body: result(id, 'search', 'r'), tokens, runId })

/** [start, end) pairs of the sealed blocks. */
const ranges = (blocks: readonly Block[]) => blocks.map((b) => [b.start, b.end])

describe('BlockIndex.extend', () => {
  it('cuts contiguous blocks from entry 0, each closing at the first boundary with at least BLOCK_TOKENS', () => {
    expect(BLOCK_TOKENS).toBe(1024)
    // Ordinals with gaps; tokens 600+500 | 300+800 | 1024 | 10+2000 | 5 (unsealed).
    const tokens = [600, 500, 300, 800, 1024, 10, 2000, 5]
    const ordinals = [1, 2, 3, 5, 8, 13, 21, 34]
    const ledger = ledgerOf(tokens.map((t, i) => P(ordinals[i]!, t)))
    const blocks = new BlockIndex().extend(ledger.history, ledger.history.length)
    expect(blocks).toEqual([
      { start: 0, end: 2, firstOrdinal: 1, lastOrdinal: 2, parts: 2, tokens: 1100 },
      { start: 2, end: 4, firstOrdinal: 3, lastOrdinal: 5, parts: 2, tokens: 1100 },
      { start: 4, end: 5, firstOrdinal: 8, lastOrdinal: 8, parts: 1, tokens: 1024 },
      { start: 5, end: 7, firstOrdinal: 13, lastOrdinal: 21, parts: 2, tokens: 2010 },
    ])
    expect(blocks.map(blockKey)).toEqual(['1-2', '3-5', '8-8', '13-21'])
  })

  it('1023 tokens do not seal a block; the next part does, whatever its size', () => {
    const ledger = ledgerOf([P(1, 1023), P(2, 0), P(3, 1), P(4, 7)])
    // 1023, then +0 = 1023, then +1 = 1024: closes before ordinal 4.
    expect(ranges(new BlockIndex().extend(ledger.history, 4))).toEqual([[0, 3]])
  })

  it('the last block may end at the end of the history (the next entry is a new run input)', () => {
    const ledger = ledgerOf([P(1, 100, 'a'), M(2, 924, 'a')])
    expect(ranges(new BlockIndex().extend(ledger.history, 2))).toEqual([[0, 2]])
    // Under the threshold at the end: nothing sealed.
    const short = ledgerOf([P(1, 100, 'a'), M(2, 923, 'a')])
    expect(new BlockIndex().extend(short.history, 2)).toEqual([])
  })

  it('an empty history has no blocks', () => {
    expect(new BlockIndex().extend(new Ledger().history, 0)).toEqual([])
    expect(new BlockIndex().extend(new Ledger().history, 10)).toEqual([])
  })

  it('never ends between a tool call and its result', () => {
    // 1000 + 30 = 1030 after the call: the block would close there but for the result after it.
    const ledger = ledgerOf([P(1, 1000, 'a'), C(2, 'x', 30, 'a'), T(3, 'x', 30, 'b'), P(4, 10, 'b'), M(5, 1100, 'b')])
    expect(ranges(new BlockIndex().extend(ledger.history, 5))).toEqual([[0, 3], [3, 5]])
  })

  it('parallel calls and results in any order stay in one block', () => {
    // Calls x, y, z; results z, x, y. Every position from the first call to the last result is inside a unit.
    const ledger = ledgerOf([
      P(1, 1000, 'a'),
      C(2, 'x', 30, 'a'),
      C(3, 'y', 30, 'a'),
      C(4, 'z', 30, 'a'),
      T(5, 'z', 30, 'b'),
      T(6, 'x', 30, 'b'),
      T(7, 'y', 30, 'b'),
      M(8, 1024, 'b'),
    ])
    const blocks = new BlockIndex().extend(ledger.history, 8)
    expect(blocks).toEqual([
      { start: 0, end: 7, firstOrdinal: 1, lastOrdinal: 7, parts: 7, tokens: 1180 },
      { start: 7, end: 8, firstOrdinal: 8, lastOrdinal: 8, parts: 1, tokens: 1024 },
    ])
  })

  it('a block may close between two complete call/result units', () => {
    const ledger = ledgerOf([C(1, 'x', 600, 'a'), T(2, 'x', 600, 'b'), C(3, 'y', 600, 'b'), T(4, 'y', 600, 'c')])
    expect(ranges(new BlockIndex().extend(ledger.history, 4))).toEqual([[0, 2], [2, 4]])
  })

  it('never ends between a reasoning part and the call it led to (messages between them included)', () => {
    // reasoning, message, call of run a: positions 2 and 3 (before the message, before the call) are inside.
    const ledger = ledgerOf([P(1, 1000, 'a'), R(2, 10, 'a'), M(3, 20, 'a'), C(4, 'x', 10, 'a'), T(5, 'x', 10, 'b')])
    // 1000 | +10 = 1010 (<1024) | +20 = 1030 but before the call | +10 before the result | end.
    expect(ranges(new BlockIndex().extend(ledger.history, 5))).toEqual([[0, 5]])
    // The same sizes without the reasoning: a message may begin a range, so the block closes before the call.
    const plain = ledgerOf([P(1, 1000, 'a'), M(2, 10, 'a'), M(3, 20, 'a'), C(4, 'x', 10, 'a'), T(5, 'x', 10, 'b')])
    expect(ranges(new BlockIndex().extend(plain.history, 5))).toEqual([[0, 3]])
  })

  it('reasoning of an earlier run does not join a later run’s call', () => {
    const ledger = ledgerOf([P(1, 1000, 'a'), R(2, 30, 'a'), C(3, 'x', 10, 'b'), T(4, 'x', 10, 'c')])
    // 1030 before run b's call: a may-begin position, nothing open (the rest, 20 tokens, stays unsealed).
    expect(ranges(new BlockIndex().extend(ledger.history, 4))).toEqual([[0, 2]])
  })

  it('never ends after a call whose result has not arrived; seals once it has', () => {
    // Run a ended with a call and a message after it: the history ends there, the call still open.
    const ledger = ledgerOf([C(1, 'x', 600, 'a'), M(2, 600, 'a')])
    const index = new BlockIndex()
    // At the end (1200 tokens), and before the message (600, under the threshold): nothing sealed.
    expect(index.extend(ledger.history, 2)).toEqual([])
    // The next run's input answers it: the result joins call, message and result.
    ledger.add(3, result('x', 'search', 'r'), { tokens: 5, runId: 'b' })
    expect(ledger.history.canStart).toEqual([true, false, false])
    expect(ranges(index.extend(ledger.history, 3))).toEqual([[0, 3]])
  })

  it('an open call blocks a boundary even where a kept range may begin', () => {
    // The next run starts with a prompt while call x has no result yet (it is answered later).
    const ledger = ledgerOf([C(1, 'x', 600, 'a'), M(2, 600, 'a'), P(3, 10, 'b')])
    expect(ledger.history.canStart[2]).toBe(true)
    const index = new BlockIndex()
    expect(index.extend(ledger.history, 3)).toEqual([])
    ledger.add(4, result('x', 'search', 'late'), { tokens: 5, runId: 'b' })
    // Had a block closed before the prompt, the call and its result would now be split.
    expect(ranges(index.extend(ledger.history, 4))).toEqual([[0, 4]])
  })

  it('blocks end only at or before the limit (the current exchange)', () => {
    const ledger = ledgerOf([P(1, 600, 'a'), M(2, 600, 'a'), P(3, 600, 'b'), M(4, 600, 'b')])
    const index = new BlockIndex()
    expect(index.extend(ledger.history, 0)).toEqual([])
    expect(index.extend(ledger.history, 1)).toEqual([])
    // Exactly at the limit.
    expect(ranges(index.extend(ledger.history, 2))).toEqual([[0, 2]])
    expect(ranges(index.extend(ledger.history, 3))).toEqual([[0, 2]])
    expect(ranges(index.extend(ledger.history, 4))).toEqual([[0, 2], [2, 4]])
    // A limit past the end is the end.
    expect(ranges(new BlockIndex().extend(ledger.history, 99))).toEqual([[0, 2], [2, 4]])
  })

  it('extending returns the same list, growing: a sealed block object never changes', () => {
    const ledger = ledgerOf([P(1, 1024, 'a')])
    const index = new BlockIndex()
    const first = index.extend(ledger.history, 1)
    const sealed = first[0]!
    const copy = { ...sealed }
    ledger.add(2, message('m'), { tokens: 2000, runId: 'b' })
    const second = index.extend(ledger.history, 2)
    expect(second).toBe(first)
    expect(second[0]).toBe(sealed)
    expect(sealed).toEqual(copy)
    expect(ranges(second)).toEqual([[0, 1], [1, 2]])
  })

  it('truncate forgets the blocks reaching past a cut, and cutting again matches a fresh index', () => {
    const ledger = ledgerOf([P(1, 1024, 'a'), M(2, 1024, 'a'), P(3, 1024, 'b'), M(4, 1024, 'b')])
    const index = new BlockIndex()
    expect(ranges(index.extend(ledger.history, 4))).toEqual([[0, 1], [1, 2], [2, 3], [3, 4]])
    ledger.history.truncate(2)
    index.truncate(2)
    expect(ranges(index.blocks)).toEqual([[0, 1], [1, 2]])
    ledger.add(3, message('m'), { tokens: 500, runId: 'c' }).add(4, message('m'), { tokens: 600, runId: 'c' })
    expect(index.extend(ledger.history, 4)).toEqual(new BlockIndex().extend(ledger.history, 4))
    expect(ranges(index.blocks)).toEqual([[0, 1], [1, 2], [2, 4]])
  })
})

// ---------------------------------------------------------------------------------------------
// Property: boundaries depend on the ledger alone
// ---------------------------------------------------------------------------------------------

type OutSpec = { kind: 'reasoning' | 'message' | 'call'; tokens: number }
type RunSpec = { prompt: number | null; results: { tokens: number; order: number }[]; outputs: OutSpec[] }

const arbTokens = fc.oneof({ weight: 6, arbitrary: fc.integer({ min: 0, max: 500 }) }, { weight: 1, arbitrary: fc.integer({ min: 500, max: 2500 }) })
const arbRun: fc.Arbitrary<RunSpec> = fc.record({
  prompt: fc.option(arbTokens, { nil: null, freq: 4 }),
  results: fc.array(fc.record({ tokens: arbTokens, order: fc.integer({ min: 0, max: 9 }) }), { maxLength: 4 }),
  outputs: fc.array(fc.record({ kind: fc.constantFrom('reasoning' as const, 'message' as const, 'call' as const), tokens: arbTokens }), { maxLength: 5 }),
})

type Entry = { ordinal: number; body: PartBody; tokens: number; runId: string }

/** Runs one after the other; each run's input answers every call of the run before (in a random order). */
function assemble(runs: RunSpec[], gaps: number[]): Entry[] {
  const entries: Entry[] = []
  let ordinal = 0
  let calls = 0
  let pending: string[] = []
  const push = (runId: string, body: PartBody, tokens: number) => {
    ordinal += gaps[entries.length % gaps.length]!
    entries.push({ ordinal, body, tokens, runId })
  }
  runs.forEach((run, r) => {
    const runId = `run${r}`
    const answers = pending.map((id, k) => ({ id, tokens: run.results[k]?.tokens ?? 3, order: run.results[k]?.order ?? -1 })).sort((a, b) => a.order - b.order)
    for (const a of answers) push(runId, result(a.id, 'search', 'r'), a.tokens)
    if (run.prompt !== null) push(runId, prompt('p'), run.prompt)
    pending = []
    for (const out of run.outputs) {
      if (out.kind === 'reasoning') push(runId, reasoning('r'), out.tokens)
      else if (out.kind === 'message') push(runId, message('m'), out.tokens)
      else {
        const id = `c${++calls}`
        push(runId, call(id, 'search', '{}'), out.tokens)
        pending.push(id)
      }
    }
  })
  return entries
}

/** Where the current exchange begins when the last run of `history` is still in progress (as pack-context finds it). */
function currentStartOf(history: PackingHistory, runId: string): number {
  let start = history.firstIndexOfRun(runId)
  while (start > 0 && start < history.length && !history.canStart[start]) start--
  return start
}

/**
 * The blocks the rules give, worked out from the ledger itself (not from PackingHistory.canStart):
 * greedy from entry 0, a block closes at the first e <= limit with at least BLOCK_TOKENS where every
 * call before e has its result before e and no reasoning→call link crosses e.
 */
function referenceBlocks(entries: readonly Entry[], limit: number): [number, number][] {
  const n = entries.length
  const resultAt = new Map<string, number>()
  entries.forEach((e, i) => {
    if (e.body.type === 'tool_result') resultAt.set(e.body.tool_use_id, i)
  })
  const links: [number, number][] = []
  entries.forEach((e, i) => {
    if (e.body.type !== 'tool_call') return
    let lead = -1
    for (let j = i - 1; j >= 0; j--) {
      const b = entries[j]!
      if (b.runId !== e.runId || (b.body.type !== 'reasoning' && b.body.type !== 'message' && b.body.type !== 'tool_call')) break
      if (b.body.type === 'reasoning') lead = j
    }
    if (lead !== -1) links.push([lead, i])
  })
  const mayEnd = (e: number) => {
    for (let i = 0; i < e; i++) {
      const body = entries[i]!.body
      if (body.type === 'tool_call') {
        const at = resultAt.get(body.tool_use_id)
        if (at === undefined || at >= e) return false
      }
    }
    return !links.some(([a, b]) => a < e && e <= b)
  }
  const blocks: [number, number][] = []
  let start = 0
  let tokens = 0
  for (let e = 1; e <= Math.min(limit, n); e++) {
    tokens += entries[e - 1]!.tokens
    if (tokens >= BLOCK_TOKENS && mayEnd(e)) {
      blocks.push([start, e])
      start = e
      tokens = 0
    }
  }
  return blocks
}

function checkBlocks(blocks: readonly Block[], entries: readonly Entry[], limit: number) {
  let expectedStart = 0
  for (const b of blocks) {
    expect(b.start).toBe(expectedStart)
    expect(b.end).toBeGreaterThan(b.start)
    expect(b.end).toBeLessThanOrEqual(limit)
    expect(b.parts).toBe(b.end - b.start)
    expect(b.firstOrdinal).toBe(entries[b.start]!.ordinal)
    expect(b.lastOrdinal).toBe(entries[b.end - 1]!.ordinal)
    const sum = entries.slice(b.start, b.end).reduce((s, e) => s + e.tokens, 0)
    expect(b.tokens).toBe(sum)
    expect(b.tokens).toBeGreaterThanOrEqual(BLOCK_TOKENS)
    expectedStart = b.end
  }
}

const RUNS = Number(process.env.FC_RUNS ?? 200)

describe('BlockIndex, property-based', () => {
  test('growing the history never changes a sealed block, and a fresh index over the grown history cuts the same blocks', () => {
    fc.assert(
      fc.property(
        fc.array(arbRun, { maxLength: 14 }),
        fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 1, maxLength: 5 }),
        // Where the history is looked at while it grows (entry counts), and whether its last run had settled then.
        fc.array(fc.record({ at: fc.nat(), settled: fc.boolean() }), { maxLength: 8 }),
        (runs, gaps, looks) => {
          const entries = assemble(runs, gaps)
          const n = entries.length
          // One look per entry count (the first drawn), in order; the last at the end, settled.
          const byAt = new Map<number, boolean>()
          for (const l of looks) if (!byAt.has(l.at % (n + 1))) byAt.set(l.at % (n + 1), l.settled)
          const points = [...byAt].map(([at, settled]) => ({ at, settled })).sort((a, b) => a.at - b.at)
          points.push({ at: n, settled: true })

          const ledger = new Ledger()
          const index = new BlockIndex()
          const seen: Block[] = []
          const sealedCopies: Block[] = []
          let added = 0
          for (const { at, settled } of points) {
            while (added < at) {
              const e = entries[added++]!
              ledger.add(e.ordinal, e.body, { tokens: e.tokens, runId: e.runId })
            }
            // A run is settled only at its end; mid-run the current exchange begins with that run.
            const lastRun = at > 0 ? entries[at - 1]!.runId : null
            const runEnded = at === n || (at > 0 && entries[at]!.runId !== lastRun)
            const limit = lastRun === null || (settled && runEnded) ? at : currentStartOf(ledger.history, lastRun)

            const blocks = index.extend(ledger.history, limit)
            // Sealed blocks stay as they were: the same objects, unchanged.
            expect(blocks.length).toBeGreaterThanOrEqual(seen.length)
            seen.forEach((b, k) => expect(blocks[k]).toBe(b))
            sealedCopies.forEach((copy, k) => expect({ ...blocks[k] }).toEqual(copy))
            const prefix = entries.slice(0, at)
            checkBlocks(blocks, prefix, limit)
            // The same blocks from scratch, and as the rules give them from the ledger alone.
            expect(new BlockIndex().extend(ledger.history, limit)).toEqual(blocks)
            expect(ranges(blocks)).toEqual(referenceBlocks(prefix, limit))
            seen.splice(0, seen.length, ...blocks)
            sealedCopies.splice(0, sealedCopies.length, ...blocks.map((b) => ({ ...b })))
          }
          // No block splits a call from its result, nor a reasoning part from its call, in the grown ledger.
          const history = ledger.history
          for (const b of index.blocks) if (b.end < history.length) expect(history.canStart[b.end]).toBe(true)
          for (const b of index.blocks) {
            for (let i = b.start; i < b.end; i++) {
              const body = entries[i]!.body
              if (body.type !== 'tool_call') continue
              const at = entries.findIndex((e) => e.body.type === 'tool_result' && e.body.tool_use_id === body.tool_use_id)
              expect(at, `result of ${body.tool_use_id} in its call's block`).toBeGreaterThanOrEqual(b.start)
              expect(at).toBeLessThan(b.end)
            }
          }
        },
      ),
      { numRuns: RUNS },
    )
  })
})

describe('BlockIndex.extend: where blocks begin, their size, and the ranges already summarised (issue 21)', () => {
  it('blocks begin after the anchors: no block holds an anchor entry', () => {
    const ledger = ledgerOf([P(1, 600), P(2, 600), P(3, 600), P(4, 600), P(5, 600)])
    expect(ranges(new BlockIndex().extend(ledger.history, 5, { from: 2, blockTokens: 1024 }))).toEqual([[2, 4]])
    // Without anchors the first block takes entries 0 and 1.
    expect(ranges(new BlockIndex().extend(ledger.history, 5, { from: 0, blockTokens: 1024 }))).toEqual([
      [0, 2],
      [2, 4],
    ])
  })

  it('blocks are sized as asked: a small window cuts small blocks', () => {
    const ledger = ledgerOf(Array.from({ length: 8 }, (_, i) => P(i + 1, 70)))
    expect(ranges(new BlockIndex().extend(ledger.history, 8, { from: 0, blockTokens: 122 }))).toEqual([
      [0, 2],
      [2, 4],
      [4, 6],
      [6, 8],
    ])
  })

  it('a change of where blocks begin or of their size cuts them again', () => {
    const ledger = ledgerOf(Array.from({ length: 8 }, (_, i) => P(i + 1, 70)))
    const index = new BlockIndex()
    index.extend(ledger.history, 8, { from: 0, blockTokens: 122 })
    expect(ranges(index.extend(ledger.history, 8, { from: 1, blockTokens: 122 }))).toEqual([
      [1, 3],
      [3, 5],
      [5, 7],
    ])
    expect(ranges(index.extend(ledger.history, 8, { from: 1, blockTokens: 200 }))).toEqual([
      [1, 4],
      [4, 7],
    ])
  })

  it('a block that begins where a stored summary begins ends where it ends, whatever the size in force', () => {
    // Summaries made on a small window: ordinals 1-2 and 3-4. The chat moved to a large one (1024).
    const ledger = ledgerOf(Array.from({ length: 40 }, (_, i) => P(i + 1, 70)))
    const stored = new Map([
      [1, 2],
      [3, 4],
    ])
    const blocks = new BlockIndex().extend(ledger.history, 40, { from: 0, blockTokens: 1024, summarisedUntil: (o) => stored.get(o) })
    // Along the stored ranges, then by size: 15 × 70 = 1050 >= 1024.
    expect(ranges(blocks).slice(0, 3)).toEqual([
      [0, 2],
      [2, 4],
      [4, 19],
    ])
  })

  it('a block cut by size ends where a stored summary begins, so that summary is still used (an erased part took the one before)', () => {
    // Blocks of 10 × 100 tokens were summarised: 1-10, 11-20, 21-30. Ordinal 15 was erased, and the
    // summary of 11-20 with it; the 900 tokens left there are under the size, yet the block ends at 20.
    const ledger = ledgerOf(Array.from({ length: 30 }, (_, i) => P(i + 1, 100)).filter((s) => s.ordinal !== 15))
    const stored = new Map([
      [1, 10],
      [21, 30],
    ])
    const blocks = new BlockIndex().extend(ledger.history, ledger.history.length, { from: 0, blockTokens: 1000, summarisedUntil: (o) => stored.get(o) })
    expect(blocks.map(blockKey)).toEqual(['1-10', '11-20', '21-30'])
  })

  it('a stored range that no longer ends at a boundary is not followed: the size decides', () => {
    // A call at ordinal 2 and its result at 3: a block cannot end after ordinal 2.
    const ledger = ledgerOf([P(1, 50, 'a'), C(2, 'x', 50, 'a'), T(3, 'x', 50, 'a'), P(4, 50), P(5, 50)])
    const blocks = new BlockIndex().extend(ledger.history, 5, { from: 0, blockTokens: 120, summarisedUntil: (o) => (o === 1 ? 2 : undefined) })
    expect(ranges(blocks)).toEqual([[0, 3]])
  })
})
