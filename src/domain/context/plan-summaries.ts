import { floorTimes } from './budget.ts'
import { blockKey, type Block } from './cut-blocks.ts'
import type { BlockSummary } from './render-summary.ts'

/**
 * When the verbatim history has to move forward, it moves far enough that the history then fills
 * at most this share of its budget: the next turns add to an unchanged prompt (a vendor's prefix
 * cache reads it again) instead of each turn summarising one more block.
 */
export const JUMP_FILL = 0.9

/**
 * The share of the history budget summaries keep for themselves when there is not room for all
 * of them: the verbatim history never squeezes them below it, and they never grow past it. Within
 * that share the oldest summaries are merged into one (decisions §5.3), several at a time, so the
 * summaries sent change at their start only now and then (each change costs a vendor's prefix
 * cache the whole prompt after it).
 */
export const SUMMARY_SHARE = 0.5

/** What a turn sends in place of the history's oldest blocks. */
export type SummaryChoice =
  /** A made summary: of one block, or a merged one of several (its `block` spans them). */
  | { kind: 'summary'; block: Block; summary: BlockSummary }
  /** Needed and not made yet: the turn makes it (or it is being made) before it streams. */
  | { kind: 'needed'; block: Block }
  /**
   * The oldest summaries merged into one, not made yet: `of` are the ranges it merges, oldest first
   * (the chat's merged summary, then blocks, whose summaries are made first where missing);
   * `tokens` what packing sets aside for it.
   */
  | { kind: 'merge'; block: Block; of: Block[]; tokens: number }
  /** Not sent: its compaction failed, or even a merged summary did not fit. */
  | { kind: 'dropped'; block: Block }

export type SummaryPlan = {
  /** The first history entry sent verbatim. */
  verbatimStart: number
  /** Entries before the first summary the chat may send (its merged summary, or the previous turn's first): dropped, not looked at again. */
  skipped: { start: number; end: number } | null
  choices: SummaryChoice[]
  /** History entries between the last summarised block and `verbatimStart`: not sealed yet, and did not fit. */
  gap: { start: number; end: number } | null
  summaryTokens: number
  /** Where the first summary sent begins (an entry index), for the next turn's `previousFirstSummary`. */
  firstSummary: number | null
}

export type PlanInput = {
  /** Sealed blocks, in order, covering the history from the end of the anchors. */
  blocks: readonly Block[]
  anchorEnd: number
  currentStart: number
  /** Where drop_oldest would begin the kept history: verbatim cannot start earlier. */
  keptFrom: number
  /** Tokens of the verbatim history from entry `start` on, as the walk rendered it (start >= keptFrom). */
  verbatimFrom: (start: number) => number
  allowance: number
  /** The stored summary of a range (a block's, or a merged one), by its ordinals. */
  summaryOf: (block: Block) => BlockSummary | null
  /** The chat's latest merged summary: the summaries begin with it while its range is cut as blocks. */
  merged: BlockSummary | null
  /** Ranges (by blockKey) that are not to be made this turn: their compaction failed. */
  unavailable: ReadonlySet<string>
  /** Tokens set aside for a block summary not made yet. */
  estimate: number
  /** The most a merged summary costs as sent (src/domain/context/compaction-sizes.ts). */
  mergedBound: number
  /** The most a merge may read: the summaries it merges, in tokens. */
  mergeInputTokens: number
  /** The verbatim start of the chat's previous turn: kept while it still fits, for the prefix cache. */
  previousStart: number | null
  /** Where the previous turn's first sent summary began (an entry index): older ones stay dropped. */
  previousFirstSummary: number | null
}

/** One block, or a run of consecutive blocks, as one range. */
export const spanOf = (first: Block, last: Block): Block =>
  first === last
    ? first
    : { start: first.start, end: last.end, firstOrdinal: first.firstOrdinal, lastOrdinal: last.lastOrdinal, parts: last.end - first.start, tokens: 0 }

type Unit = { block: Block; summary: BlockSummary | null; tokens: number; available: boolean }

