/**
 * planSummaries (decisions §5.3 `summarize`): which sealed blocks go as summaries, where the
 * verbatim history begins, what is still to be made (`needed`) and what is dropped. Blocks and the
 * verbatim costs are made by hand: every history entry costs 512 tokens, blocks hold two entries.
 */
import { describe, expect, it } from 'vitest'
import { blockKey, type Block } from '../../../src/domain/context/cut-blocks.ts'
import { JUMP_FILL, SUMMARY_SHARE, planSummaries, type PlanInput, type SummaryChoice, type SummaryPlan } from '../../../src/domain/context/plan-summaries.ts'
import type { BlockSummary } from '../../../src/domain/context/render-summary.ts'

const ENTRY = 512

/** Entries [start, end), ordinals 10 × (index + 1). */
const block = (start: number, end: number): Block => ({ start, end, firstOrdinal: 10 * (start + 1), lastOrdinal: 10 * end, parts: end - start, tokens: ENTRY * (end - start) })
/** `count` blocks of two entries from entry 0: [0,2), [2,4), … */
const blocks = (count: number) => Array.from({ length: count }, (_, k) => block(2 * k, 2 * k + 2))

const summaryOf = (b: Block, tokens: number): BlockSummary => ({ firstOrdinal: b.firstOrdinal, lastOrdinal: b.lastOrdinal, text: `summary ${blockKey(b)}`, tokens, runId: `compaction-${blockKey(b)}` })

/** A store of summaries by block key, as the chat keeps them: the same object every turn. */
class Store {
  readonly byKey = new Map<string, BlockSummary>()
  make(b: Block, tokens: number): BlockSummary {
    const s = summaryOf(b, tokens)
    this.byKey.set(blockKey(b), s)
    return s
  }
  readonly lookup = (b: Block) => this.byKey.get(blockKey(b)) ?? null
}

type Scenario = {
  /** History entries before the current exchange (currentStart). */
  currentStart: number
  blocks: Block[]
  allowance: number
  /** Summary tokens by block index (null or missing: not made yet); a Store instead gives its objects. */
  summaries?: (number | null)[] | Store
  unavailable?: Block[]
  estimate?: number
  previousStart?: number | null
  previousFirstSummary?: number | null
  anchorEnd?: number
  /** Default: where drop_oldest would begin, every entry a unit of 512 tokens. */
  keptFrom?: number
  /** The chat's latest merged summary; the most a merge costs and reads (default 0: no merges). */
  merged?: BlockSummary | null
  mergedBound?: number
  mergeInputTokens?: number
}

/** The drop_oldest start: as many whole 512-token entries as fit, newest first, never before the anchors. */
const dropOldestStart = (currentStart: number, allowance: number, anchorEnd = 0) => Math.max(anchorEnd, currentStart - Math.floor(allowance / ENTRY))

function plan(s: Scenario): SummaryPlan {
  const anchorEnd = s.anchorEnd ?? 0
  let lookup: PlanInput['summaryOf']
  if (s.summaries instanceof Store) lookup = s.summaries.lookup
  else {
    const made = new Map<Block, BlockSummary>()
    s.blocks.forEach((b, k) => {
      const tokens = (s.summaries as (number | null)[] | undefined)?.[k]
      if (tokens !== null && tokens !== undefined) made.set(b, summaryOf(b, tokens))
    })
    lookup = (b) => made.get(b) ?? null
  }
  return planSummaries({
    blocks: s.blocks,
    anchorEnd,
    currentStart: s.currentStart,
    keptFrom: s.keptFrom ?? dropOldestStart(s.currentStart, s.allowance, anchorEnd),
    verbatimFrom: (start) => ENTRY * (s.currentStart - start),
    allowance: s.allowance,
    summaryOf: lookup,
    merged: s.merged ?? null,
    unavailable: new Set((s.unavailable ?? []).map(blockKey)),
    estimate: s.estimate ?? 100,
    mergedBound: s.mergedBound ?? 424,
    mergeInputTokens: s.mergeInputTokens ?? 0,
    previousStart: s.previousStart ?? null,
    previousFirstSummary: s.previousFirstSummary ?? null,
  })
}

/** Choices as [kind, start, end] (and the summary's tokens). */
const shape = (choices: SummaryChoice[]) => choices.map((c) => (c.kind === 'summary' ? [c.kind, c.block.start, c.block.end, c.summary.tokens] : [c.kind, c.block.start, c.block.end]))
const all = (n: number, tokens: number) => Array.from({ length: n }, () => tokens)

