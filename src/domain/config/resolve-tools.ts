import type { ConfigMode, ConfigWarning, Level, ToolDefinition } from './config-types.ts'

export type ToolBundleVersion = { id: string; definitions: ToolDefinition[]; mode: ConfigMode }
export type ResolvedTools = { tools: ToolDefinition[]; versionIds: string[] }

/**
 * docs/guide/namespaces-and-configuration.md: bundles merge by tool name and the nearer level wins (`tool_shadowed`, naming
 * the level whose tool won); a `replace` bundle drops everything farther (`global_tools_replaced`
 * with the number of tools dropped). Request-level tools are nearest of all and are reported at
 * the chat's namespace.
 */
export function resolveTools(
  levels: Level<ToolBundleVersion>[],
  requestTools: ToolDefinition[] | null = null,
  chatNamespace: string | null = null,
): { value: ResolvedTools; warnings: ConfigWarning[] } {
  const warnings: ConfigWarning[] = []
  const merged = new Map<string, ToolDefinition>()
  let versionIds: string[] = []

  const mergeIn = (definitions: ToolDefinition[], namespace: string | null) => {
    for (const definition of definitions) {
      if (merged.has(definition.name)) warnings.push({ code: 'tool_shadowed', name: definition.name, namespace })
      merged.set(definition.name, definition)
    }
  }

  for (const { namespace, active } of levels) {
    if (!active) continue
    if (namespace !== null && active.mode === 'replace') {
      if (merged.size > 0) warnings.push({ code: 'global_tools_replaced', namespace, dropped: merged.size })
      merged.clear()
      versionIds = []
    }
    mergeIn(active.definitions, namespace)
    versionIds.push(active.id)
  }
  if (requestTools) mergeIn(requestTools, chatNamespace)
  return { value: { tools: [...merged.values()], versionIds }, warnings }
}
