import { correctedTokens, estimateBudget, windowInForce, type ModelLimits } from './model-limits.ts'

/**
 * Compaction runs inside their model's window (docs/decisions/043-compaction-inside-the-window.md).
 * A block is cut by size, never inside a tool exchange, and sealed under the model the chat had
 * then; its compaction run is made by the model the chat has now. So a run's input (our instruction
 * and the block's parts, or the summaries a merge reads) can exceed the window: a vendor refuses it
 * before its first byte and the block is dropped. These rules size what a run may send so that the
 * input, as the vendor counts it (our estimate times the model's correction), plus its max_tokens
 * stays within the window, and the input within the model's input limit.
 */

/**
 * The output a compaction run may ask for: what the plan gave it (decision 013's sizes), within the
 * model's output ceiling, and never more than half the window, so a small window keeps most of
 * itself for the block it reads.
 */
export function compactionMaxTokens(model: ModelLimits, planned: number): number {
  const standard = windowInForce(model, 0).window
  return Math.max(1, Math.min(planned, model.max_output_tokens ?? planned, Math.floor(standard / 2)))
}

/**
 * The most input a compaction run may send, in the vendor's tokens: the standard window less the
 * run's max_tokens, within the model's input limit. Compaction runs never carry a long-context
 * opt-in (they read one block or a few summaries, far below any standard window that has one), so
 * the standard window is theirs.
 */
export function compactionInputLimit(model: ModelLimits, maxTokens: number): number {
  const standard = windowInForce(model, 0).window
  return Math.max(0, Math.min(standard - maxTokens, model.max_input_tokens ?? Number.MAX_SAFE_INTEGER))
}

/** The same limit in our estimate's units, as packing measures (decision 027): the vendor's figure over the correction. */
export function compactionEstimateLimit(model: ModelLimits, maxTokens: number, correction: number): number {
  return estimateBudget(compactionInputLimit(model, maxTokens), correction)
}

/** Whether a run of `estimated` input tokens and `maxTokens` output fits its model, as the vendor will count it. */
export function compactionFits(model: ModelLimits, estimated: number, maxTokens: number, correction: number): boolean {
  return correctedTokens(estimated, correction) <= compactionInputLimit(model, maxTokens)
}

/**
 * The tokens each of a run's texts may keep so that together they hold at most `room`: the shortest
 * kept whole, the longest cut to one equal share of what the whole ones leave (water-filling). A
 * text under its share is never cut, so a block with one huge tool result loses only that result's
 * middle, and every part keeps some of itself. `null` for a text kept whole; 0 when `room` is none.
 */
export function textShares(tokens: readonly number[], room: number): (number | null)[] {
  const shares: (number | null)[] = tokens.map(() => null)
  const total = tokens.reduce((n, t) => n + t, 0)
  if (total <= room) return shares
  const order = tokens.map((t, i) => i).sort((a, b) => tokens[a]! - tokens[b]!)
  let left = Math.max(0, room)
  for (const [k, i] of order.entries()) {
    const share = Math.floor(left / (order.length - k))
    if (tokens[i]! <= share) {
      left -= tokens[i]!
      continue
    }
    // Every text from here on is at least this long: each gets the same share.
    for (const j of order.slice(k)) shares[j] = share
    return shares
  }
  return shares
}
