import { floorTimes } from './budget.ts'
import { blockKey, type Block } from './cut-blocks.ts'
import type { BlockSummary } from './render-summary.ts'

/**
 * When the verbatim history has to move forward, it moves far enough that the history then fills
 * at most this share of its budget: the next turns add to an unchanged prompt (a vendor's prefix
 * cache reads it again) instead of each turn summarising one more block.
 */
export const JUMP_FILL = 0.75

/**
 * The share of the history budget summaries keep for themselves when there is not room for all
 * of them: the verbatim history never squeezes them below it, and they never grow past it. Within
 * that share the oldest summaries go, several at a time, so the summaries sent change at their
 * start only now and then (each change costs a vendor's prefix cache the whole prompt after it).
 */
export const SUMMARY_SHARE = 0.5

/** What a turn sends in place of the history's oldest blocks. */
export type SummaryChoice =
  | { kind: 'summary'; block: Block; summary: BlockSummary }
  /** Needed and not made yet: the turn makes it (or it is being made) before it streams. */
  | { kind: 'needed'; block: Block }
  /** Not sent: its compaction failed, or the summaries alone did not fit. */
  | { kind: 'dropped'; block: Block }

export type SummaryPlan = {
  /** The first history entry sent verbatim. */
  verbatimStart: number
  /** Entries of the blocks before the previous turn's first summary: dropped, not looked at again. */
  skipped: { start: number; end: number } | null
  choices: SummaryChoice[]
  /** History entries between the last summarised block and `verbatimStart`: not sealed yet, and did not fit. */
  gap: { start: number; end: number } | null
  summaryTokens: number
  /** Where the first summary sent begins (an entry index), for the next turn's `previousFirstSummary`. */
  firstSummary: number | null
}

export type PlanInput = {
  /** Sealed blocks, in order, covering the history from its start. */
  blocks: readonly Block[]
  anchorEnd: number
  currentStart: number
  /** Where drop_oldest would begin the kept history: verbatim cannot start earlier. */
  keptFrom: number
  /** Tokens of the verbatim history from entry `start` on, as the walk rendered it (start >= keptFrom). */
  verbatimFrom: (start: number) => number
  allowance: number
  summaryOf: (block: Block) => BlockSummary | null
  /** Blocks (by blockKey) that are not to be made this turn: their compaction failed. */
  unavailable: ReadonlySet<string>
  /** Tokens set aside for a summary not made yet. */
  estimate: number
  /** The verbatim start of the chat's previous turn: kept while it still fits, for the prefix cache. */
  previousStart: number | null
  /** Where the previous turn's first sent summary began (an entry index): older ones stay dropped. */
  previousFirstSummary: number | null
}

/**
 * docs/guide/context.md `summarize`: the oldest history goes as summaries of whole sealed blocks, the rest
 * verbatim from a block boundary. The boundary is the earliest that fits at or after the previous
 * turn's; when it must move, it moves until the history fills at most JUMP_FILL of the budget.
 * When the summaries do not all fit, they keep SUMMARY_SHARE of the budget and the oldest are
 * dropped, never from earlier than the previous turn's first, several at a time.
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
  // Blocks with something besides anchors, sealed before the current exchange. Those before the
  // previous turn's first summary stay dropped and are not looked at again: a turn costs what it sends.
  const firstEligible = firstWhere((b) => b.end > anchorEnd)
  const to = Math.max(firstEligible, firstWhere((b) => b.end > currentStart))
  const hinted =
    input.previousFirstSummary === null ? firstEligible : Math.min(to, Math.max(firstEligible, firstWhere((b) => b.start >= input.previousFirstSummary!)))
  const skipped = hinted > firstEligible ? { start: Math.max(anchorEnd, blocks[firstEligible]!.start), end: blocks[hinted - 1]!.end } : null
  const eligible = blocks.slice(hinted, to)
  const lastEnd = eligible.at(-1)?.end ?? skipped?.end ?? anchorEnd
  const starts = eligible.filter((b) => b.end >= keptFrom).map((b) => b.end)
  if (keptFrom > lastEnd || starts.length === 0) starts.push(Math.max(keptFrom, lastEnd))

  const tokensOf = (b: Block) => {
    if (input.unavailable.has(blockKey(b))) return 0
    return input.summaryOf(b)?.tokens ?? input.estimate
  }
  // Summary tokens of eligible[0..k), and how many eligible blocks end at or before a start.
  const sums = [0]
  for (const b of eligible) sums.push(sums.at(-1)! + tokensOf(b))
  let counted = 0
  const countBefore = new Map<number, number>()
  for (const s of starts) {
    while (counted < eligible.length && eligible[counted]!.end <= s) counted++
    countBefore.set(s, counted)
  }
  const summarised = (start: number) => eligible.slice(0, countBefore.get(start)!)
  // What the summaries may take: all of them while they fit, at least their share once they do not.
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

  // The summaries sent: the newest that fit, never from earlier than the previous turn's first.
  const before = summarised(verbatimStart)
  const suffix = new Array<number>(before.length + 1).fill(0)
  for (let k = before.length - 1; k >= 0; k--) suffix[k] = suffix[k + 1]! + tokensOf(before[k]!)
  const room = allowance - input.verbatimFrom(verbatimStart)
  let first = 0
  if (suffix[first]! > room) {
    // Oldest first, until they fill at most JUMP_FILL of their share: the next turns add to them unchanged
    // (the verbatim history leaves them their share until its start moves again).
    const target = floorTimes(Math.max(0, Math.min(room, share)), JUMP_FILL)
    while (first < before.length && suffix[first]! > target) first++
  }
  const choices: SummaryChoice[] = before.map((block, k) => {
    if (k < first || input.unavailable.has(blockKey(block))) return { kind: 'dropped', block }
    const summary = input.summaryOf(block)
    return summary ? { kind: 'summary', block, summary } : { kind: 'needed', block }
  })
  const summaryTokens = suffix[first]!
  // None sent: the next turn is not held to any (a large input may have left them no room this once).
  const firstSummary = first < before.length ? before[first]!.start : null
  const summarisedEnd = choices.at(-1)?.block.end ?? skipped?.end ?? anchorEnd
  const gapStart = Math.max(anchorEnd, summarisedEnd)
  return { verbatimStart, skipped, choices, gap: verbatimStart > gapStart ? { start: gapStart, end: verbatimStart } : null, summaryTokens, firstSummary }
}