/**
 * docs/guide/context.md `summarize`: the newest history verbatim from a block boundary, the older as
 * summaries of whole sealed blocks, the oldest of those merged into one when they no longer fit
 * (decisions §5.3); dropped only what even a merge cannot hold. The boundary is the earliest that
 * fits at or after the previous turn's; when it must move, it moves until the history fills at
 * most JUMP_FILL of the budget. A turn costs what it sends: blocks before the chat's merged summary
 * (or the previous turn's first summary) are not looked at again.
 */
export function planSummaries(input: PlanInput): SummaryPlan {
  const { blocks, anchorEnd, currentStart, keptFrom, allowance } = input
  /** The first block from which `holds` is true (it stays true after): blocks are in ledger order. */
  const firstWhere = (holds: (b: Block) => boolean) => {
    let lo = 0
    let hi = blocks.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (holds(blocks[mid]!)) hi = mid
      else lo = mid + 1
    }
    return lo
  }
  const to = firstWhere((b) => b.end > currentStart)
  const tokensOf = (block: Block, summary: BlockSummary | null) => (input.unavailable.has(blockKey(block)) ? 0 : summary?.tokens ?? input.estimate)
  const unit = (block: Block, summary = input.summaryOf(block)): Unit => ({ block, summary, tokens: tokensOf(block, summary), available: !input.unavailable.has(blockKey(block)) })

  // Where the summaries may begin: the merged summary's range when it is still cut as blocks, else
  // the previous turn's first summary, else the first block.
  let first = 0
  let merged: Unit | null = null
  const hinted = input.previousFirstSummary === null ? 0 : Math.min(to, firstWhere((b) => b.start >= input.previousFirstSummary!))
  if (input.merged) {
    const m = input.merged
    const a = firstWhere((b) => b.firstOrdinal >= m.firstOrdinal)
    const z = firstWhere((b) => b.lastOrdinal >= m.lastOrdinal)
    if (z < to && blocks[a]?.firstOrdinal === m.firstOrdinal && blocks[z]!.lastOrdinal === m.lastOrdinal && hinted <= a) {
      merged = unit(spanOf(blocks[a]!, blocks[z]!), m)
      first = a
    }
  }
  if (merged === null) first = hinted
  const skipped = first > 0 ? { start: blocks[0]!.start, end: blocks[first - 1]!.end } : null
  const units: Unit[] = merged ? [merged] : []
  for (let k = merged ? firstWhere((b) => b.start >= merged.block.end) : first; k < to; k++) units.push(unit(blocks[k]!))

  const lastEnd = units.at(-1)?.block.end ?? skipped?.end ?? anchorEnd
  const starts = units.filter((u) => u.block.end >= keptFrom).map((u) => u.block.end)
  if (keptFrom > lastEnd || starts.length === 0) starts.push(Math.max(keptFrom, lastEnd))

  // Summary tokens of units[0..k), and how many units end at or before a start.
  const sums = [0]
  for (const u of units) sums.push(sums.at(-1)! + u.tokens)
  let counted = 0
  const countBefore = new Map<number, number>()
  for (const s of starts) {
    while (counted < units.length && units[counted]!.block.end <= s) counted++
    countBefore.set(s, counted)
  }
  // What the summaries may take: all of them while they fit, at least their share once they do not
  // (merged, they fit it).
  const share = floorTimes(Math.max(0, allowance), SUMMARY_SHARE)
  const costOf = (start: number) => Math.min(sums[countBefore.get(start)!]!, share) + input.verbatimFrom(start)

  const floor = Math.max(keptFrom, input.previousStart !== null && input.previousStart <= starts.at(-1)! ? input.previousStart : 0)
  const from = starts.filter((s) => s >= floor)
  const candidates = from.length > 0 ? from : [starts.at(-1)!]
  let chosen = candidates.find((s) => costOf(s) <= allowance)
  if (chosen !== undefined && chosen !== input.previousStart) {
    // Moving on for room never takes the whole history into summaries: the newest stays verbatim.
    const roomy = floorTimes(Math.max(0, allowance), JUMP_FILL)
    const keepingSome = candidates.filter((s) => s >= chosen! && input.verbatimFrom(s) > 0)
    chosen = keepingSome.find((s) => costOf(s) <= roomy) ?? keepingSome.at(-1) ?? chosen
  }
  // Nothing leaves the summaries their share: the least verbatim history.
  const verbatimStart = chosen ?? candidates.at(-1)!

  const before = units.slice(0, countBefore.get(verbatimStart)!)
  const room = allowance - input.verbatimFrom(verbatimStart)
  const fit = fitSummaries(before, room, floorTimes(Math.max(0, Math.min(room, share)), JUMP_FILL), input)

  const choices: SummaryChoice[] = []
  let summaryTokens = 0
  let firstSummary: number | null = null
  const send = (choice: SummaryChoice, tokens: number) => {
    choices.push(choice)
    summaryTokens += tokens
    firstSummary ??= choice.block.start
  }
  before.forEach((u, k) => {
    if (k < fit.dropped || !u.available) return void choices.push({ kind: 'dropped', block: u.block })
    if (k < fit.dropped + fit.merged) {
      if (k > fit.dropped) return
      const of = before.slice(k, k + fit.merged).map((m) => m.block)
      const block = spanOf(of[0]!, of.at(-1)!)
      const made = input.summaryOf(block)
      return made ? send({ kind: 'summary', block, summary: made }, made.tokens) : send({ kind: 'merge', block, of, tokens: fit.mergedTokens }, fit.mergedTokens)
    }
    send(u.summary ? { kind: 'summary', block: u.block, summary: u.summary } : { kind: 'needed', block: u.block }, u.tokens)
  })
  const summarisedEnd = choices.at(-1)?.block.end ?? skipped?.end ?? anchorEnd
  const gapStart = Math.max(anchorEnd, summarisedEnd)
  return { verbatimStart, skipped, choices, gap: verbatimStart > gapStart ? { start: gapStart, end: verbatimStart } : null, summaryTokens, firstSummary }
}

