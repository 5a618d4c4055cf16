/**
 * packContext under `history_mode: summarize` (decisions §5.3, §5.4): the oldest history goes as
 * summaries of sealed blocks (or placeholders for summaries still to be made), the rest verbatim
 * from a block boundary; failed compactions and summaries that do not fit are dropped with
 * `history_dropped`; the manifest says exactly what was sent.
 */
import fc from 'fast-check'
import { describe, expect, it, test } from 'vitest'
import type { ContextBudget, RetentionRules } from '../../../src/domain/config/config-types.ts'
import { BLOCK_TOKENS, BlockIndex, blockKey, type Block } from '../../../src/domain/context/cut-blocks.ts'
import { summaryBound } from '../../../src/domain/context/compaction-sizes.ts'
import type { CompactionInput, NewPart } from '../../../src/domain/context/pack-context.ts'
import { summaryText, summaryTokens, type BlockSummary } from '../../../src/domain/context/render-summary.ts'
import { ContextTooLargeError } from '../../../src/domain/errors.ts'
import { Ledger, TEN, call, message, model, pack, prompt, reasoning, result, words, type PackOptions } from './context-fixtures.ts'

const SUMMARIZE: ContextBudget = { version: 3, headroom: 0, history_mode: 'summarize' }
/** The history_dropped message under summarize, saying why (src/domain/context/pack-context.ts). */
const because = (why: string) => `summaries replace the oldest history; these parts were dropped because ${why}`
const FAILED = because('their compaction run failed (a later turn tries again)')
const NO_ROOM = because('even a merged summary of them did not fit the history budget')
const EARLIER = because('an earlier turn dropped them for want of room, and summaries go on after them')
const UNSEALED = because('they are not in a sealed block yet and did not fit verbatim')

/** `runs` runs of a prompt and a reply of `size` tokens each; ordinals 10, 20, …; one sealed block per run. */
function chat(runs: number, size: number, ledger = new Ledger(), from = 0): Ledger {
  for (let k = from; k < from + runs; k++) {
    ledger.add(10 * (2 * k + 1), prompt(words(size)), { runId: `run${k}` }).add(10 * (2 * k + 2), message(words(size)), { runId: `run${k}` })
  }
  return ledger
}

/** The new input: a 10-token prompt. */
const NEW: NewPart[] = [{ body: prompt(TEN), media: [] }]

/** A summary of `block` whose estimate as sent (summaryTokens) is exactly `tokens`. */
function summaryWith(block: Pick<Block, 'firstOrdinal' | 'lastOrdinal'>, tokens: number, runId = `compaction-${blockKey(block)}`): BlockSummary {
  for (let n = 0; n <= tokens; n++) {
    const text = `Summary.${words(n)}`
    if (summaryTokens(block.firstOrdinal, block.lastOrdinal, text) === tokens) return { firstOrdinal: block.firstOrdinal, lastOrdinal: block.lastOrdinal, text, tokens, runId }
  }
  throw new Error(`no summary text of ${tokens} tokens`)
}

/** The chat's stored summaries: one object per block, made on first ask when `tokens` is given. */
class Summaries {
  readonly byKey = new Map<string, BlockSummary>()
  asked = 0
  constructor(private readonly tokens: number | null = null) {}
  make(block: Block, tokens = this.tokens!): BlockSummary {
    const s = summaryWith(block, tokens)
    this.byKey.set(blockKey(block), s)
    return s
  }
  readonly of = (block: Block): BlockSummary | null => {
    this.asked++
    return this.byKey.get(blockKey(block)) ?? (this.tokens === null ? null : this.make(block))
  }
}

/** What packing sets aside here for an unmade summary (an input: the chat's keeper works it out). */
const SUMMARY_ESTIMATE_TOKENS = 424

/** Merges are off unless a test turns them on (`mergeInputTokens`): the oldest summaries are dropped instead. */
function compaction(over: Partial<CompactionInput> = {}): CompactionInput {
  return {
    blocks: new BlockIndex(),
    cut: { blockTokens: BLOCK_TOKENS },
    summaryOf: () => null,
    merged: null,
    mergedBound: summaryBound(1600),
    mergeInputTokens: 0,
    unavailable: new Set(),
    madeNow: new Set(),
    previousStart: null,
    previousFirstSummary: null,
    estimate: SUMMARY_ESTIMATE_TOKENS,
    ...over,
  }
}

/** One model object per window: renderings (and the parts made from them) are kept per media policy object. */
const models = new Map<number, ReturnType<typeof model>>()
const modelOf = (window: number) => models.get(window) ?? models.set(window, model(window)).get(window)!

function packSummarize(history: Ledger, window: number, over: Partial<PackOptions> = {}) {
  return pack({ history: history.history, model: modelOf(window), budget: SUMMARIZE, newParts: NEW, ...over })
}

type Packed = ReturnType<typeof pack>

