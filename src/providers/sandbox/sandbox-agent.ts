import type { LanguageModelV4FunctionTool } from '@ai-sdk/provider'
import { Ajv } from 'ajv'
import addFormatsModule from 'ajv-formats'
import { sample } from 'openapi-sampler'

// ajv-formats is CommonJS; its default export arrives wrapped under Node's ESM loader.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule) as unknown as (ajv: Ajv) => Ajv
const ajv = addFormats(new Ajv({ strict: false, allErrors: false }))

/** The largest tool schema (as JSON) the sandbox makes arguments for. */
export const MAX_SAMPLED_SCHEMA_CHARS = 65_536

/** What `sandbox/agent` does with a user's turn that offers tools (docs/guide/sandbox.md). */
export type AgentMove = { kind: 'call'; name: string; args: string } | { kind: 'cannot'; name: string; reason: string }

/**
 * `sandbox/agent` first calls the first tool offered, with arguments made from its input schema (the
 * required properties, each its example, default, first enum value or a value of its type: Redocly's
 * openapi-sampler, deterministic) and checked against that schema (ajv). A schema the sampler cannot
 * satisfy (a `pattern`, say) is not called with arguments that fail it: the model says so in text.
 */
export function agentMove(tools: readonly LanguageModelV4FunctionTool[]): AgentMove | null {
  const tool = tools[0]
  if (!tool) return null
  // Sampling and compiling grow with the schema: a turn's sandbox work stays bounded.
  if (JSON.stringify(tool.inputSchema).length > MAX_SAMPLED_SCHEMA_CHARS) {
    return { kind: 'cannot', name: tool.name, reason: `its schema is over ${MAX_SAMPLED_SCHEMA_CHARS} characters, more than the sandbox samples` }
  }
  let args: unknown
  try {
    args = sample(tool.inputSchema as Parameters<typeof sample>[0], { skipNonRequired: true, skipReadOnly: true, quiet: true })
  } catch (error) {
    return { kind: 'cannot', name: tool.name, reason: error instanceof Error ? error.message : String(error) }
  }
  // A tool's arguments are a JSON object, whatever its schema leaves open.
  if (args === undefined || args === null || typeof args !== 'object' || Array.isArray(args)) args = {}
  let failed: string | null
  try {
    const validate = ajv.compile(tool.inputSchema)
    failed = validate(args) ? null : ajv.errorsText(validate.errors, { dataVar: 'arguments' })
  } catch (error) {
    failed = `its schema does not compile: ${error instanceof Error ? error.message : String(error)}`
  } finally {
    // Ajv keeps what it compiled by the schema object: each turn's tools are new objects.
    ajv.removeSchema(tool.inputSchema)
  }
  if (failed !== null) return { kind: 'cannot', name: tool.name, reason: failed }
  return { kind: 'call', name: tool.name, args: JSON.stringify(args) }
}
