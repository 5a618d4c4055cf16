import type { CatalogueEntry } from '../catalogue/catalogue-entry.ts'

/**
 * The active catalogue as OpenAI's Models API lists it (docs/decisions/063-chat-completions.md): `id`
 * is the catalogue name a request sends as `model`, `owned_by` its provider. The catalogue keeps no
 * release date, so `created` is the date its prices are as of (seconds; 0 when it has none).
 */
export function modelOf(entry: Pick<CatalogueEntry, 'name' | 'provider'>, pricesAsOf: string) {
  const asOf = Date.parse(pricesAsOf)
  return { id: entry.name, object: 'model' as const, created: Number.isNaN(asOf) ? 0 : Math.floor(asOf / 1000), owned_by: entry.provider }
}

export function modelListOf(entries: readonly Pick<CatalogueEntry, 'name' | 'provider'>[], pricesAsOf: string) {
  return { object: 'list' as const, data: entries.map((e) => modelOf(e, pricesAsOf)) }
}