/** decisions §5.4: the segments cover every packable ordinal once, in ledger order. */
function expectCoverage(packed: Packed, ledger: Ledger) {
  const ordinals = ledger.history.entries.map((e) => e.ordinal)
  let at = 0
  for (const s of packed.context.segments) {
    expect(s.first_ordinal).toBe(ordinals[at])
    at += s.parts
    expect(s.last_ordinal).toBe(ordinals[at - 1])
  }
  expect(at).toBe(ordinals.length)
}

/** The estimate is what is sent: every part's tokens, plus instructions and tools; the manifest's sums agree. */
function expectTotals(packed: Packed, instructions = 0, tools = 0) {
  const parts = packed.parts.reduce((sum, p) => sum + p.tokens, 0)
  expect(packed.estimatedTokens).toBe(parts + instructions + tools)
  const t = packed.context.tokens
  expect(t.total).toBe(packed.estimatedTokens)
  expect(t.instructions + t.tools + t.anchors + t.history + t.summaries + t.current).toBe(t.total)
  const summaryParts = packed.parts.filter((p) => p.kind === 'summary').reduce((sum, p) => sum + p.tokens, 0)
  expect(t.summaries).toBe(summaryParts)
  expect(packed.context.segments.filter((s) => s.treatment === 'summarised').reduce((sum, s) => sum + s.tokens, 0)).toBe(t.summaries)
}

const ordinalsOf = (packed: Packed) => packed.parts.map((p) => [p.ordinal, p.kind, p.treatment])