describe('planSummaries', () => {
  it('JUMP_FILL is nine tenths; summaries keep half the budget when they do not all fit', () => {
    expect(JUMP_FILL).toBe(0.9)
    expect(SUMMARY_SHARE).toBe(0.5)
  })

  it('chooses the earliest block boundary that fits; a verbatim start inside a block moves to its end', () => {
    // 12 entries, blocks [0,2) … [8,10), [10,12) unsealed. Allowance 3000: drop_oldest keeps 5 entries (from 7).
    // Starts 8 and 10; from 8: 4 × 50 + 4 × 512 = 2248 <= 3000, and <= floor(3000 × 0.9) = 2700.
    const p = plan({ currentStart: 12, blocks: blocks(5), allowance: 3000, summaries: all(5, 50) })
    expect(p.verbatimStart).toBe(8)
    expect(shape(p.choices)).toEqual([
      ['summary', 0, 2, 50],
      ['summary', 2, 4, 50],
      ['summary', 4, 6, 50],
      ['summary', 6, 8, 50],
    ])
    expect(p.gap).toBeNull()
    expect(p.summaryTokens).toBe(200)
  })

  it('passes over a boundary whose summaries and verbatim history do not fit', () => {
    // Summaries of 300: from 8, 1200 + 2048 = 3248 > 3000; from 10, 1500 + 1024 = 2524 (fits, and <= floor(3000 × 0.9) = 2700).
    const p = plan({ currentStart: 12, blocks: blocks(5), allowance: 3000, summaries: all(5, 300) })
    expect(p.verbatimStart).toBe(10)
    expect(shape(p.choices).map((c) => c[0])).toEqual(['summary', 'summary', 'summary', 'summary', 'summary'])
    expect(p.summaryTokens).toBe(1500)
    expect(p.gap).toBeNull()
  })

  it('when the boundary moves, it moves on until the cost is at most floor(allowance × JUMP_FILL)', () => {
    // Summaries of 50, allowance 2450 (drop_oldest from 8): from 8 costs 2248 (fits) but floor(2450 × 0.9) = 2205;
    // from 10: 250 + 1024 = 1274.
    expect(plan({ currentStart: 12, blocks: blocks(5), allowance: 2450, summaries: all(5, 50) }).verbatimStart).toBe(10)
    // At the edge: summaries of 10, from 8 costs 40 + 2048 = 2088. floor(2320 × 0.9) = 2088: stays.
    expect(plan({ currentStart: 12, blocks: blocks(5), allowance: 2320, summaries: all(5, 10) }).verbatimStart).toBe(8)
    expect(plan({ currentStart: 12, blocks: blocks(5), allowance: 2321, summaries: all(5, 10) }).verbatimStart).toBe(8)
    // floor(2319 × 0.9) = floor(2087.1) = 2087 < 2088: moves to 10 (50 + 1024 = 1074).
    const moved = plan({ currentStart: 12, blocks: blocks(5), allowance: 2319, summaries: all(5, 10) })
    expect(moved.verbatimStart).toBe(10)
    expect(moved.summaryTokens).toBe(50)
  })

  it('when no boundary reaches the JUMP_FILL share, the first that fits is kept', () => {
    // Summaries of 300, allowance 2500 (share 1250): from 8, 1200 + 2048 = 3248 > 2500; only 10 fits (1250 + 1024 = 2274)
    // and it is above floor(2500 × 0.9) = 2250; nothing later (12 is not sealed).
    expect(plan({ currentStart: 12, blocks: blocks(5), allowance: 2500, summaries: all(5, 300) }).verbatimStart).toBe(10)
  })

  it('keeps the previous turn’s start while it still fits, even above the JUMP_FILL share', () => {
    // As above (allowance 2450) a fresh plan jumps to 10; with the previous start 8 (2248 <= 2450) it stays at 8.
    const kept = plan({ currentStart: 12, blocks: blocks(5), allowance: 2450, summaries: all(5, 50), previousStart: 8 })
    expect(kept.verbatimStart).toBe(8)
    expect(kept.summaryTokens).toBe(200)
    // It never moves back: from 10, though 8 would fit and fill less than floor(3000 × 0.9) = 2700.
    expect(plan({ currentStart: 12, blocks: blocks(5), allowance: 3000, summaries: all(5, 50), previousStart: 10 }).verbatimStart).toBe(10)
  })

  it('a previous start that no longer fits moves forward (and then on to the JUMP_FILL share)', () => {
    // Summaries of 50, allowance 2200: drop_oldest keeps 4 entries (from 8). Previous start 8: 2248 > 2200.
    // From 10: 250 + 1024 = 1274 <= floor(2200 × 0.9) = 1980.
    const p = plan({ currentStart: 12, blocks: blocks(5), allowance: 2200, summaries: all(5, 50), previousStart: 8 })
    expect(p.verbatimStart).toBe(10)
    // A previous start past every boundary (the history was cut back) is ignored.
    expect(plan({ currentStart: 12, blocks: blocks(5), allowance: 3000, summaries: all(5, 50), previousStart: 40 }).verbatimStart).toBe(8)
  })

  it('summary reuse: later turns keep the boundary and the same summaries; only new blocks are needed', () => {
    const store = new Store()
    const base = { allowance: 2450, summaries: store, estimate: 100 }
    // Turn 1, nothing made: from 8, 4 × 100 + 2048 = 2448 fits but is above floor(2450 × 0.9) = 2205; from 10, 500 + 1024 = 1524.
    const first = plan({ ...base, currentStart: 12, blocks: blocks(5) })
    expect(first.verbatimStart).toBe(10)
    expect(shape(first.choices)).toEqual([0, 2, 4, 6, 8].map((s) => ['needed', s, s + 2]))
    expect(first.summaryTokens).toBe(500)
    // The compaction makes them (50 tokens each); packed again, the same boundary (from 8, 200 + 2048 = 2248 is still
    // above 2205), now with summaries.
    for (const c of first.choices) store.make(c.block, 50)
    const made = plan({ ...base, currentStart: 12, blocks: blocks(5) })
    expect(made.verbatimStart).toBe(10)
    expect(made.choices.every((c) => c.kind === 'summary')).toBe(true)
    expect(made.summaryTokens).toBe(250)

    // Turn 2: two more entries, block [10,12) sealed. From the previous start 10: 250 + 4 × 512 = 2298 <= 2450.
    const second = plan({ ...base, currentStart: 14, blocks: blocks(6), previousStart: made.verbatimStart, previousFirstSummary: made.firstSummary })
    expect(second.verbatimStart).toBe(10)
    expect(second.choices.map((c) => c.kind)).toEqual(['summary', 'summary', 'summary', 'summary', 'summary'])
    second.choices.forEach((c, k) => expect(c.kind === 'summary' && c.summary).toBe(store.byKey.get(blockKey(made.choices[k]!.block))))
    expect(second.summaryTokens).toBe(250)

    // Turn 3: 16 entries, drop_oldest starts at 12 > 10: the boundary must move. From 12: 250 + 100 + 2048 = 2398 (fits,
    // above 2205); from 14: 250 + 2 × 100 + 1024 = 1474. Only the two new blocks are needed.
    const third = plan({ ...base, currentStart: 16, blocks: blocks(8), previousStart: second.verbatimStart, previousFirstSummary: second.firstSummary })
    expect(third.verbatimStart).toBe(14)
    expect(third.choices.map((c) => c.kind)).toEqual(['summary', 'summary', 'summary', 'summary', 'summary', 'needed', 'needed'])
    expect(third.choices.filter((c) => c.kind === 'needed').map((c) => blockKey(c.block))).toEqual(['110-120', '130-140'])
    expect(third.summaryTokens).toBe(450)
    for (const c of third.choices) if (c.kind === 'needed') store.make(c.block, 50)

    // Turn 4: 18 entries, previous start 14: 350 + 4 × 512 = 2398 <= 2450, kept; nothing to make.
    const fourth = plan({ ...base, currentStart: 18, blocks: blocks(9), previousStart: third.verbatimStart, previousFirstSummary: third.firstSummary })
    expect(fourth.verbatimStart).toBe(14)
    expect(fourth.choices.every((c) => c.kind === 'summary')).toBe(true)
    expect(fourth.summaryTokens).toBe(350)
  })

  it('missing summaries come back as needed, counted at the estimate', () => {
    // Blocks 0 and 1 summarised (50), 2.. not made. Previous start 8: 100 + 2 × estimate + 2048.
    const scenario = { currentStart: 12, blocks: blocks(5), allowance: 3000, summaries: [50, 50, null, null, null], previousStart: 8 }
    const p = plan({ ...scenario, estimate: 100 })
    expect(p.verbatimStart).toBe(8)
    expect(shape(p.choices)).toEqual([
      ['summary', 0, 2, 50],
      ['summary', 2, 4, 50],
      ['needed', 4, 6],
      ['needed', 6, 8],
    ])
    expect(p.summaryTokens).toBe(300)
    // The estimate decides whether the start still fits: 100 + 2 × 426 + 2048 = 3000 fits exactly …
    const edge = plan({ ...scenario, estimate: 426 })
    expect(edge.verbatimStart).toBe(8)
    expect(edge.summaryTokens).toBe(952)
    // … 3002 does not: from 10, 100 + 3 × 427 + 1024 = 2405.
    const over = plan({ ...scenario, estimate: 427 })
    expect(over.verbatimStart).toBe(10)
    expect(shape(over.choices).map((c) => c[0])).toEqual(['summary', 'summary', 'needed', 'needed', 'needed'])
    expect(over.summaryTokens).toBe(100 + 3 * 427)
  })

  it('unavailable blocks (their compaction failed) are dropped and cost nothing', () => {
    // Summaries of 300 and previous start 8: 1200 + 2048 = 3248 > 3000, so the start moves to 10.
    expect(plan({ currentStart: 12, blocks: blocks(5), allowance: 3000, summaries: all(5, 300), previousStart: 8 }).verbatimStart).toBe(10)
    // Blocks 0 and 1 failed: 600 + 2048 = 2648 fits, the start stays.
    const b = blocks(5)
    const p = plan({ currentStart: 12, blocks: b, allowance: 3000, summaries: all(5, 300), previousStart: 8, unavailable: [b[0]!, b[1]!] })
    expect(p.verbatimStart).toBe(8)
    expect(shape(p.choices)).toEqual([
      ['dropped', 0, 2],
      ['dropped', 2, 4],
      ['summary', 4, 6, 300],
      ['summary', 6, 8, 300],
    ])
    expect(p.summaryTokens).toBe(600)
    // An unavailable block without a summary is dropped, not needed.
    const q = plan({ currentStart: 12, blocks: b, allowance: 3000, summaries: [], unavailable: [b[2]!], previousStart: 8 })
    expect(shape(q.choices)).toEqual([
      ['needed', 0, 2],
      ['needed', 2, 4],
      ['dropped', 4, 6],
      ['needed', 6, 8],
    ])
    expect(q.summaryTokens).toBe(300)
  })

  it('summaries that do not all fit count at most their share: the verbatim start moves on rather than squeeze them', () => {
    // Summaries of 700 (3500 in all), allowance 3000, share floor(3000 × 0.5) = 1500. From 8: 1500 + 2048 > 3000;
    // from 10: 1500 + 1024 = 2524 fits (within floor(3000 × 0.9) = 2700). 3000 − 1024 = 1976 is left: 3500 do not fit,
    // the oldest go until the rest fill at most floor(1500 × 0.9) = 1350: only the newest (700) stays (two are 1400).
    const p = plan({ currentStart: 12, blocks: blocks(5), allowance: 3000, summaries: all(5, 700) })
    expect(p.verbatimStart).toBe(10)
    expect(shape(p.choices)).toEqual([
      ['dropped', 0, 2],
      ['dropped', 2, 4],
      ['dropped', 4, 6],
      ['dropped', 6, 8],
      ['summary', 8, 10, 700],
    ])
    expect(p.summaryTokens).toBe(700)
    expect(p.firstSummary).toBe(8)
    expect(p.gap).toBeNull()
  })

  it('when some summaries must go, the oldest go several at a time: the rest fill at most JUMP_FILL of their share', () => {
    // Summaries of 300, allowance 2500 (share 1250): drop_oldest from 8; from 8: 1200 + 2048 > 2500; from 10: 1250 + 1024
    // = 2274. 2500 − 1024 = 1476 left: 1500 do not fit. Dropping one would do (1200), but they go down to
    // floor(1250 × 0.9) = 1125: two go, 900 stay.
    const p = plan({ currentStart: 12, blocks: blocks(5), allowance: 2500, summaries: all(5, 300) })
    expect(p.verbatimStart).toBe(10)
    expect(shape(p.choices).map((c) => c[0])).toEqual(['dropped', 'dropped', 'summary', 'summary', 'summary'])
    expect(p.summaryTokens).toBe(900)
    expect(p.firstSummary).toBe(4)
  })

  it('summaries older than the previous turn’s first stay dropped; the newer are kept while they fit', () => {
    const scenario = { currentStart: 12, blocks: blocks(5), allowance: 2500, summaries: all(5, 300), previousStart: 10 }
    const sent = (p: SummaryPlan) => p.choices.filter((c) => c.kind !== 'dropped').map((c) => c.block.start)
    // The previous turn sent summaries from block [6,8): [0,2) … [4,6) are not sent, though they would fit.
    const later = plan({ ...scenario, previousFirstSummary: 6 })
    expect(later.verbatimStart).toBe(10)
    expect(sent(later)).toEqual([6, 8])
    expect(later.summaryTokens).toBe(600)
    expect(later.firstSummary).toBe(6)
    expect(later.gap).toBeNull()
    // From block [2,4): 1200 fit the 1476 left, nothing more is dropped (without it, two would go: see above).
    const older = plan({ ...scenario, previousFirstSummary: 2 })
    expect(sent(older)).toEqual([2, 4, 6, 8])
    expect(older.summaryTokens).toBe(1200)
    expect(older.firstSummary).toBe(2)
  })

  it('needed placeholders are dropped oldest first the same way; an unavailable block counts nothing', () => {
    // Block 0 made (700), the others not (estimate 430): 700, 1130, 1560, 1990, 2420. Share 1500: from 8, 1500 + 2048 > 3000;
    // from 10, 1500 + 1024 = 2524. 2420 > 1976: dropping one (1720) would fit, but they go down to
    // floor(1500 × 0.9) = 1350 → 1290 (the newest three placeholders).
    const p = plan({ currentStart: 12, blocks: blocks(5), allowance: 3000, summaries: [700], estimate: 430 })
    expect(p.verbatimStart).toBe(10)
    expect(shape(p.choices)).toEqual([
      ['dropped', 0, 2],
      ['dropped', 2, 4],
      ['needed', 4, 6],
      ['needed', 6, 8],
      ['needed', 8, 10],
    ])
    expect(p.summaryTokens).toBe(1290)
    // Block 1 unavailable: 700 + 0 + 3 × 430 = 1990 > 1976: down to 1350 the same way; dropping block 0 alone leaves 1290.
    const b = blocks(5)
    const q = plan({ currentStart: 12, blocks: b, allowance: 3000, summaries: [700], estimate: 430, unavailable: [b[1]!] })
    expect(shape(q.choices)).toEqual([
      ['dropped', 0, 2],
      ['dropped', 2, 4],
      ['needed', 4, 6],
      ['needed', 6, 8],
      ['needed', 8, 10],
    ])
    expect(q.summaryTokens).toBe(1290)
    // An estimate of 425: 700 + 0 + 3 × 425 = 1975 fits the 1976 left; only the failed block is not sent.
    const r = plan({ currentStart: 12, blocks: b, allowance: 3000, summaries: [700, null, null, null, null], estimate: 425, unavailable: [b[1]!] })
    expect(shape(r.choices).map((c) => c[0])).toEqual(['summary', 'dropped', 'needed', 'needed', 'needed'])
    expect(r.summaryTokens).toBe(700 + 3 * 425)
  })

  it('the gap: the unsealed entries between the last block and the verbatim start when they do not fit', () => {
    // Blocks [0,2) and [2,4) only; drop_oldest keeps 5 of 12 entries (from 7). 100 + 2560 = 2660 <= 2700.
    const p = plan({ currentStart: 12, blocks: blocks(2), allowance: 2700, summaries: all(2, 50) })
    expect(p.verbatimStart).toBe(7)
    expect(shape(p.choices)).toEqual([
      ['summary', 0, 2, 50],
      ['summary', 2, 4, 50],
    ])
    expect(p.gap).toEqual({ start: 4, end: 7 })
    expect(p.summaryTokens).toBe(100)
    // 2600: 2660 does not fit; 40 left for summaries, both go.
    const tight = plan({ currentStart: 12, blocks: blocks(2), allowance: 2600, summaries: all(2, 50) })
    expect(tight.verbatimStart).toBe(7)
    expect(shape(tight.choices)).toEqual([
      ['dropped', 0, 2],
      ['dropped', 2, 4],
    ])
    expect(tight.gap).toEqual({ start: 4, end: 7 })
    expect(tight.summaryTokens).toBe(0)
    // No sealed block at all: everything before the verbatim start is the gap.
    const none = plan({ currentStart: 12, blocks: [], allowance: 2700 })
    expect(none).toMatchObject({ verbatimStart: 7, choices: [], gap: { start: 0, end: 7 }, summaryTokens: 0 })
  })

  it('anchors: blocks begin after them (cut-blocks.ts), so every summary starts after the anchors, and so does the gap', () => {
    // Anchors are entries 0..3; blocks [3,5), [5,7), [7,9), [9,11). drop_oldest keeps 5 entries (from 7).
    // From 7: 2 × 50 + 2560 = 2660 fits 2900; above floor(2900 × 0.9) = 2610; from 9: 150 + 1536 = 1686.
    const from3 = [3, 5, 7, 9].map((s) => block(s, s + 2))
    const p = plan({ currentStart: 12, blocks: from3, allowance: 2900, summaries: all(4, 50), anchorEnd: 3 })
    expect(p.verbatimStart).toBe(9)
    expect(shape(p.choices)).toEqual([
      ['summary', 3, 5, 50],
      ['summary', 5, 7, 50],
      ['summary', 7, 9, 50],
    ])
    expect(p.summaryTokens).toBe(150)
    expect(plan({ currentStart: 12, blocks: [], allowance: 2700, anchorEnd: 3 }).gap).toEqual({ start: 3, end: 7 })
  })

  it('blocks reaching into the current exchange are not summarised', () => {
    // The current exchange begins at 9: block [8,10) is not eligible. drop_oldest keeps 3 entries (from 6).
    // From 6: 3 × 50 + 1536 = 1686 (fits 1800, above floor(1800 × 0.9) = 1620); from 8: 200 + 512 = 712.
    const p = plan({ currentStart: 9, blocks: blocks(5), allowance: 1800, summaries: all(5, 50) })
    expect(p.verbatimStart).toBe(8)
    expect(shape(p.choices).map((c) => [c[1], c[2]])).toEqual([
      [0, 2],
      [2, 4],
      [4, 6],
      [6, 8],
    ])
  })

  it('asks only for the summaries of blocks it may send', () => {
    // Anchors end at 4, blocks begin there: [4,6) … [8,10) are eligible (not [10,12), not sealed here).
    const asked: string[] = []
    planSummaries({
      blocks: blocks(5).slice(2),
      anchorEnd: 4,
      currentStart: 12,
      keptFrom: 7,
      verbatimFrom: (s) => ENTRY * (12 - s),
      allowance: 3000,
      summaryOf: (b) => (asked.push(blockKey(b)), null),
      merged: null,
      unavailable: new Set(),
      estimate: 100,
      mergedBound: 424,
      mergeInputTokens: 0,
      previousStart: null,
      previousFirstSummary: null,
    })
    expect(new Set(asked)).toEqual(new Set(['50-60', '70-80', '90-100']))
  })

  it('a turn that sends no summary holds the next turn to none: older summaries come back once there is room', () => {
    // Turn 1: a large input leaves 200 tokens; three 100-token summaries cannot all fit their share (100), all go.
    const first = plan({ currentStart: 6, blocks: blocks(3), allowance: 200, summaries: all(3, 100), keptFrom: 6 })
    expect(first.choices.every((c) => c.kind === 'dropped')).toBe(true)
    expect(first.firstSummary).toBeNull()
    // Turn 2: room again; the previous start holds, and all three summaries are sent.
    const second = plan({ currentStart: 6, blocks: blocks(3), allowance: 6000, summaries: all(3, 100), keptFrom: 6, previousStart: first.verbatimStart, previousFirstSummary: first.firstSummary })
    expect(shape(second.choices).map((c) => c[0])).toEqual(['summary', 'summary', 'summary'])
    expect(second.summaryTokens).toBe(300)
  })

  it('moving on for room never takes the whole history into summaries: the newest stays verbatim', () => {
    // Six blocks of 1024 tokens before the input, summaries of 100 but the fifth 900; allowance 2500 (drop_oldest from 8),
    // summaries counted at most their share (1250). From 8: 400 + 2048 = 2448 fits 2500; within floor(2500 × 0.9) = 2250
    // only 12 (1250 + 0), which sends nothing verbatim: the move stops at the last start that keeps some, 10 (1250 + 1024
    // = 2274). There the five summaries before it (1300) fit the 1476 left.
    const p = plan({ currentStart: 12, blocks: blocks(6), allowance: 2500, summaries: [100, 100, 100, 100, 900, 100] })
    expect(p.verbatimStart).toBe(10)
    expect(shape(p.choices)).toEqual([
      ['summary', 0, 2, 100],
      ['summary', 2, 4, 100],
      ['summary', 4, 6, 100],
      ['summary', 6, 8, 100],
      ['summary', 8, 10, 900],
    ])
    expect(p.summaryTokens).toBe(1300)
  })
})

