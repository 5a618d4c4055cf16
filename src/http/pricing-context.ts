import { PLATFORM_MARKUP_PERCENT, applyMarkup } from '../domain/catalogue/apply-markup.ts'
import type { CatalogueEntry } from '../domain/catalogue/catalogue-entry.ts'
import type { AppDeps } from './app-deps.ts'

export type PricingContext = { markupPercent: string; organisationSpecific: boolean }

/** The markup in force for an organisation (or for anonymous callers when orgId is null). */
export function pricingFor(deps: AppDeps, orgId: string | null): PricingContext {
  const own = orgId === null ? null : (deps.store.organisations.get(orgId)?.markup_percent ?? null)
  return own === null
    ? { markupPercent: PLATFORM_MARKUP_PERCENT, organisationSpecific: false }
    : { markupPercent: own, organisationSpecific: true }
}

export function pricedCatalogue(deps: AppDeps, pricing: PricingContext): CatalogueEntry[] {
  return deps.catalogue.list().map((entry) => applyMarkup(entry, pricing.markupPercent))
}
