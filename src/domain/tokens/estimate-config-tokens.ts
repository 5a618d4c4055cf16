import type { ToolDefinition } from '../config/config-types.ts'
import { estimateTokens, saturatingAdd } from './estimate-tokens.ts'
import { estimateToolTokens } from './estimate-tool-tokens.ts'

/**
 * The estimate a configuration version is stored with (config_versions.estimated_tokens), as its
 * publish route makes it: an instruction's body, a tool bundle's definitions one by one, nothing for
 * retention policies and budgets. Resolution reads it back instead of tokenizing the document again
 * (src/store/config-resolution.ts); migration 0008 recomputed it for rows written before.
 */
export function estimateConfigDocumentTokens(kind: string, document: unknown): number {
  switch (kind) {
    case 'instructions':
      return estimateTokens(document as string)
    case 'tools':
      return saturatingAdd(...(document as ToolDefinition[]).map(estimateToolTokens))
    default:
      return 0
  }
}
