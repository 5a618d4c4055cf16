import type { RetentionRules, Truncation } from './config-types.ts'
import { GLOB_PATTERNS, MIME_PATTERNS, unreachablePatterns } from './pattern-coverage.ts'
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
  for (const [i, by] of unreachablePatterns(mimeRules.map((r) => r.mime), MIME_PATTERNS)) {
    problems.push({
      pointer: `/media/rules/${i}/mime`,
      message: `can never match: rule ${by} ("${mimeRules[by]!.mime}") already covers "${mimeRules[i]!.mime}"`,
    })
  }
  const toolRules = rules.tools?.rules ?? []
  for (const [i, by] of unreachablePatterns(toolRules.map((r) => r.tool), GLOB_PATTERNS)) {
    problems.push({
      pointer: `/tools/rules/${i}/tool`,
      message: `can never match: rule ${by} ("${toolRules[by]!.tool}") already covers "${toolRules[i]!.tool}"`,
    })
  }
  // A rule's pointer is written only when it has a problem: a document may hold tens of thousands of rules.
  const truncationAt = (pointer: () => string, truncation: Truncation | null | undefined) => {
    const problem = truncation ? truncationProblem(truncation) : null
    if (problem) problems.push({ pointer: `${pointer()}${problem.pointer}`, message: problem.message })
  }
  truncationAt(() => '/tools/default/arguments', rules.tools?.default?.arguments)
  truncationAt(() => '/tools/default/result', rules.tools?.default?.result)
  truncationAt(() => '/tools/errors', rules.tools?.errors)
  truncationAt(() => '/text/prompt', rules.text?.prompt)
  truncationAt(() => '/text/message', rules.text?.message)
  toolRules.forEach((rule, i) => {
    truncationAt(() => `/tools/rules/${i}/arguments`, rule.arguments)
    truncationAt(() => `/tools/rules/${i}/result`, rule.result)
  })
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
