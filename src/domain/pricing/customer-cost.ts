import type { CatalogueEntry } from '../catalogue/catalogue-entry.ts'
import { Money, MONEY_SCALE } from '../money.ts'
import { priceUsage } from './price-usage.ts'
import type { Usage } from './usage.ts'

/**
 * What the customer pays for one call: provider cost × (1 + markup/100), rounded once, half to
 * even, to the 10 fractional digits money carries (docs/guide/billing-and-usage.md). Returned as a plain decimal string.
 */
export function customerCost(usage: Usage, model: Pick<CatalogueEntry, 'rates' | 'tiers'>, markupPercent: string): string {
  const provider = priceUsage(usage, model.rates, model.tiers)
  const factor = new Money(markupPercent).div(100).plus(1)
  return provider.mul(factor).toDecimalPlaces(MONEY_SCALE, Money.ROUND_HALF_EVEN).toFixed()
}
