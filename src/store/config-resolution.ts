import type { ConfigMode, ConfigWarning, ContextBudget, RetentionRules, ToolDefinition } from '../domain/config/config-types.ts'
import { resolveInstructions, type ResolvedInstructions } from '../domain/config/resolve-instructions.ts'
import { resolveBudget, type BudgetLevel, type ResolvedBudget } from '../domain/config/resolve-budget.ts'
import { resolveRetention } from '../domain/config/resolve-retention.ts'
import { resolveTools, type ResolvedTools } from '../domain/config/resolve-tools.ts'
import { namespaceLineage } from '../domain/namespace.ts'
import { estimateToolTokens } from '../domain/tokens/estimate-tool-tokens.ts'
import { estimateTokens, saturatingAdd } from '../domain/tokens/estimate-tokens.ts'
import type { ConfigKind, ConfigVersion } from './config-versions.ts'
import type { Store } from './index.ts'

export type ResolvedConfiguration = {
  estimated_tokens: number
  /** The two shares of estimated_tokens, for the run manifest (docs/guide/context.md). */
  tokens: { instructions: number; tools: number }
  instructions: string | null
  namespace: string | null
  retention: RetentionRules
  tools: ToolDefinition[]
  versions: { instructions: string[]; retention_policy: string | null; tools: string[] }
  warnings: ConfigWarning[]
}

type BudgetWithWarnings = ResolvedBudget & { warnings: ConfigWarning[] }

/** The scopes a namespace resolves over, root first: org-global, then each ancestor, then itself. */
const scopesOf = (namespace: string | null): (string | null)[] => [null, ...(namespace ? namespaceLineage(namespace) : [])]

