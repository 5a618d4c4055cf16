import { floorTimes } from './budget.ts'
import { blockKey, type Block } from './cut-blocks.ts'
import type { BlockSummary } from './render-summary.ts'

/**
 * When the verbatim history has to move forward, it moves far enough that the history then fills
 * at most this share of its budget: the next turns add to an unchanged prompt (a vendor's prefix
 * cache reads it again) instead of each turn summarising one more block.
 */
export const JUMP_FILL = 0.75

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
  choices: SummaryChoice[]
  /** History entries between the last summarised block and `verbatimStart`: not sealed yet, and did not fit. */
  gap: { start: number; end: number } | null
  summaryTokens: number
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
}

/**
 * decisions §5.3 `summarize`: the oldest history goes as summaries of whole sealed blocks, the rest
 * verbatim from a block boundary. The boundary is the earliest that fits at or after the previous
 * turn's; when it must move, it moves until the history fills at most JUMP_FILL of the budget. If
 * the summaries alone still do not fit, the oldest are dropped.
 */
export function planSummaries(input: PlanInput): SummaryPlan {
  const { blocks, anchorEnd, currentStart, keptFrom, allowance } = input
  const eligible = blocks.filter((b) => b.end > anchorEnd && b.end <= currentStart)
  const lastEnd = eligible.at(-1)?.end ?? anchorEnd
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
  const costOf = (start: number) => sums[countBefore.get(start)!]! + input.verbatimFrom(start)

  const floor = Math.max(keptFrom, input.previousStart !== null && input.previousStart <= starts.at(-1)! ? input.previousStart : 0)
  const from = starts.filter((s) => s >= floor)
  const candidates = from.length > 0 ? from : [starts.at(-1)!]
  let chosen = candidates.find((s) => costOf(s) <= allowance)
  if (chosen !== undefined && chosen !== input.previousStart) {
    const roomy = floorTimes(Math.max(0, allowance), JUMP_FILL)
    chosen = candidates.find((s) => s >= chosen! && costOf(s) <= roomy) ?? chosen
  }
  const verbatimStart = chosen ?? candidates[0]!

  const choices: SummaryChoice[] = summarised(verbatimStart).map((block) => {
    if (input.unavailable.has(blockKey(block))) return { kind: 'dropped', block }
    const summary = input.summaryOf(block)
    return summary ? { kind: 'summary', block, summary } : { kind: 'needed', block }
  })
  // Summaries alone do not fit: the oldest go.
  let summaryTokens = choices.reduce((sum, c) => sum + (c.kind === 'dropped' ? 0 : tokensOf(c.block)), 0)
  const room = allowance - input.verbatimFrom(verbatimStart)
  for (let k = 0; k < choices.length && summaryTokens > room; k++) {
    const choice = choices[k]!
    if (choice.kind === 'dropped') continue
    summaryTokens -= tokensOf(choice.block)
    choices[k] = { kind: 'dropped', block: choice.block }
  }
  const summarisedEnd = choices.at(-1)?.block.end ?? anchorEnd
  const gapStart = Math.max(anchorEnd, summarisedEnd)
  return { verbatimStart, choices, gap: verbatimStart > gapStart ? { start: gapStart, end: verbatimStart } : null, summaryTokens }
}
