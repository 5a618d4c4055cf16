import type { CatalogueEntry } from '../../domain/catalogue/catalogue-entry.ts'
import { ValidationError } from '../../domain/errors.ts'
import { VENDOR_KEY_VARIABLES } from './active-providers.ts'

/** How many active models a refusal names before it says how many more there are. */
export const NAMED_ACTIVE_MODELS = 10

/** Where the key variables and SANDBOX are documented. */
const GUIDE = 'docs/guide/vendors.md'

/**
 * The hint of a turn naming a model this node does not serve (issue 38, decision 060): which
 * models it does serve (the first NAMED_ACTIVE_MODELS, then how many more), and how a vendor's
 * models are turned on. A name of an inactive provider (`openai/…` with no OpenAI key, `sandbox/…`
 * with the sandbox off) names that provider's variable; any other name, every vendor's.
 */
export function inactiveModelHint(name: string, active: readonly Pick<CatalogueEntry, 'name' | 'provider'>[]): string {
  const names = active.map((entry) => entry.name)
  const shown = names.slice(0, NAMED_ACTIVE_MODELS).join(', ')
  const more = names.length - NAMED_ACTIVE_MODELS
  const served =
    names.length === 0
      ? 'no model is active on this server'
      : `the active models are ${shown}${more > 0 ? ` and ${more} more (GET /v1/catalogue lists them all)` : ''}`
  const providers = new Set(active.map((entry) => entry.provider))
  const prefix = name.includes('/') ? name.slice(0, name.indexOf('/')) : null
  let cure: string
  if (prefix === 'sandbox' && !providers.has('sandbox')) {
    cure = 'the sandbox is off: start the server with SANDBOX=on (the default unless NODE_ENV=production)'
  } else if (prefix !== null && VENDOR_KEY_VARIABLES[prefix] !== undefined && !providers.has(prefix)) {
    cure = `${prefix} is off: its models turn on when the server starts with ${VENDOR_KEY_VARIABLES[prefix]} set`
  } else {
    cure = `a vendor's models turn on when the server starts with its key set (${Object.values(VENDOR_KEY_VARIABLES).join(', ')}), the sandbox's with SANDBOX=on`
  }
  return `${served}; ${cure} (see ${GUIDE})`
}

/** The 422 of a turn naming a model that is not active: `/model` named, and the hint. */
export function inactiveModelError(name: string, active: readonly Pick<CatalogueEntry, 'name' | 'provider'>[]): ValidationError {
  return new ValidationError([{ in: 'body', pointer: '/model', message: `"${name}" is not an active model of the catalogue` }], inactiveModelHint(name, active))
}
