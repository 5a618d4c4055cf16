import { ContextTooLargeError } from '../errors.ts'

/**
 * The fixed parts of a turn (instructions, tools, anchors, the current exchange) measured against the
 * model's input budget, in our estimate's units: data, so that the chat machine's `contextIsTooLarge`
 * guard (src/domain/turns/admission-rules.ts) can decide the 422 and its details.
 */
export type ContextOverflow = {
  inputBudget: number
  fixedTokens: number
  tokens: { instructions: number; tools: number; anchors: number; current: number }
}

/** docs/guide/context.md: the fixed parts are always sent whole; when they alone pass the input budget, the turn cannot be packed. */
export const fixedPartsFit = (size: Pick<ContextOverflow, 'inputBudget' | 'fixedTokens'>): boolean => size.inputBudget - size.fixedTokens >= 0

/** The 422 a context too large answers with (docs/guide/errors.md). */
export function contextTooLargeError(overflow: ContextOverflow): ContextTooLargeError {
  const { inputBudget: window, fixedTokens: fixed, tokens } = overflow
  return new ContextTooLargeError(
    `the fixed parts need ${fixed} tokens but the model's input budget is ${window}: instructions ${tokens.instructions}, ` +
      `tools ${tokens.tools}, anchor parts ${tokens.anchors}, the current exchange ${tokens.current}`,
    { input_budget: window, estimated_tokens: fixed, fixed_tokens: { ...tokens } },
    'shorten the input or the instructions, publish fewer anchor_parts or a budget with less headroom, or use a model with a larger context window',
  )
}
