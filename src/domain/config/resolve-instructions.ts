import type { ConfigMode, ConfigWarning, Level } from './config-types.ts'

export type InstructionVersion = { id: string; body: string; mode: ConfigMode }
export type ResolvedInstructions = { text: string | null; versionIds: string[] }

export const INSTRUCTION_SEPARATOR = '\n\n'

/**
 * docs/guide/namespaces-and-configuration.md: `append` levels concatenate root first; a `replace` level discards the levels
 * above it. The global level's mode is ignored (it has nothing above it).
 */
export function resolveInstructions(levels: Level<InstructionVersion>[]): {
  value: ResolvedInstructions
  warnings: ConfigWarning[]
} {
  const warnings: ConfigWarning[] = []
  let contributing: { namespace: string | null; version: InstructionVersion }[] = []
  for (const { namespace, active } of levels) {
    if (!active) continue
    if (namespace !== null && active.mode === 'replace') {
      if (contributing.some((c) => c.namespace === null)) {
        warnings.push({ code: 'global_instruction_replaced', namespace })
      }
      contributing = []
    }
    contributing.push({ namespace, version: active })
  }
  return {
    value: {
      text: contributing.length === 0 ? null : contributing.map((c) => c.version.body).join(INSTRUCTION_SEPARATOR),
      versionIds: contributing.map((c) => c.version.id),
    },
    warnings,
  }
}
