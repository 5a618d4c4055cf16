import type { Rates, Tier } from '../catalogue/catalogue-entry.ts'
import { Money } from '../money.ts'
import { contextTokens, type Usage } from './usage.ts'

type RateKind = 'input' | 'output' | 'cache_read' | 'cache_write'
type RateCard = Partial<Record<RateKind, string | null>>

const PER_MILLION = new Money(1_000_000)
const ZERO = new Money(0)

// Rates are a few dozen catalogue strings; decimals are immutable, so each is parsed once.
const parsedRates = new Map<string, InstanceType<typeof Money>>()
const parseRate = (rate: string) => {
  let parsed = parsedRates.get(rate)
  if (!parsed) {
    parsed = new Money(rate)
    if (parsedRates.size < 10_000) parsedRates.set(rate, parsed)
  }
  return parsed
}

/** A tier's rate where it states one, else the base rate (a tier may reprice only some kinds). */
function rateIn(card: RateCard, base: Rates, kind: RateKind): InstanceType<typeof Money> {
  const rate = card[kind] ?? base[kind]
  // A kind the provider does not meter costs nothing.
  return rate === null || rate === undefined ? ZERO : parseRate(rate)
}

const charge = (tokens: number, rate: InstanceType<typeof Money>) => (tokens === 0 ? ZERO : rate.mul(tokens).div(PER_MILLION))

/** Whether a context size lies in a tier: above its threshold, and not above its ceiling. */
const inTier = (tier: Tier, context: number) => context > tier.min && (tier.max === null || tier.max === undefined || context <= tier.max)

/**
 * Provider cost of one call, exact and unrounded (docs/guide/billing-and-usage.md).
 * - A `cliff` tier whose threshold the context exceeds reprices the whole request.
 * - `graduated` tiers price each band of context positions at that band's rate; cached tokens come
 *   first in the prompt, then fresh input, and output is priced at the band the context ended in.
 * Reasoning tokens are part of output and are not billed again.
 */
export function priceUsage(usage: Usage, rates: Rates, tiers: Tier[]): InstanceType<typeof Money> {
  const context = contextTokens(usage)
  const cliff = tiers.filter((t) => t.mode === 'cliff' && inTier(t, context)).sort((a, b) => b.min - a.min)[0]
  if (cliff) return flatCost(usage, cliff, rates)
  const bands = tiers.filter((t) => t.mode === 'graduated').sort((a, b) => a.min - b.min)
  if (bands.length === 0) return flatCost(usage, rates, rates)
  return graduatedCost(usage, rates, bands)
}

function flatCost(usage: Usage, card: RateCard, base: Rates) {
  return charge(usage.input_tokens, rateIn(card, base, 'input'))
    .plus(charge(usage.output_tokens, rateIn(card, base, 'output')))
    .plus(charge(usage.cache_read_tokens, rateIn(card, base, 'cache_read')))
    .plus(charge(usage.cache_write_tokens, rateIn(card, base, 'cache_write')))
}

function graduatedCost(usage: Usage, base: Rates, tiers: Tier[]) {
  // Bands of context positions: each tier's (min, max]; positions no tier covers (below the first,
  // in a gap, above the last ceiling) are at base rates, so every token is priced.
  const bands: { from: number; to: number; card: RateCard }[] = []
  let covered = 0
  for (const tier of tiers) {
    const from = Math.max(tier.min, covered)
    const to = tier.max ?? Number.POSITIVE_INFINITY
    if (to <= from) continue
    if (from > covered) bands.push({ from: covered, to: from, card: base })
    bands.push({ from, to, card: tier })
    covered = to
  }
  if (covered < Number.POSITIVE_INFINITY) bands.push({ from: covered, to: Number.POSITIVE_INFINITY, card: base })

  const segments: { kind: RateKind; from: number; to: number }[] = []
  let position = 0
  for (const [kind, count] of [
    ['cache_read', usage.cache_read_tokens],
    ['cache_write', usage.cache_write_tokens],
    ['input', usage.input_tokens],
  ] as const) {
    segments.push({ kind, from: position, to: position + count })
    position += count
  }

  let cost = ZERO
  for (const segment of segments) {
    for (const band of bands) {
      const overlap = Math.min(segment.to, band.to) - Math.max(segment.from, band.from)
      if (overlap > 0) cost = cost.plus(charge(overlap, rateIn(band.card, base, segment.kind)))
    }
  }
  // The band holding the last context position (base when there is no context at all).
  const last = bands.find((band) => position > band.from && position <= band.to)?.card ?? base
  return cost.plus(charge(usage.output_tokens, rateIn(last, base, 'output')))
}
