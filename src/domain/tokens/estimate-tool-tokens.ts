import type { ToolDefinition } from '../config/config-types.ts'
import { estimateTokens } from './estimate-tokens.ts'

/**
 * A tool costs what its definition costs as compact JSON in one canonical shape, whether it is read
 * from configuration or from a vendor call (the sandbox), so both count it alike. An empty description
 * counts as none: vendors are sent none (src/actors/admit-turn.ts).
 */
export function estimateToolTokens(tool: ToolDefinition): number {
  return estimateTokens(
    JSON.stringify({ name: tool.name, description: tool.description || null, input_schema: tool.input_schema, strict: tool.strict ?? null }),
  )
}
