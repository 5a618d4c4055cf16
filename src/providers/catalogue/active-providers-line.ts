import type { CatalogueEntry } from '../../domain/catalogue/catalogue-entry.ts'
import { VENDOR_KEY_VARIABLES } from './active-providers.ts'

/**
 * What a node serves, in one place for the start-up line and `/readyz` (issue 23: a production node
 * with no key served an empty catalogue and refused every turn with 422, and nothing said why).
 * docs/decisions/035-active-providers-at-start.md.
 */
export type ActiveModels = {
  /** Active models per provider, in catalogue order; a provider with none is absent. */
  providers: Record<string, number>
  /** All active models. */
  models: number
  /** Empty when the node has a model to serve; otherwise why every turn will be refused, and the cure. */
  warnings: string[]
}

/** The warning of a node with no active model: the symptom a caller sees, then what to set. */
export const NO_MODEL_WARNING =
  'no model is active: /v1/catalogue is empty and every turn answers 422. Set a vendor key ' +
  `(${Object.values(VENDOR_KEY_VARIABLES).join(', ')}) or SANDBOX=on; see docs/guide/vendors.md`

/** Counts the active catalogue (`catalogue.list()`) by provider. */
export function activeModels(entries: readonly Pick<CatalogueEntry, 'provider'>[]): ActiveModels {
  const providers: Record<string, number> = {}
  for (const { provider } of entries) providers[provider] = (providers[provider] ?? 0) + 1
  return { providers, models: entries.length, warnings: entries.length === 0 ? [NO_MODEL_WARNING] : [] }
}

export type ActiveProvidersLine = { level: 'info' | 'warn'; fields: Pick<ActiveModels, 'providers' | 'models'>; message: string }

/**
 * The one start-up line: `info` naming each active provider with its number of models, or `warn`
 * when there is none, since such a node answers every turn with 422 and logs nothing else about it.
 */
export function activeProvidersLine(active: ActiveModels): ActiveProvidersLine {
  const fields = { providers: active.providers, models: active.models }
  if (active.models === 0) return { level: 'warn', fields, message: NO_MODEL_WARNING }
  const named = Object.entries(active.providers).map(([provider, count]) => `${provider} (${count} ${count === 1 ? 'model' : 'models'})`)
  return { level: 'info', fields, message: `providers active: ${named.join(', ')}` }
}
