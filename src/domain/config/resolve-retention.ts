import type { ConfigWarning, Level, RetentionRules } from './config-types.ts'
import { PLATFORM_DEFAULT_RETENTION } from './platform-defaults.ts'

export type RetentionVersion = { id: string; rules: RetentionRules }
export type ResolvedRetention = { rules: RetentionRules; policyId: string | null }

/**
 * docs/guide/namespaces-and-configuration.md: the nearest level with a policy is taken whole; the next level out that also
 * has one is reported as displaced. Nothing published means the platform default.
 */
export function resolveRetention(levels: Level<RetentionVersion>[]): {
  value: ResolvedRetention
  warnings: ConfigWarning[]
} {
  const published = levels.filter((level) => level.active !== null)
  const nearest = published.at(-1)
  if (!nearest?.active) return { value: { rules: PLATFORM_DEFAULT_RETENTION, policyId: null }, warnings: [] }
  const displaced = published.at(-2)
  const warnings: ConfigWarning[] = displaced
    ? [{ code: 'retention_policy_overridden', namespace: nearest.namespace, displaced: displaced.namespace }]
    : []
  return { value: { rules: nearest.active.rules, policyId: nearest.active.id }, warnings }
}
