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
  /**
   * The vendor's limit on a request's bytes and what the fixed parts weigh with every attachment
   * packing may leave out left out (decision 045): the turn's own attachments. Absent: not measured.
   */
  requestBytes?: { limit: number; fixed: number }
}

/**
 * docs/guide/context.md: the fixed parts are always sent whole; when they alone pass the input budget,
 * or the turn's own attachments alone pass the vendor's request limit, the turn cannot be packed.
 */
export const fixedPartsFit = (size: Pick<ContextOverflow, 'inputBudget' | 'fixedTokens' | 'requestBytes'>): boolean =>
  size.inputBudget - size.fixedTokens >= 0 && (size.requestBytes === undefined || size.requestBytes.fixed <= size.requestBytes.limit)

/** The 422 a context too large answers with (docs/guide/errors.md). */
export function contextTooLargeError(overflow: ContextOverflow): ContextTooLargeError {
  const { inputBudget: window, fixedTokens: fixed, tokens, requestBytes } = overflow
  if (requestBytes && requestBytes.fixed > requestBytes.limit) {
    return new ContextTooLargeError(
      `this turn's own attachments make a request of at least ${requestBytes.fixed} bytes (attachments are sent inline, in base64), ` +
        `over the model's limit of ${requestBytes.limit} bytes per request`,
      { max_request_bytes: requestBytes.limit, request_bytes: requestBytes.fixed },
      'send fewer or smaller attachments in this turn, or use a model whose vendor takes larger requests',
    )
  }
  return new ContextTooLargeError(
    `the fixed parts need ${fixed} tokens but the model's input budget is ${window}: instructions ${tokens.instructions}, ` +
      `tools ${tokens.tools}, anchor parts ${tokens.anchors}, the current exchange ${tokens.current}`,
    { input_budget: window, estimated_tokens: fixed, fixed_tokens: { ...tokens } },
    'shorten the input or the instructions, publish fewer anchor_parts or a budget with less headroom, or use a model with a larger context window',
  )
}
