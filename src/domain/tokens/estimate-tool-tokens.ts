import type { ToolDefinition } from '../config/config-types.ts'
import { estimateTokens } from './estimate-tokens.ts'

/** A tool costs what its definition costs as compact JSON: what the budget counts for it. */
export function estimateToolTokens(tool: ToolDefinition): number {
  return estimateTokens(JSON.stringify(tool))
}
