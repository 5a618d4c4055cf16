import { CORRECTION } from './token-correction.ts'

/*
 * The automatic refit (docs/decisions/044-context-refusal-refit.md): a vendor that refuses a request
 * for its context size before the first byte has billed nothing and told us our estimate was low.
 * The chat machine packs the turn again once, with the correction that refusal taught, before the
 * client sees anything (machines/chat.machine.ts `mayRefitAfterContextRefusal`). These are its rules.
 */

/** How many times one run is packed again after a context refusal. A second refusal ends the run. */
export const MAX_REFITS = 1

/**
 * A vendor's refusal of a request for its context size, as src/providers/read-context-refusal.ts reads
 * it from the vendor's own wording: its figures where the message gives them.
 */
export type ContextRefusal = {
  /** Which vendor wording matched (src/providers/read-context-refusal.ts). */
  wording: string
  /** The vendor's count of the input tokens. */
  vendorCount: number | null
  /** The limit the vendor named: its window, or its input limit. */
  window: number | null
  /** The max_tokens the vendor counted against the window. */
  maxTokens: number | null
}

/** What the refused request was sent as. */
export type RefusedRequest = {
  /** Our estimate of its input. */
  estimatedInputTokens: number
  /** The correction it was packed with. */
  correction: number
  maxTokens: number
  /** The window it was held to (the long-context one when it opted in). */
  window: number
  /** The model's input limit, if it has one below the window. */
  inputLimit: number | null
}

/**
 * The least a refusal raises the correction by when the vendor gave no count (OpenAI's Responses API
 * gives only `context_length_exceeded`): one refit must make progress, and a tenth covers the largest
 * gap between o200k and another vendor's count seen on one content class without a learned correction
 * (docs/decisions/044-context-refusal-refit.md).
 */
export const UNCOUNTED_REFUSAL_STEP = 1.1

/**
 * The ratio of the vendor's count to our estimate that a refusal teaches, as a correction sample
 * (src/domain/context/token-correction.ts), learned at once. Where the vendor counted the input, it is
 * that count over our estimate, exactly. Where it did not, the refusal still says the input (with
 * max_tokens) did not fit: at least the limit the request broke over our estimate, and never less
 * than the correction it was sent with raised by UNCOUNTED_REFUSAL_STEP. Clamped as every sample is.
 */
export function refusalRatio(sent: RefusedRequest, refusal: ContextRefusal): number {
  const clamp = (ratio: number) => Math.min(CORRECTION.most, Math.max(CORRECTION.least, ratio))
  const estimate = Math.max(1, sent.estimatedInputTokens)
  if (refusal.vendorCount !== null) return clamp(refusal.vendorCount / estimate)
  const limit = refusal.window ?? Math.min(sent.window - (refusal.maxTokens ?? sent.maxTokens), sent.inputLimit ?? Number.MAX_SAFE_INTEGER)
  return clamp(Math.max((limit + 1) / estimate, sent.correction * UNCOUNTED_REFUSAL_STEP))
}

/** Whether a run refused for context may be packed again: at most MAX_REFITS times. */
export function mayRefit(refitsSoFar: number, refusal: ContextRefusal | null | undefined): boolean {
  return refusal != null && refitsSoFar < MAX_REFITS
}

/** What a run's frame keeps of its refit, for its manifest: the refusal, and the request it refused. */
export type RefitRecord = {
  refusal: { wording: string; vendor_count: number | null; limit: number | null; max_tokens: number | null }
  before: RefitRequest
}

/** A request as the manifest records it before and after a refit. */
export type RefitRequest = { estimated_input_tokens: number; correction: number; max_tokens: number }

export function refitRecord(refusal: ContextRefusal, before: RefitRequest): RefitRecord {
  return { refusal: { wording: refusal.wording, vendor_count: refusal.vendorCount, limit: refusal.window, max_tokens: refusal.maxTokens }, before }
}

/** The run's error once the vendor refused its context again after the refit: it names the context, not a bare upstream failure. */
export function contextRefusedMessage(refusal: ContextRefusal, refits: number): string {
  const counted = refusal.vendorCount === null ? '' : ` (it counted ${refusal.vendorCount} input tokens${refusal.window === null ? '' : ` against ${refusal.window}`})`
  const again = refits > 0 ? ` after the context was packed again with the correction its refusal taught` : ''
  return `the vendor refused the request for its context size${counted}${again}`
}

/**
 * The correction a refit packs with: one step (CORRECTION.step) above the one the refusal taught.
 * The context packed again is not the one the vendor counted: the parts dropped may count lighter
 * than those kept, so its ratio can sit a little above the refused request's. Seen on the
 * near-window test: a refused ratio just under a step boundary, and a repack 30 tokens over a
 * 1,048,576-token window. Only this run's packing takes the step; the model's correction is what
 * it learned.
 */
export function refitCorrection(learned: number): number {
  return Math.round((learned + CORRECTION.step) * 1_000) / 1_000
}
