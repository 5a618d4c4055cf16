import type { RetentionRules, Truncation } from './config-types.ts'
import { globCovers, mimeCovers, unreachablePatterns } from './pattern-coverage.ts'
import { SUPPORTED_RETENTION_VERSION } from './platform-defaults.ts'

/** A problem inside a document; the pointer is relative to the document's root. */
export type DocumentProblem = { pointer: string; message: string }

/**
 * The checks a schema cannot express (docs/guide/context.md): the supported version, rules an earlier
 * pattern makes unreachable, and truncations that are contradictions.
 */
export function validateRetentionRules(rules: RetentionRules): DocumentProblem[] {
  const problems: DocumentProblem[] = []
  if (rules.version !== SUPPORTED_RETENTION_VERSION) {
    problems.push({
      pointer: '/version',
      message: `unsupported retention schema version ${rules.version}; the supported version is ${SUPPORTED_RETENTION_VERSION}`,
    })
  }
  const mimeRules = rules.media?.rules ?? []
  for (const [i, by] of unreachablePatterns(mimeRules.map((r) => r.mime), mimeCovers)) {
    problems.push({
      pointer: `/media/rules/${i}/mime`,
      message: `can never match: rule ${by} ("${mimeRules[by]!.mime}") already covers "${mimeRules[i]!.mime}"`,
    })
  }
  const toolRules = rules.tools?.rules ?? []
  for (const [i, by] of unreachablePatterns(toolRules.map((r) => r.tool), globCovers)) {
    problems.push({
      pointer: `/tools/rules/${i}/tool`,
      message: `can never match: rule ${by} ("${toolRules[by]!.tool}") already covers "${toolRules[i]!.tool}"`,
    })
  }
  const truncations: [string, Truncation | null | undefined][] = [
    ['/tools/default/arguments', rules.tools?.default?.arguments],
    ['/tools/default/result', rules.tools?.default?.result],
    ['/tools/errors', rules.tools?.errors],
    ['/text/prompt', rules.text?.prompt],
    ['/text/message', rules.text?.message],
    ...toolRules.flatMap((rule, i): [string, Truncation | undefined][] => [
      [`/tools/rules/${i}/arguments`, rule.arguments],
      [`/tools/rules/${i}/result`, rule.result],
    ]),
  ]
  for (const [pointer, truncation] of truncations) {
    const problem = truncation ? truncationProblem(truncation) : null
    if (problem) problems.push({ pointer: `${pointer}${problem.pointer}`, message: problem.message })
  }
  return problems
}

function truncationProblem(truncation: Truncation): DocumentProblem | null {
  switch (truncation.mode) {
    case 'keep':
      return null
    case 'over':
      return truncation.to >= truncation.over
        ? { pointer: '/to', message: `must be less than over (${truncation.over}), or the payload is never cut` }
        : null
    case 'always':
      return truncation.to === 0 && truncation.keep === undefined
        ? { pointer: '/to', message: 'is 0 with no keep shape, which cuts the whole payload; give keep or a positive to' }
        : null
    default: {
      const unknown: never = truncation
      throw new Error(`unknown truncation ${JSON.stringify(unknown)}`)
    }
  }
}