/**
 * Which of the summaries before the verbatim history go (`dropped`, the oldest), and how many after
 * them are merged into one (`merged`: 0, or at least 2). All are sent while they fit `room`. Else
 * the fewest are dropped, then the fewest merged, so that the rest fill at most `target` (JUMP_FILL
 * of their share: the next turns add to them unchanged); a merge may fill `room` when nothing else
 * keeps as much. A merge reads at most `mergeInputTokens`, and never a range whose compaction failed.
 */
function fitSummaries(units: readonly Unit[], room: number, target: number, input: PlanInput): { dropped: number; merged: number; mergedTokens: number } {
  const n = units.length
  const sums = [0]
  for (const u of units) sums.push(sums.at(-1)! + u.tokens)
  const sum = (i: number, j: number) => sums[j]! - sums[i]!
  if (sum(0, n) <= room) return { dropped: 0, merged: 0, mergedTokens: 0 }
  // The first unit at or after i that cannot be merged (its compaction failed).
  const blockedFrom = new Array<number>(n + 1).fill(n)
  for (let i = n - 1; i >= 0; i--) blockedFrom[i] = units[i]!.available ? blockedFrom[i + 1]! : i
  const mergeAt = (d: number, goal: number) => {
    for (let e = d + 2; e <= Math.min(n, blockedFrom[d]!); e++) {
      const read = sum(d, e)
      if (read > input.mergeInputTokens) break
      const tokens = Math.min(input.mergedBound, read)
      // A merge planned no smaller than what it reads saves nothing.
      if (tokens >= read || tokens + sum(e, n) > goal) continue
      if (input.unavailable.has(blockKey(spanOf(units[d]!.block, units[e - 1]!.block)))) break
      return { dropped: d, merged: e - d, mergedTokens: tokens }
    }
    return null
  }
  for (let d = 0; d <= n; d++) {
    const merge = mergeAt(d, target)
    if (merge) return merge
    if (sum(d, n) <= target) return { dropped: d, merged: 0, mergedTokens: 0 }
    // A merge that fits only the room left still keeps more than dropping does.
    const tight = mergeAt(d, room)
    if (tight) return tight
  }
  return { dropped: n, merged: 0, mergedTokens: 0 }
}
