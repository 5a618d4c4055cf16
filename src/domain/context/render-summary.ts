import { estimateTokens } from '../tokens/estimate-tokens.ts'
import type { PackedPart } from './context-types.ts'

/**
 * A stored summary of a block of the ledger (docs/guide/context.md), or of several consecutive
 * blocks when the oldest summaries were merged into one (`merged`, decisions §5.3).
 */
export type BlockSummary = {
  firstOrdinal: number
  lastOrdinal: number
  text: string
  /** The estimate of the summary as sent (render-summary.ts), what packing budgets for it. */
  tokens: number
  runId: string
  merged?: boolean
}

/**
 * The text a summary is sent as: framed so the model reads it as an account of older turns, not as
 * the customer's words. Packing and the stored estimate use this one function.
 */
export function summaryText(firstOrdinal: number, lastOrdinal: number, text: string): string {
  return `<conversation_summary ordinals="${firstOrdinal}-${lastOrdinal}">\n${text}\n</conversation_summary>`
}

export const summaryTokens = (firstOrdinal: number, lastOrdinal: number, text: string): number =>
  estimateTokens(summaryText(firstOrdinal, lastOrdinal, text))

/** The packed part of a summary, made once per summary and shared by every turn that sends it. */
const packedSummaries = new WeakMap<BlockSummary, PackedPart>()
export function packedSummary(summary: BlockSummary): PackedPart {
  let part = packedSummaries.get(summary)
  if (!part) {
    part = {
      ordinal: summary.firstOrdinal,
      kind: 'summary',
      treatment: 'summarised',
      content: { type: 'summary', text: summaryText(summary.firstOrdinal, summary.lastOrdinal, summary.text) },
      tokens: summary.tokens,
    }
    packedSummaries.set(summary, part)
  }
  return part
}