describe('planSummaries: the oldest summaries merged before any is dropped (decisions §5.3, issue 21)', () => {
  // Ten blocks of two 512-token entries, summaries of 150 tokens; two unsealed entries before the input.
  // Budget 2400: verbatim from 20 (1024) leaves 1376 for 1500 tokens of summaries; their share is 1200.
  const base = { currentStart: 22, blocks: blocks(10), allowance: 2400, mergedBound: 200, mergeInputTokens: 5000 }

  it('summaries that no longer fit: the fewest oldest are merged so that the rest fill at most JUMP_FILL of their share', () => {
    const p = plan({ ...base, summaries: all(10, 150) })
    expect(p.verbatimStart).toBe(20)
    // Target floor(0.9 × 1200) = 1080: merging four (200) leaves six (900): 1100, too many; merging five (200) leaves
    // five (750): 950.
    const merge = p.choices[0]!
    expect(merge).toMatchObject({ kind: 'merge', block: { start: 0, end: 10, firstOrdinal: 10, lastOrdinal: 100 }, tokens: 200 })
    expect(merge.kind === 'merge' && merge.of.map((b) => [b.start, b.end])).toEqual([0, 2, 4, 6, 8].map((s) => [s, s + 2]))
    expect(shape(p.choices.slice(1))).toEqual([10, 12, 14, 16, 18].map((s) => ['summary', s, s + 2, 150]))
    expect(p.summaryTokens).toBe(950)
    expect(p.firstSummary).toBe(0)
    expect(p.choices.some((c) => c.kind === 'dropped')).toBe(false)
  })

  it('once made, the merged summary begins the summaries: its blocks are not looked at again', () => {
    const store = new Store()
    for (const b of blocks(10)) store.make(b, 150)
    const merged: BlockSummary = { firstOrdinal: 10, lastOrdinal: 120, text: 'merged', tokens: 120, runId: 'merge-1', merged: true }
    store.byKey.set('10-120', merged)
    const p = plan({ ...base, summaries: store, merged, previousStart: 20, previousFirstSummary: 0 })
    expect(shape(p.choices)).toEqual([['summary', 0, 12, 120], ...[12, 14, 16, 18].map((s) => ['summary', s, s + 2, 150])])
    expect(p.summaryTokens).toBe(720)
  })

  it('a merge may take its inputs from the chat’s merged summary: the next merge covers it and the blocks after it', () => {
    const store = new Store()
    for (const b of blocks(10)) store.make(b, 150)
    const merged: BlockSummary = { firstOrdinal: 10, lastOrdinal: 40, text: 'merged', tokens: 150, runId: 'merge-1', merged: true }
    store.byKey.set('10-40', merged)
    // Units: the merged summary (0..4) and eight blocks, 150 each: 1350 tokens, and 1276 of room at a 2300 budget.
    const p = plan({ ...base, allowance: 2300, summaries: store, merged })
    const merge = p.choices[0]!
    expect(merge.kind).toBe('merge')
    expect(merge.block).toMatchObject({ start: 0, firstOrdinal: 10 })
    expect(merge.kind === 'merge' && merge.of[0]).toMatchObject({ start: 0, end: 4 })
  })

  it('a merge reads at most mergeInputTokens; one that fits only the room left is taken before anything is dropped', () => {
    // Inputs up to 500 tokens: three summaries (450) merged to 200 leave seven (1050): 1250 > 1080, but <= 1376.
    const p = plan({ ...base, summaries: all(10, 150), mergeInputTokens: 500 })
    expect(p.choices[0]).toMatchObject({ kind: 'merge', block: { start: 0, end: 6 } })
    expect(p.choices.some((c) => c.kind === 'dropped')).toBe(false)
    expect(p.summaryTokens).toBe(1250)
  })

  it('only what even a merge cannot hold is dropped, oldest first', () => {
    // No merge can read two summaries: the oldest go until the rest fill the target (1080): seven (1050) stay.
    const p = plan({ ...base, summaries: all(10, 150), mergeInputTokens: 250 })
    expect(shape(p.choices).map((c) => c[0])).toEqual([...Array(3).fill('dropped'), ...Array(7).fill('summary')])
    // A merged summary larger than the room holds nothing either.
    const tiny = plan({ ...base, summaries: all(10, 150), mergedBound: 2000 })
    expect(tiny.choices.some((c) => c.kind === 'merge')).toBe(false)
  })

  it('a merge whose compaction failed is not planned again this turn, and no merge reads a failed block', () => {
    // The merge planned otherwise (the first test) is of [0,10); it failed, so a merge that fits only the room is taken.
    const failedMerge = plan({ ...base, summaries: all(10, 150), unavailable: [{ ...blocks(10)[0]!, end: 10, lastOrdinal: 100 }] })
    for (const c of failedMerge.choices) if (c.kind === 'merge') expect(blockKey(c.block)).not.toBe('10-100')
    const failedBlock = plan({ ...base, summaries: all(10, 150), unavailable: [blocks(10)[2]!] })
    for (const c of failedBlock.choices) if (c.kind === 'merge') expect(c.of.some((b) => b.start === 4)).toBe(false)
  })

  it('a merged summary whose range is not cut as blocks any more is not sent', () => {
    const merged: BlockSummary = { firstOrdinal: 10, lastOrdinal: 50, text: 'merged', tokens: 100, runId: 'merge-1', merged: true }
    const p = plan({ ...base, summaries: all(10, 150), merged })
    expect(p.choices.every((c) => c.kind !== 'summary' || c.summary !== merged)).toBe(true)
  })
})

