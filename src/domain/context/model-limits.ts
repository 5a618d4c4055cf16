import type { CatalogueEntry } from '../catalogue/catalogue-entry.ts'
import type { ContextBudget } from '../config/config-types.ts'
import { saturatingAdd, TOKEN_ESTIMATE_MAX } from '../tokens/estimate-tokens.ts'
import { inputBudget } from './budget.ts'

/**
 * What a request may hold under a model's limits (docs/decisions/027-model-limits.md). Vendors refuse
 * input plus the output ceiling above the window, and some cap input lower still (gpt-5 at 272,000
 * of its 400,000). Figures here are in the vendor's tokens: our estimate times the model's
 * correction (src/domain/context/token-correction.ts).
 */

export type ModelLimits = Pick<CatalogueEntry, 'context_window'> &
  Partial<Pick<CatalogueEntry, 'max_output_tokens' | 'max_input_tokens' | 'long_context'>>

/**
 * The least output a turn leaves room for: enough for a short answer or a tool call. Packing
 * keeps this much of the window free whatever the headroom, so the output ceiling sent is never
 * below it (or the model's own ceiling, if that is lower).
 */
export const MIN_USEFUL_OUTPUT_TOKENS = 512

/** The output room a model's window keeps: none for a window given without an output ceiling (packing's own rules, tested on bare windows). */
export const minUsefulOutput = (model: ModelLimits): number => (model.max_output_tokens === undefined ? 0 : Math.min(MIN_USEFUL_OUTPUT_TOKENS, model.max_output_tokens))

/**
 * The input budget in the vendor's tokens: docs/guide/context.md's floor(context_window × (1 −
 * headroom)), within the model's input limit, and leaving the least useful output free.
 */
export function vendorInputBudget(model: ModelLimits, budget: Pick<ContextBudget, 'headroom'>): number {
  return Math.max(0, Math.min(inputBudget(model.context_window, budget), model.max_input_tokens ?? TOKEN_ESTIMATE_MAX, model.context_window - minUsefulOutput(model)))
}

/** The budget packing measures its estimates against: the vendor's budget over the correction, floored. */
export function estimateBudget(vendorBudget: number, correction: number): number {
  return correction === 1 ? vendorBudget : Math.floor(vendorBudget / correction)
}

/** An estimate as the vendor is expected to count it: times the correction, rounded up. */
export function correctedTokens(estimated: number, correction: number): number {
  return correction === 1 ? estimated : saturatingAdd(Math.ceil(estimated * correction))
}

/**
 * The share of the input (as the vendor is expected to count it) that max_tokens leaves free of the
 * window (docs/decisions/044-context-refusal-refit.md): vendors refuse input plus max_tokens over the
 * window, and the correction is learned from other requests than this one. A twentieth covers the
 * spread of one model's ratio between chats of one content class; the refit covers the rest.
 */
export const MAX_TOKENS_SLACK_SHARE = 0.05

/**
 * The most max_tokens may be for `input` vendor tokens in `window`: what the window leaves after the
 * input, less the slack; but never less than what the budget's headroom reserves for the output, nor
 * than the least useful output, where the window leaves that. The headroom is the organisation's own
 * reserve, and the refit (decision 044) covers a vendor that counts into it.
 */
export function outputRoom(model: ModelLimits, window: number, input: number, headroom = 0): number {
  const left = window - input
  const reserved = Math.max(minUsefulOutput(model), window - inputBudget(window, { headroom }))
  return Math.max(Math.min(left, reserved), left - Math.ceil(input * MAX_TOKENS_SLACK_SHARE))
}

export type WindowInForce = {
  /** The most input plus output the request may hold. */
  window: number
  /** Whether the request must carry the model's long-context opt-in to be taken. */
  longContext: boolean
}

/**
 * The window a request of `input` vendor tokens is sent under: the standard one while the input and
 * the least useful output fit it; past that, the long-context window with its opt-in (billed at the
 * long-context tier the catalogue lists, as the vendor bills it).
 */
export function windowInForce(model: ModelLimits, input: number): WindowInForce {
  const longContext = model.long_context
  if (!longContext || input + minUsefulOutput(model) <= longContext.standard_window) {
    return { window: longContext ? longContext.standard_window : model.context_window, longContext: false }
  }
  return { window: model.context_window, longContext: true }
}