describe('packContext under summarize', () => {
  // Six runs of two 1000-token parts (ordinals 10 … 120): six sealed blocks of 2000 tokens, [0,2) … [10,12).
  // A 10-token input; a window of 6010 leaves a history budget of 6000. drop_oldest would keep 6 parts (from 6).
  it('over its budget with no summaries: the oldest blocks are needed, sent as placeholders, nothing dropped', () => {
    const ledger = chat(6, 1000)
    expect(ledger.history.entries.every((e) => e.tokens === 1000)).toBe(true)
    const blocks = new BlockIndex()
    const packed = packSummarize(ledger, 6010, { compaction: compaction({ blocks }) })
    // Starts 6, 8, 10, 12 at 424 a summary: 6 → 1272 + 6000; 8 → 1696 + 4000 = 5696 fits, above floor(6000 × 0.9) = 5400;
    // 10 → 2120 + 2000 = 4120 <= 5400.
    expect(blocks.blocks.map((b) => [b.start, b.end])).toEqual([[0, 2], [2, 4], [4, 6], [6, 8], [8, 10], [10, 12]])
    expect(packed.verbatimStart).toBe(10)
    expect(packed.needed).toEqual(blocks.blocks.slice(0, 5))
    expect(packed.parts.slice(0, 5)).toEqual(
      [10, 30, 50, 70, 90].map((ordinal) => ({ ordinal, kind: 'summary', treatment: 'summarised', content: null, tokens: SUMMARY_ESTIMATE_TOKENS })),
    )
    expect(ordinalsOf(packed).slice(5)).toEqual([
      [110, 'prompt', 'verbatim'],
      [120, 'message', 'verbatim'],
      [-1, 'prompt', 'verbatim'],
    ])
    expect(packed.context.tokens).toEqual({ instructions: 0, tools: 0, anchors: 0, history: 2000, summaries: 2120, current: 10, total: 4130 })
    expect(packed.context.history_budget).toBe(6000)
    expect(packed.context.segments).toEqual([
      { first_ordinal: 10, last_ordinal: 100, parts: 10, treatment: 'summarised', tokens: 2120 },
      { first_ordinal: 110, last_ordinal: 120, parts: 2, treatment: 'verbatim', tokens: 2000 },
    ])
    expect(packed.context.summaries).toEqual([])
    expect(packed.context.dropped).toBeNull()
    expect(packed.warnings.config).toEqual([])
    expect(packed.stablePrefixEnds).toEqual([5, 7])
    expect(packed.firstSummary).toBe(0)
    expectCoverage(packed, ledger)
    expectTotals(packed)
  })

  it('with the summaries made: sent in place of their blocks, the manifest lists them, reused unless made now', () => {
    const ledger = chat(6, 1000)
    const blocks = new BlockIndex()
    const store = new Summaries()
    const first = packSummarize(ledger, 6010, { compaction: compaction({ blocks, summaryOf: store.of }) })
    expect(first.needed.map(blockKey)).toEqual(['10-20', '30-40', '50-60', '70-80', '90-100'])
    // The compaction runs make them (50 tokens each: 3 of them now, 2 by earlier work); the turn is packed again
    // from the boundary it was admitted with.
    const made = first.needed.map((b) => store.make(b, 50))
    const madeNow = new Set(first.needed.slice(2).map(blockKey))
    const packed = packSummarize(ledger, 6010, {
      compaction: compaction({ blocks, summaryOf: store.of, madeNow, previousStart: first.verbatimStart, previousFirstSummary: first.firstSummary }),
    })
    // From 10 (kept): 250 + 2000 = 2250.
    expect(packed.verbatimStart).toBe(10)
    expect(packed.needed).toEqual([])
    expect(packed.parts.slice(0, 5)).toEqual(
      made.map((s) => ({
        ordinal: s.firstOrdinal,
        kind: 'summary',
        treatment: 'summarised',
        content: { type: 'summary', text: summaryText(s.firstOrdinal, s.lastOrdinal, s.text) },
        tokens: 50,
      })),
    )
    expect(ordinalsOf(packed).slice(5)).toEqual([
      [110, 'prompt', 'verbatim'],
      [120, 'message', 'verbatim'],
      [-1, 'prompt', 'verbatim'],
    ])
    expect(packed.context.summaries).toEqual([
      { first_ordinal: 10, last_ordinal: 20, run_id: 'compaction-10-20', tokens: 50, reused: true },
      { first_ordinal: 30, last_ordinal: 40, run_id: 'compaction-30-40', tokens: 50, reused: true },
      { first_ordinal: 50, last_ordinal: 60, run_id: 'compaction-50-60', tokens: 50, reused: false },
      { first_ordinal: 70, last_ordinal: 80, run_id: 'compaction-70-80', tokens: 50, reused: false },
      { first_ordinal: 90, last_ordinal: 100, run_id: 'compaction-90-100', tokens: 50, reused: false },
    ])
    expect(packed.context.segments).toEqual([
      { first_ordinal: 10, last_ordinal: 100, parts: 10, treatment: 'summarised', tokens: 250 },
      { first_ordinal: 110, last_ordinal: 120, parts: 2, treatment: 'verbatim', tokens: 2000 },
    ])
    expect(packed.context.tokens).toEqual({ instructions: 0, tools: 0, anchors: 0, history: 2000, summaries: 250, current: 10, total: 2260 })
    expect(packed.estimatedTokens).toBe(2260)
    expect(packed.context.dropped).toBeNull()
    expect(packed.warnings.config).toEqual([])
    expect(packed.stablePrefixEnds).toEqual([5, 7])
    expectCoverage(packed, ledger)
    expectTotals(packed)
  })

  it('without a previous boundary, the earliest that fits: summaries of whole blocks, verbatim from a block end', () => {
    const ledger = chat(6, 1000)
    const store = new Summaries(50)
    const packed = packSummarize(ledger, 6010, { compaction: compaction({ summaryOf: store.of }) })
    // drop_oldest would start at 6; from 6: 150 + 6000 > 6000; from 8: 200 + 4000 = 4200 <= floor(6000 × 0.9) = 5400.
    expect(packed.verbatimStart).toBe(8)
    expect(packed.context.summaries.map((s) => [s.first_ordinal, s.last_ordinal, s.reused])).toEqual([
      [10, 20, true],
      [30, 40, true],
      [50, 60, true],
      [70, 80, true],
    ])
    expect(packed.context.segments).toEqual([
      { first_ordinal: 10, last_ordinal: 80, parts: 8, treatment: 'summarised', tokens: 200 },
      { first_ordinal: 90, last_ordinal: 120, parts: 4, treatment: 'verbatim', tokens: 4000 },
    ])
    expect(packed.context.tokens).toMatchObject({ history: 4000, summaries: 200, total: 4210 })
    expect(packed.stablePrefixEnds).toEqual([4, 8])
    expectCoverage(packed, ledger)
    expectTotals(packed)
  })

  it('summary reuse: the next turn keeps the boundary and sends the same summaries, the same part objects', () => {
    const ledger = chat(6, 1000)
    const blocks = new BlockIndex()
    const store = new Summaries(50)
    const turn1 = packSummarize(ledger, 6010, { compaction: compaction({ blocks, summaryOf: store.of }) })
    expect(turn1.verbatimStart).toBe(8)
    // The turn's answer (20 tokens, unsealed), and the next input.
    ledger.add(130, prompt(TEN), { runId: 'run6' }).add(140, message(TEN), { runId: 'run6' })
    const turn2 = packSummarize(ledger, 6010, {
      compaction: compaction({ blocks, summaryOf: store.of, previousStart: turn1.verbatimStart, previousFirstSummary: turn1.firstSummary }),
    })
    // drop_oldest would start at 7; from the previous start 8: 200 + 4020 = 4220 <= 6000, kept.
    expect(turn2.verbatimStart).toBe(8)
    expect(turn2.needed).toEqual([])
    expect(turn2.context.summaries).toEqual(turn1.context.summaries)
    expect(turn2.context.summaries.every((s) => s.reused)).toBe(true)
    // The prompt's prefix is unchanged: summaries and the verbatim history up to the new turn are the same objects.
    for (let k = 0; k < 8; k++) expect(turn2.parts[k]).toBe(turn1.parts[k])
    expect(ordinalsOf(turn2).slice(8)).toEqual([
      [130, 'prompt', 'verbatim'],
      [140, 'message', 'verbatim'],
      [-1, 'prompt', 'verbatim'],
    ])
    expect(turn2.stablePrefixEnds).toEqual([4, 10])
    expect(turn2.context.tokens).toMatchObject({ history: 4020, summaries: 200, total: 4230 })
    expectCoverage(turn2, ledger)
    expectTotals(turn2)
    // A block boundary passes on a later turn: the old summaries stay first, only the new block's is needed.
    chat(1, 1000, ledger, 7)
    const turn3 = packSummarize(ledger, 6010, {
      compaction: compaction({ blocks, summaryOf: (b) => (b.start >= 8 ? null : store.of(b)), previousStart: turn2.verbatimStart, previousFirstSummary: turn2.firstSummary }),
    })
    expect(blocks.blocks.map((b) => [b.start, b.end])).toEqual([[0, 2], [2, 4], [4, 6], [6, 8], [8, 10], [10, 12], [12, 16]])
    // drop_oldest keeps 2000 + 20 + 3 × 1000 = 5020 (from 9), past the previous start 8. From 10: 200 + 424 + 4020 = 4644
    // fits, within 5400: only block [8,10) is new.
    expect(turn3.verbatimStart).toBe(10)
    expect(turn3.needed.map(blockKey)).toEqual(['90-100'])
    expect(turn3.context.tokens).toMatchObject({ history: 4020, summaries: 624, total: 4654 })
    for (let k = 0; k < 4; k++) expect(turn3.parts[k]).toBe(turn1.parts[k])
    expectCoverage(turn3, ledger)
    expectTotals(turn3)
  })

  it('a failed compaction: its block is dropped with history_dropped, the turn still packs', () => {
    const ledger = chat(6, 1000)
    const store = new Summaries(50)
    // The compaction of block [2,4) failed (the sandbox's /fail-summary): it is unavailable this turn.
    const packed = packSummarize(ledger, 6010, { compaction: compaction({ summaryOf: store.of, unavailable: new Set(['30-40']) }) })
    // From 8: 50 + 0 + 50 + 50 + 4000 = 4150 <= 5400.
    expect(packed.verbatimStart).toBe(8)
    expect(packed.needed).toEqual([])
    expect(ordinalsOf(packed)).toEqual([
      [10, 'summary', 'summarised'],
      [50, 'summary', 'summarised'],
      [70, 'summary', 'summarised'],
      [90, 'prompt', 'verbatim'],
      [100, 'message', 'verbatim'],
      [110, 'prompt', 'verbatim'],
      [120, 'message', 'verbatim'],
      [-1, 'prompt', 'verbatim'],
    ])
    expect(packed.context.summaries.map((s) => [s.first_ordinal, s.last_ordinal])).toEqual([
      [10, 20],
      [50, 60],
      [70, 80],
    ])
    expect(packed.context.segments).toEqual([
      { first_ordinal: 10, last_ordinal: 20, parts: 2, treatment: 'summarised', tokens: 50 },
      { first_ordinal: 30, last_ordinal: 40, parts: 2, treatment: 'dropped', tokens: 0 },
      { first_ordinal: 50, last_ordinal: 80, parts: 4, treatment: 'summarised', tokens: 100 },
      { first_ordinal: 90, last_ordinal: 120, parts: 4, treatment: 'verbatim', tokens: 4000 },
    ])
    expect(packed.context.dropped).toEqual({ dropped: 2, start_ordinal: 30, end_ordinal: 40 })
    expect(packed.warnings.config).toEqual([
      { code: 'history_dropped', dropped: 2, start_ordinal: 30, end_ordinal: 40, history_mode: 'summarize', message: FAILED },
    ])
    expect(packed.context.tokens).toMatchObject({ history: 4000, summaries: 150, total: 4160 })
    expect(packed.stablePrefixEnds).toEqual([3, 7])
    expectCoverage(packed, ledger)
    expectTotals(packed)
  })

  it('a failed compaction of a block not made yet: dropped, not needed; the other placeholders stay', () => {
    const ledger = chat(6, 1000)
    const packed = packSummarize(ledger, 6010, { compaction: compaction({ unavailable: new Set(['10-20']) }) })
    // From 8: 0 + 3 × 424 + 4000 = 5272 (fits, within 5400).
    expect(packed.verbatimStart).toBe(8)
    expect(packed.needed.map(blockKey)).toEqual(['30-40', '50-60', '70-80'])
    expect(packed.context.segments).toEqual([
      { first_ordinal: 10, last_ordinal: 20, parts: 2, treatment: 'dropped', tokens: 0 },
      { first_ordinal: 30, last_ordinal: 80, parts: 6, treatment: 'summarised', tokens: 1272 },
      { first_ordinal: 90, last_ordinal: 120, parts: 4, treatment: 'verbatim', tokens: 4000 },
    ])
    expect(packed.warnings.config).toEqual([
      { code: 'history_dropped', dropped: 2, start_ordinal: 10, end_ordinal: 20, history_mode: 'summarize', message: FAILED },
    ])
    expectCoverage(packed, ledger)
    expectTotals(packed)
  })

  // Twenty runs of two 512-token parts (ordinals 10 … 400), one 1024-token block a run; summaries of 300 tokens.
  // History budget 6000: the summaries before the verbatim start (18 × 300, below) cannot all be sent.
  it('summaries alone not fitting: the oldest are dropped, several at a time, with history_dropped', () => {
    const ledger = chat(20, 512)
    const store = new Summaries(300)
    const packed = packSummarize(ledger, 6010, { compaction: compaction({ summaryOf: store.of }) })
    // drop_oldest keeps 11 parts (from 29). Summaries count at most their share, floor(6000 × 0.5) = 3000:
    // 30 → 3000 + 5120, 32 → 3000 + 4096, 34 → 3000 + 3072 do not fit; 36 → 3000 + 2048 = 5048 fits, within
    // floor(6000 × 0.9) = 5400. Before 36: 18 summaries, 5400 > 6000 − 2048 = 3952; dropping five (3900) would fit, but the
    // oldest go until the rest fill at most floor(3000 × 0.9) = 2700: 9 × 300 = 2700 stay.
    expect(packed.verbatimStart).toBe(36)
    expect(packed.needed).toEqual([])
    expect(packed.context.summaries.map((s) => s.first_ordinal)).toEqual([190, 210, 230, 250, 270, 290, 310, 330, 350])
    expect(packed.context.segments).toEqual([
      { first_ordinal: 10, last_ordinal: 180, parts: 18, treatment: 'dropped', tokens: 0 },
      { first_ordinal: 190, last_ordinal: 360, parts: 18, treatment: 'summarised', tokens: 2700 },
      { first_ordinal: 370, last_ordinal: 400, parts: 4, treatment: 'verbatim', tokens: 2048 },
    ])
    expect(packed.context.dropped).toEqual({ dropped: 18, start_ordinal: 10, end_ordinal: 180 })
    expect(packed.warnings.config).toEqual([
      { code: 'history_dropped', dropped: 18, start_ordinal: 10, end_ordinal: 180, history_mode: 'summarize', message: NO_ROOM },
    ])
    expect(packed.context.tokens).toMatchObject({ history: 2048, summaries: 2700, current: 10, total: 4758 })
    expect(packed.firstSummary).toBe(18)
    expect(packed.stablePrefixEnds).toEqual([9, 13])
    expectCoverage(packed, ledger)
    expectTotals(packed)
  })

  it('summaries already dropped stay dropped on later turns: the first summary sent does not move back', () => {
    const ledger = chat(20, 512)
    const blocks = new BlockIndex()
    const store = new Summaries(300)
    const turn1 = packSummarize(ledger, 6010, { compaction: compaction({ blocks, summaryOf: store.of }) })
    expect([turn1.verbatimStart, turn1.firstSummary]).toEqual([36, 18])
    // Three more runs (drop_oldest from 35). From the previous start 36: 2700 + 5120 > 6000; 38 → 3000 + 4096 and
    // 40 → 3000 + 3072 do not fit; 42 → 3000 + 2048 = 5048 fits, within 5400. The twelve summaries from block [18,20)
    // on (3600) fit the 3952 left: none dropped.
    chat(3, 512, ledger, 20)
    const later = { blocks, summaryOf: store.of, previousStart: turn1.verbatimStart, previousFirstSummary: turn1.firstSummary }
    const turn2 = packSummarize(ledger, 6010, { compaction: compaction(later) })
    expect(turn2.verbatimStart).toBe(42)
    expect(turn2.firstSummary).toBe(18)
    expect(turn2.context.summaries.map((s) => s.first_ordinal)).toEqual([190, 210, 230, 250, 270, 290, 310, 330, 350, 370, 390, 410])
    for (let k = 0; k < 9; k++) expect(turn2.parts[k]).toBe(turn1.parts[k])
    expect(turn2.context.segments).toEqual([
      { first_ordinal: 10, last_ordinal: 180, parts: 18, treatment: 'dropped', tokens: 0 },
      { first_ordinal: 190, last_ordinal: 420, parts: 24, treatment: 'summarised', tokens: 3600 },
      { first_ordinal: 430, last_ordinal: 460, parts: 4, treatment: 'verbatim', tokens: 2048 },
    ])
    expect(turn2.warnings.config).toEqual([
      { code: 'history_dropped', dropped: 18, start_ordinal: 10, end_ordinal: 180, history_mode: 'summarize', message: EARLIER },
    ])
    expectCoverage(turn2, ledger)
    expectTotals(turn2)
    // Without the previous turn (a rebuilt actor): all 21 summaries before 42 (6300) are candidates, the newest 9 (2700) are kept.
    const fresh = packSummarize(ledger, 6010, { compaction: compaction({ summaryOf: store.of }) })
    expect(fresh.verbatimStart).toBe(42)
    expect(fresh.context.summaries.map((s) => s.first_ordinal)).toEqual([250, 270, 290, 310, 330, 350, 370, 390, 410])
    expectCoverage(fresh, ledger)
    expectTotals(fresh)
  })

  it('the unsealed tail that does not fit is dropped with history_dropped (the gap)', () => {
    // Six sealed 1024-token blocks, then a run of 700 + 300 tokens (1000: not a block yet).
    const ledger = chat(6, 512)
    ledger.add(130, prompt(words(700)), { runId: 'run6' }).add(140, message(words(300)), { runId: 'run6' })
    const store = new Summaries(50)
    const packed = packSummarize(ledger, 710, { compaction: compaction({ summaryOf: store.of }) })
    // History budget 700: drop_oldest keeps the 300-token reply only (from 13). 300 + 300 = 600 <= 700.
    expect(packed.verbatimStart).toBe(13)
    expect(ordinalsOf(packed)).toEqual([
      ...[10, 30, 50, 70, 90, 110].map((o) => [o, 'summary', 'summarised']),
      [140, 'message', 'verbatim'],
      [-1, 'prompt', 'verbatim'],
    ])
    expect(packed.context.segments).toEqual([
      { first_ordinal: 10, last_ordinal: 120, parts: 12, treatment: 'summarised', tokens: 300 },
      { first_ordinal: 130, last_ordinal: 130, parts: 1, treatment: 'dropped', tokens: 0 },
      { first_ordinal: 140, last_ordinal: 140, parts: 1, treatment: 'verbatim', tokens: 300 },
    ])
    expect(packed.warnings.config).toEqual([
      { code: 'history_dropped', dropped: 1, start_ordinal: 130, end_ordinal: 130, history_mode: 'summarize', message: UNSEALED },
    ])
    expect(packed.context.tokens).toMatchObject({ history: 300, summaries: 300, total: 610 })
    expect(packed.stablePrefixEnds).toEqual([6, 7])
    expectCoverage(packed, ledger)
    expectTotals(packed)
  })

  it('drop_oldest ignores compaction entirely', () => {
    const ledger = chat(6, 1000)
    const blocks = new BlockIndex()
    const store = new Summaries(50)
    const budget: ContextBudget = { ...SUMMARIZE, history_mode: 'drop_oldest' }
    const packed = packSummarize(ledger, 6010, { budget, compaction: compaction({ blocks, summaryOf: store.of, unavailable: new Set(['10-20']) }) })
    const without = packSummarize(chat(6, 1000), 6010, { budget })
    expect(store.asked).toBe(0)
    expect(blocks.blocks).toEqual([])
    expect(packed.needed).toEqual([])
    expect(packed.context.summaries).toEqual([])
    expect(packed.verbatimStart).toBe(6)
    expect(ordinalsOf(packed)).toEqual(ordinalsOf(without))
    expect(packed.context).toEqual(without.context)
    expect(packed.warnings).toEqual(without.warnings)
    expect(packed.warnings.config).toEqual([{ code: 'history_dropped', dropped: 6, start_ordinal: 10, end_ordinal: 60 }])
    expect(packed.context.tokens).toMatchObject({ history: 6000, summaries: 0, total: 6010 })
  })

  it('summarize without compaction input drops as drop_oldest does, and says summaries are not made here', () => {
    const packed = packSummarize(chat(6, 1000), 6010, { budget: { version: 3, headroom: 0 } })
    expect(packed.context.dropped).toEqual({ dropped: 6, start_ordinal: 10, end_ordinal: 60 })
    expect(packed.warnings.config).toEqual([
      {
        code: 'history_dropped',
        dropped: 6,
        start_ordinal: 10,
        end_ordinal: 60,
        history_mode: 'summarize',
        message: 'the oldest history was dropped as under drop_oldest: summaries are not made here',
      },
    ])
  })

  it('a history that fits is sent whole: no summary is asked for', () => {
    const ledger = chat(6, 1000)
    const store = new Summaries(50)
    const packed = packSummarize(ledger, 12_010, { compaction: compaction({ summaryOf: store.of }) })
    expect(store.asked).toBe(0)
    expect(packed.verbatimStart).toBe(0)
    expect(packed.firstSummary).toBeNull()
    expect(packed.context.summaries).toEqual([])
    expect(packed.context.segments).toEqual([{ first_ordinal: 10, last_ordinal: 120, parts: 12, treatment: 'verbatim', tokens: 12_000 }])
    expect(packed.stablePrefixEnds).toEqual([12])
  })

  it('anchors are in no block: blocks begin after them, no summary covers them, the anchors are sent once (defect 1 of issue 21)', () => {
    // Six runs of 512 + 512; the first part is an anchor. Instructions 7 and tools 5 tokens.
    const ledger = chat(6, 512)
    const rules: RetentionRules = { version: 1, anchor_parts: 1 }
    const store = new Summaries(50)
    // Input budget 4534 − instructions, tools, anchor and input (534) = 4000.
    const packed = packSummarize(ledger, 4534, { rules, instructionsTokens: 7, toolsTokens: 5, compaction: compaction({ summaryOf: store.of }) })
    // Blocks from entry 1: [1,3), [3,5), … drop_oldest keeps 7 parts (from 5). From 5: 100 + 3584 = 3684 fits,
    // above floor(4000 × 0.9) = 3600; from 7: 150 + 2560 = 2710.
    expect(packed.verbatimStart).toBe(7)
    expect(ordinalsOf(packed)).toEqual([
      [10, 'prompt', 'verbatim'],
      [20, 'summary', 'summarised'],
      [40, 'summary', 'summarised'],
      [60, 'summary', 'summarised'],
      [80, 'message', 'verbatim'],
      [90, 'prompt', 'verbatim'],
      [100, 'message', 'verbatim'],
      [110, 'prompt', 'verbatim'],
      [120, 'message', 'verbatim'],
      [-1, 'prompt', 'verbatim'],
    ])
    expect(packed.parts[0]!.content).toEqual({ type: 'prompt', text: words(512), attachments: [] })
    // The first summary's range starts after the anchor: the manifest's ranges never overlap a verbatim segment.
    expect(packed.context.summaries.map((s) => [s.first_ordinal, s.last_ordinal])).toEqual([
      [20, 30],
      [40, 50],
      [60, 70],
    ])
    expect(packed.context.segments).toEqual([
      { first_ordinal: 10, last_ordinal: 10, parts: 1, treatment: 'verbatim', tokens: 512 },
      { first_ordinal: 20, last_ordinal: 70, parts: 6, treatment: 'summarised', tokens: 150 },
      { first_ordinal: 80, last_ordinal: 120, parts: 5, treatment: 'verbatim', tokens: 2560 },
    ])
    expect(packed.context.tokens).toEqual({ instructions: 7, tools: 5, anchors: 512, history: 2560, summaries: 150, current: 10, total: 3244 })
    expect(packed.stablePrefixEnds).toEqual([4, 9])
    expectCoverage(packed, ledger)
    expectTotals(packed, 7, 5)
  })

  it('anchors covering whole blocks: blocks begin after the third part', () => {
    const ledger = chat(6, 512)
    const store = new Summaries(50)
    // Anchors: the first 3 parts (1536 tokens); history budget 4000 again.
    const packed = packSummarize(ledger, 5546, { rules: { version: 1, anchor_parts: 3 }, compaction: compaction({ summaryOf: store.of }) })
    // Blocks [3,5), [5,7), … drop_oldest keeps 7 parts of 9 (from 5). From 5: 50 + 3584 = 3634 fits, above 3600;
    // from 7: 100 + 2560 = 2660.
    expect(packed.verbatimStart).toBe(7)
    expect(packed.context.summaries.map((s) => [s.first_ordinal, s.last_ordinal])).toEqual([
      [40, 50],
      [60, 70],
    ])
    expect(packed.context.segments).toEqual([
      { first_ordinal: 10, last_ordinal: 30, parts: 3, treatment: 'verbatim', tokens: 1536 },
      { first_ordinal: 40, last_ordinal: 70, parts: 4, treatment: 'summarised', tokens: 100 },
      { first_ordinal: 80, last_ordinal: 120, parts: 5, treatment: 'verbatim', tokens: 2560 },
    ])
    expect(packed.stablePrefixEnds).toEqual([5, 10])
    expect(packed.warnings.config).toEqual([])
    expectCoverage(packed, ledger)
    expectTotals(packed)
  })

  it('a change of anchor_parts cuts the blocks again from the new end of the anchors', () => {
    const ledger = chat(6, 512)
    const blocks = new BlockIndex()
    const store = new Summaries(50)
    packSummarize(ledger, 4534, { rules: { version: 1, anchor_parts: 1 }, compaction: compaction({ blocks, summaryOf: store.of }) })
    expect(blocks.blocks[0]).toMatchObject({ start: 1, firstOrdinal: 20 })
    packSummarize(ledger, 5546, { rules: { version: 1, anchor_parts: 3 }, compaction: compaction({ blocks, summaryOf: store.of }) })
    expect(blocks.blocks[0]).toMatchObject({ start: 3, firstOrdinal: 40 })
  })
})

