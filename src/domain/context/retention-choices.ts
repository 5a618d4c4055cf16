import type { RetentionRules, Truncation } from '../config/config-types.ts'
import type { PartBody } from '../parts.ts'
import { globMatches, mimeMatches } from './match-pattern.ts'

const KEEP: Truncation = { mode: 'keep' }

/**
 * A recency threshold as packing uses it: a left-out threshold does nothing (docs/guide/context.md), so
 * everything is within it where the rule keeps (reasoning, media) and nothing is where it protects
 * (`verbatim_within`).
 */
export const thresholdOrAll = (t: number | undefined) => t ?? Number.POSITIVE_INFINITY
export const thresholdOrNone = (t: number | undefined) => t ?? Number.NEGATIVE_INFINITY

/** The `retain` threshold of an attachment: the first `mime` rule that matches, else `default`. */
export function mediaRetainFor(mime: string, media: RetentionRules['media']): number {
  if (media === undefined) return Number.POSITIVE_INFINITY
  const rule = media.rules?.find((r) => mimeMatches(r.mime, mime))
  return thresholdOrAll(rule ? rule.retain : media.default)
}

/**
 * How an older payload is cut: tool arguments and results by the first tool rule whose pattern
 * matches (else `default`), `errors` in place of `result` on an is_error result; prompts and
 * messages by the text rules. Reasoning has no cut: it is replayed or omitted.
 */
export function payloadTruncation(body: PartBody, rules: RetentionRules): Truncation {
  switch (body.type) {
    case 'prompt':
      return rules.text?.prompt ?? KEEP
    case 'message':
      return rules.text?.message ?? KEEP
    case 'reasoning':
      return KEEP
    case 'tool_call':
      return toolTreatment(body.tool_name, rules).arguments ?? KEEP
    case 'tool_result': {
      const errors = rules.tools?.errors
      if (body.is_error && errors !== undefined && errors !== null) return errors
      return toolTreatment(body.tool_name, rules).result ?? KEEP
    }
    default: {
      const unknown: never = body
      throw new Error(`unknown part ${JSON.stringify(unknown)}`)
    }
  }
}

function toolTreatment(toolName: string, rules: RetentionRules) {
  const tools = rules.tools
  if (!tools) return {}
  return tools.rules?.find((r) => globMatches(r.tool, toolName)) ?? tools.default ?? {}
}

/** Whether cut payloads carry a visible marker: on unless the tool rules turn it off. */
export const marksTruncations = (rules: RetentionRules) => rules.tools?.mark_truncations !== false