/**
 * Cache-stable summaries (decisions 013 and 047): a vendor's prefix cache serves a prompt only up
 * to its first change, so the summaries a chat sends are append-only between merges: a turn sends
 * every summary the previous turn sent, unchanged and in the same order, then any new ones; the
 * verbatim start never moves back. Only a merge rewrites the start of the summaries, and after one
 * they fill at most JUMP_FILL (nine tenths) of their share, so the next merge waits until they have
 * grown past the share again: at least a tenth of it in new summaries.
 */
describe('planSummaries: summaries are append-only between merges (decision 047)', () => {
  it('a chat growing an entry a turn: every turn without a merge repeats the previous summaries, and merges are spaced', () => {
    const SUMMARY = 40
    const allowance = 2400
    const share = allowance / 2
    const store = new Store()
    let merged: BlockSummary | null = null
    let previous: SummaryPlan | null = null
    const mergeTurns: number[] = []
    const summariesAt: number[] = []
    const sent = (p: SummaryPlan) => p.choices.flatMap((c) => (c.kind === 'summary' ? [blockKey(c.block)] : c.kind === 'needed' ? [blockKey(c.block)] : []))
    for (let entries = 8; entries <= 400; entries++) {
      const bs = blocks(Math.floor((entries - 2) / 2))
      const input = { currentStart: entries, blocks: bs, allowance, summaries: store, merged, mergedBound: 200, mergeInputTokens: 100_000 }
      let p = plan({ ...input, previousStart: previous?.verbatimStart ?? null, previousFirstSummary: previous?.firstSummary ?? null })
      // Make what the turn needs, as compaction runs do, and pack again (as compactForTurn does).
      for (const c of p.choices) if (c.kind === 'needed') store.make(c.block, SUMMARY)
      const merge = p.choices.find((c) => c.kind === 'merge')
      if (merge) {
        merged = { firstOrdinal: merge.block.firstOrdinal, lastOrdinal: merge.block.lastOrdinal, text: 'merged', tokens: 200, runId: `merge-${entries}`, merged: true }
        store.byKey.set(blockKey(merge.block), merged)
        mergeTurns.push(entries)
      }
      p = plan({ ...input, merged, previousStart: previous?.verbatimStart ?? null, previousFirstSummary: previous?.firstSummary ?? null })
      expect(p.choices.some((c) => c.kind === 'dropped' || c.kind === 'needed' || c.kind === 'merge'), `turn ${entries}`).toBe(false)
      if (previous !== null) {
        expect(p.verbatimStart, `turn ${entries}`).toBeGreaterThanOrEqual(previous.verbatimStart)
        if (!merge) expect(sent(p).slice(0, sent(previous).length), `turn ${entries}`).toEqual(sent(previous))
      }
      summariesAt.push(p.summaryTokens)
      previous = p
    }
    expect(mergeTurns.length).toBeGreaterThan(2)
    // Between two merges the summaries grow by at least a tenth of their share: a summary per two entries.
    const least = Math.ceil((share / 10) / SUMMARY) * 2
    for (let k = 1; k < mergeTurns.length; k++) expect(mergeTurns[k]! - mergeTurns[k - 1]!, JSON.stringify(mergeTurns)).toBeGreaterThanOrEqual(least)
  })
})