const RUNS = Number(process.env.FC_RUNS ?? 100)

describe('packContext under summarize, property-based', () => {
  test('a tool-using chat over many turns: within budget, every ordinal once, exact totals, nothing more needed once made', () => {
    const arbRun = fc.record({
      prompt: fc.nat({ max: 1500 }),
      outputs: fc.array(fc.record({ kind: fc.constantFrom('reasoning', 'message', 'call'), tokens: fc.nat({ max: 900 }) }), { maxLength: 4 }),
      result: fc.nat({ max: 900 }),
    })
    fc.assert(
      fc.property(
        fc.array(arbRun, { minLength: 1, maxLength: 30 }),
        fc.integer({ min: 1500, max: 9000 }),
        fc.nat({ max: 3 }),
        // Summary sizes (never above the estimate), which compactions fail, and how often the chat takes a turn.
        fc.array(fc.integer({ min: 15, max: SUMMARY_ESTIMATE_TOKENS }), { minLength: 1, maxLength: 7 }),
        fc.array(fc.boolean(), { minLength: 1, maxLength: 5 }),
        fc.integer({ min: 1, max: 4 }),
        (runs, window, anchorParts, sizes, fails, every) => {
          const ledger = new Ledger()
          const blocks = new BlockIndex()
          const store = new Map<string, BlockSummary>()
          const theModel = model(window)
          const rules: RetentionRules = { version: 1, anchor_parts: anchorParts }
          let ordinal = 0
          let calls = 0
          let pending: string[] = []
          let previous: { start: number; first: number | null } | null = null
          runs.forEach((run, r) => {
            const runId = `run${r}`
            for (const id of pending) ledger.add(++ordinal, result(id, 'search', words(run.result)), { runId })
            pending = []
            ledger.add(++ordinal, prompt(words(run.prompt)), { runId })
            for (const out of run.outputs) {
              if (out.kind === 'reasoning') ledger.add(++ordinal, reasoning(words(out.tokens)), { runId })
              else if (out.kind === 'message') ledger.add(++ordinal, message(words(out.tokens)), { runId })
              else {
                const id = `c${++calls}`
                pending.push(id)
                ledger.add(++ordinal, call(id, 'search', words(out.tokens)), { runId })
              }
            }
            if (r % every !== 0) return

            // Admission packs with the summaries there are; the compactions run (some fail); the turn is packed again.
            const unavailable = new Set<string>()
            const turn = (madeNow: ReadonlySet<string>) => {
              let packed: Packed
              try {
                packed = pack({
                  history: ledger.history,
                  model: theModel,
                  rules,
                  budget: SUMMARIZE,
                  newParts: NEW,
                  compaction: compaction({
                    blocks,
                    summaryOf: (b) => store.get(blockKey(b)) ?? null,
                    unavailable,
                    madeNow,
                    previousStart: previous?.start ?? null,
                    previousFirstSummary: previous?.first ?? null,
                  }),
                })
              } catch (e) {
                if (e instanceof ContextTooLargeError) return null
                throw e
              }
              previous = { start: packed.verbatimStart, first: packed.firstSummary }
              return packed
            }
            const admitted = turn(new Set())
            if (admitted === null) return
            const made = new Set<string>()
            admitted.needed.forEach((b, i) => {
              const key = blockKey(b)
              if (fails[i % fails.length] && i % 3 === 2) unavailable.add(key)
              else {
                store.set(key, { firstOrdinal: b.firstOrdinal, lastOrdinal: b.lastOrdinal, text: 'x', tokens: sizes[(b.start + i) % sizes.length]!, runId: `c-${key}` })
                made.add(key)
              }
            })
            const final = admitted.needed.length > 0 ? turn(made) : admitted
            expect(final).not.toBeNull()
            expect(final!.needed).toEqual([])
            for (const p of [admitted, final!]) {
              expectCoverage(p, ledger)
              expectTotals(p)
              const t = p.context.tokens
              expect(t.history + t.summaries).toBeLessThanOrEqual(p.context.history_budget)
              const dropped = p.context.segments.filter((s) => s.treatment === 'dropped').reduce((n, s) => n + s.parts, 0)
              expect(p.context.dropped?.dropped ?? 0).toBe(dropped)
              expect(p.warnings.config.map((w) => w.code)).toEqual(dropped > 0 ? ['history_dropped'] : [])
              // Verbatim history begins where a kept range may begin: no call is parted from its result.
              expect(p.verbatimStart === ledger.history.length || ledger.history.canStart[p.verbatimStart]).toBe(true)
              expect(p.parts.filter((x) => x.kind === 'summary' && x.content === null).map((x) => x.ordinal)).toEqual(p.needed.map((b) => b.firstOrdinal))
              const sent = p.parts.filter((x) => x.ordinal !== -1 && x.kind !== 'summary').map((x) => x.ordinal)
              expect(sent).toEqual([...new Set(sent)].sort((a, b) => a - b))
              for (const s of p.context.summaries) expect(s.reused).toBe(!made.has(`${s.first_ordinal}-${s.last_ordinal}`) || p === admitted)
            }
          })
        },
      ),
      { numRuns: RUNS },
    )
  })
})
