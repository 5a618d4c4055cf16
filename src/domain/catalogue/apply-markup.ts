import { Money } from '../money.ts'
import type { CatalogueEntry, Rates, Tier } from './catalogue-entry.ts'

export const PLATFORM_MARKUP_PERCENT = '5'

/** Customer price = provider cost × (1 + markup/100), exact (docs/guide/billing-and-usage.md). */
export function markUp(rate: string, markupPercent: string): string {
  return new Money(rate).mul(new Money(markupPercent).div(100).plus(1)).toFixed()
}

const markUpOptional = (rate: string | null | undefined, percent: string) =>
  rate === undefined || rate === null ? rate : markUp(rate, percent)

function markUpRates(rates: Rates, percent: string): Rates {
  return {
    ...rates,
    input: markUp(rates.input, percent),
    output: markUp(rates.output, percent),
    cache_read: markUpOptional(rates.cache_read, percent),
    cache_write: markUpOptional(rates.cache_write, percent),
  }
}

function markUpTier(tier: Tier, percent: string): Tier {
  return {
    ...tier,
    input: markUpOptional(tier.input, percent),
    output: markUpOptional(tier.output, percent),
    cache_read: markUpOptional(tier.cache_read, percent),
    cache_write: markUpOptional(tier.cache_write, percent),
  }
}

export function applyMarkup(entry: CatalogueEntry, markupPercent: string): CatalogueEntry {
  return {
    ...entry,
    rates: markUpRates(entry.rates, markupPercent),
    tiers: entry.tiers.map((tier) => markUpTier(tier, markupPercent)),
  }
}