/** Loads the active versions of every level and hands them to the pure resolvers of src/domain/config. */
export function createConfigResolver(store: Pick<Store, 'config'>, options: { keep?: boolean } = {}) {
  // Without keeping, every call resolves afresh (bench/config-resolution.ts measures both).
  const keep = options.keep ?? true
  const levelsOf = <T>(orgId: string, kind: ConfigKind, scopes: (string | null)[], read: (v: ConfigVersion) => T) => {
    const active = store.config.activeInScopes(orgId, kind, scopes)
    return scopes.map((namespace) => {
      const found = active.find((v) => v.namespace === namespace)
      return { namespace, active: found ? read(found) : null }
    })
  }

  // Every turn resolves its chat's configuration; it changes rarely. Answers are kept until the
  // configuration's generation moves, and handed out shared: callers never change them.
  const MAX_KEPT = 10_000
  let keptGeneration = ''
  const kept = new Map<string, ResolvedConfiguration | BudgetWithWarnings>()
  const remembered = <T extends ResolvedConfiguration | BudgetWithWarnings>(key: string, resolve: () => T): T => {
    if (!keep) return resolve()
    const generation = store.config.generation()
    if (generation !== keptGeneration) {
      kept.clear()
      keptGeneration = generation
    }
    const found = kept.get(key)
    if (found) return found as T
    const value = resolve()
    if (kept.size >= MAX_KEPT) kept.clear()
    kept.set(key, value)
    return value
  }

  return {
    resolveConfig(orgId: string, namespace: string | null, requestTools: ToolDefinition[] | null = null): ResolvedConfiguration {
      // Tools sent with a request are that request's own: resolved each time, not kept.
      if (requestTools !== null) return resolveConfigNow(orgId, namespace, requestTools)
      return remembered(`config\0${orgId}\0${namespace ?? ''}`, () => resolveConfigNow(orgId, namespace, null))
    },

    resolveBudget(orgId: string, namespace: string | null, modelId: string | null): BudgetWithWarnings {
      return remembered(`budget\0${orgId}\0${namespace ?? ''}\0${modelId ?? ''}`, () => resolveBudgetNow(orgId, namespace, modelId))
    },
  }

  function resolveConfigNow(orgId: string, namespace: string | null, requestTools: ToolDefinition[] | null): ResolvedConfiguration {
    const scopes = scopesOf(namespace)
    // Each version's estimate as stored when it was published (migration 0008), by version id.
    const stored = new Map<string, { tokens: number; definitions: number }>()
    const remember = (v: ConfigVersion) => {
      stored.set(v.id, { tokens: v.estimated_tokens, definitions: Array.isArray(v.document) ? v.document.length : 0 })
    }
    const instructions = resolveInstructions(
      levelsOf(orgId, 'instructions', scopes, (v) => (remember(v), { id: v.id, body: v.document as string, mode: v.mode as ConfigMode })),
    )
    const tools = resolveTools(
      levelsOf(orgId, 'tools', scopes, (v) => (remember(v), { id: v.id, definitions: v.document as ToolDefinition[], mode: v.mode as ConfigMode })),
      requestTools,
      namespace,
    )
    const retention = resolveRetention(levelsOf(orgId, 'retention', scopes, (v) => ({ id: v.id, rules: v.document as RetentionRules })))
    const tokens = { instructions: instructionTokens(instructions.value, stored), tools: toolTokens(tools.value, requestTools, stored) }
    return {
      estimated_tokens: saturatingAdd(tokens.instructions, tokens.tools),
      tokens,
      instructions: instructions.value.text,
      namespace,
      retention: retention.value.rules,
      tools: tools.value.tools,
      versions: {
        instructions: instructions.value.versionIds,
        retention_policy: retention.value.policyId,
        tools: tools.value.versionIds,
      },
      warnings: [...instructions.warnings, ...tools.warnings, ...retention.warnings],
    }
  }

  function resolveBudgetNow(orgId: string, namespace: string | null, modelId: string | null): BudgetWithWarnings {
    const scopes = scopesOf(namespace)
    const active = store.config.activeInScopes(orgId, 'budget', scopes)
    const version = (v: ConfigVersion | undefined) => (v ? { id: v.id, budget: v.document as ContextBudget } : null)
    const levels: BudgetLevel[] = scopes.map((scope) => ({
      namespace: scope,
      untagged: version(active.find((v) => v.namespace === scope && v.model_id === null)),
      tagged: modelId === null ? null : version(active.find((v) => v.namespace === scope && v.model_id === modelId)),
    }))
    const resolved = resolveBudget(levels, modelId)
    return { ...resolved.value, warnings: resolved.warnings }
  }
}
export type ConfigResolver = ReturnType<typeof createConfigResolver>

type StoredEstimates = Map<string, { tokens: number; definitions: number }>

/**
 * One contributing version (the usual case): its stored estimate, which is that of the resolved text
 * as it is that text, so a restart never tokenizes a stored instruction on a request. Several are
 * joined by a separator BPE may merge with their edges, so their text is estimated whole (bounded
 * work, src/domain/tokens/estimate-tokens.ts).
 */
function instructionTokens(resolved: ResolvedInstructions, stored: StoredEstimates): number {
  if (resolved.text === null) return 0
  const only = resolved.versionIds.length === 1 ? stored.get(resolved.versionIds[0]!) : undefined
  return only ? only.tokens : estimateTokens(resolved.text)
}

/**
 * Bundles merged without a tool shadowed or dropped and without request tools: the sum of their
 * stored estimates, which is the sum over their tools. Otherwise tool by tool.
 */
function toolTokens(resolved: ResolvedTools, requestTools: ToolDefinition[] | null, stored: StoredEstimates): number {
  const bundles = resolved.versionIds.map((id) => stored.get(id))
  const whole =
    (requestTools === null || requestTools.length === 0) &&
    bundles.every((b) => b !== undefined) &&
    bundles.reduce((n, b) => n + b!.definitions, 0) === resolved.tools.length
  return whole ? saturatingAdd(...bundles.map((b) => b!.tokens)) : saturatingAdd(...resolved.tools.map(estimateToolTokens))
}

