import { summaryTokens } from './render-summary.ts'

/**
 * What compaction works with on one chat's window (decisions §5.3: "blocks, summary shares and
 * estimates follow the window"): sized from the history budget's ceiling, so a 983-token budget
 * cuts blocks of about 120 tokens and a 115k one blocks of 1,024, as before.
 */
export type CompactionSizes = {
  /** A block closes at the first boundary once it holds this many estimated tokens. */
  blockTokens: number
  /** A block's compaction run writes at most this many tokens (its max_tokens). */
  summaryMaxTokens: number
  /** A merge's compaction run writes at most this many tokens. */
  mergedMaxTokens: number
  /** A merge reads at most this many tokens of summaries: it fits any window the chat's budget fits. */
  mergeInputTokens: number
}

/** Blocks hold an eighth of the history's ceiling: a budget holds several, and eager work finds sealed ones early. */
const BLOCKS_PER_BUDGET = 8
const MIN_BLOCK_TOKENS = 64
/** Sized for 128k models (decision 013): blocks larger than this summarise too much at once. */
export const MAX_BLOCK_TOKENS = 1024
/** A summary is at most this share of its block: shorter than what it replaces. */
const SUMMARY_RATIO = 0.4
const MIN_SUMMARY_TOKENS = 32
const MAX_SUMMARY_TOKENS = 400
const MAX_MERGED_TOKENS = 1600

const clamp = (n: number, min: number, max: number) => Math.min(max, Math.max(min, n))

/** `historyCeiling`: the input budget in estimate units, capped by `max_history_tokens`. */
export function compactionSizes(historyCeiling: number): CompactionSizes {
  const ceiling = Math.max(0, Math.floor(historyCeiling))
  const blockTokens = clamp(Math.floor(ceiling / BLOCKS_PER_BUDGET), MIN_BLOCK_TOKENS, MAX_BLOCK_TOKENS)
  const summaryMaxTokens = clamp(Math.floor(blockTokens * SUMMARY_RATIO), MIN_SUMMARY_TOKENS, MAX_SUMMARY_TOKENS)
  const mergedMaxTokens = clamp(Math.floor(ceiling / BLOCKS_PER_BUDGET), summaryMaxTokens, MAX_MERGED_TOKENS)
  return { blockTokens, summaryMaxTokens, mergedMaxTokens, mergeInputTokens: Math.max(ceiling, 2 * mergedMaxTokens) }
}

/** The most a summary written with `maxTokens` can cost as sent: the text and its frame. */
export const summaryBound = (maxTokens: number): number => maxTokens + summaryTokens(1_000_000, 1_000_000, '')

/**
 * What packing sets aside for a block summary not made yet: the largest of the chat's recent
 * summaries when it has made some (a model's summaries of similar blocks are of similar length),
 * never more than a summary can be; the bound until then.
 */
export function unmadeSummaryEstimate(recentTokens: readonly number[], maxTokens: number): number {
  const bound = summaryBound(maxTokens)
  if (recentTokens.length === 0) return bound
  return Math.min(bound, Math.max(...recentTokens))
}
