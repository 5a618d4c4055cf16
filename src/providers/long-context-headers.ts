import type { CatalogueEntry } from '../domain/catalogue/catalogue-entry.ts'
import type { WindowInForce } from '../domain/context/model-limits.ts'

/**
 * The request header that opens a model's long context (Claude's `anthropic-beta: context-1m-…`),
 * sent only when the request needs the window beyond the standard one
 * (docs/decisions/027-model-limits.md); the vendor's package merges it with its own betas.
 */
export function longContextHeaders(model: Pick<CatalogueEntry, 'long_context'>, window: WindowInForce): Record<string, string> | undefined {
  const optIn = model.long_context
  return window.longContext && optIn ? { [optIn.header]: optIn.value } : undefined
}
