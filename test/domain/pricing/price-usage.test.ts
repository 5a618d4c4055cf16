import { describe, expect, it } from 'vitest'
import type { CatalogueEntry, Rates, Tier } from '../../../src/domain/catalogue/catalogue-entry.ts'
import { priceUsage } from '../../../src/domain/pricing/price-usage.ts'
import { contextTokens, ZERO_USAGE, type Usage } from '../../../src/domain/pricing/usage.ts'
import { loadCatalogue } from '../../../src/providers/catalogue/load-catalogue.ts'

/*
 * Provider cost of one call (decisions §7, docs/decisions/006): exact, unrounded, per million tokens.
 * Every expected figure below is worked by hand in the comment beside it; the assertions compare the
 * exact decimal string, so any binary-float drift or wrong tier choice fails.
 */

const catalogue = loadCatalogue()
const model = (name: string): CatalogueEntry => {
  const found = catalogue.entries.find((m) => m.name === name)
  if (!found) throw new Error(`${name} is not in catalogue/models.json`)
  return found
}
// Claude Sonnet 4.5 as its runs were billed while the 1M beta was open (2025-10-15 to its withdrawal): the tier arithmetic
// is the point here, and the shipped entry no longer has the tier (decision 041; issue 33).
const SONNET: CatalogueEntry = { ...model('anthropic/claude-sonnet-4.5'), tiers: [{ id: 'long-context', metric: 'context_tokens', min: 200000, max: null, mode: 'cliff', input: '6.00', output: '22.50', cache_read: '0.60', cache_write: '7.50' }] }
const GEMINI_PRO = model('google/gemini-2.5-pro')
const ECHO_1M = model('sandbox/echo-1m')

const usage = (u: Partial<Usage>): Usage => ({ ...ZERO_USAGE, ...u })
const cost = (u: Partial<Usage>, m: Pick<CatalogueEntry, 'rates' | 'tiers'>) => priceUsage(usage(u), m.rates, m.tiers).toFixed()

describe('the real catalogue entries these examples rely on', () => {
  it('has the published base and long-context rates used in the hand-worked figures', () => {
    expect(SONNET.rates).toMatchObject({ input: '3.00', output: '15.00', cache_read: '0.30', cache_write: '3.75' })
    expect(model('anthropic/claude-sonnet-4.5').tiers).toEqual([])
    expect(GEMINI_PRO.rates).toMatchObject({ input: '1.25', output: '10.00', cache_read: '0.31', cache_write: null })
    expect(GEMINI_PRO.tiers).toEqual([
      { id: 'long-context', metric: 'context_tokens', min: 200000, max: null, mode: 'cliff', input: '2.50', output: '15.00', cache_read: '0.625', cache_write: null },
    ])
    // decisions §6: input 1.00, output 2.00, cache read 0.10; the 1M model doubles past 200k.
    expect(ECHO_1M.rates).toMatchObject({ input: '1.00', output: '2.00', cache_read: '0.10' })
    expect(ECHO_1M.tiers).toMatchObject([{ mode: 'cliff', min: 200000, input: '2.00', output: '4.00', cache_read: '0.20' }])
  })
})

describe('context tokens (the tier metric)', () => {
  it('is input + cache read + cache write; output and reasoning are not context', () => {
    expect(contextTokens(usage({ input_tokens: 1, cache_read_tokens: 20, cache_write_tokens: 300, output_tokens: 4000, reasoning_tokens: 50000 }))).toBe(321)
  })
})

describe('cliff tiers around 200k context tokens', () => {
  describe('anthropic/claude-sonnet-4.5', () => {
    it('prices just below the threshold at the base rates', () => {
      // 199,999 × 3.00 / 1e6 = 0.599997; 1,000 × 15.00 / 1e6 = 0.015; total 0.614997
      expect(cost({ input_tokens: 199_999, output_tokens: 1_000 }, SONNET)).toBe('0.614997')
    })

    it('prices exactly at the threshold (200,000 is not above it) at the base rates', () => {
      // 200,000 × 3.00 / 1e6 = 0.6; 1,000 × 15.00 / 1e6 = 0.015; total 0.615
      expect(cost({ input_tokens: 200_000, output_tokens: 1_000 }, SONNET)).toBe('0.615')
    })

    it('reprices the whole request, output included, just above the threshold', () => {
      // 200,001 × 6.00 / 1e6 = 1.200006; 1,000 × 22.50 / 1e6 = 0.0225; total 1.222506
      expect(cost({ input_tokens: 200_001, output_tokens: 1_000 }, SONNET)).toBe('1.222506')
    })

    it('counts cache reads and writes towards the threshold', () => {
      // context 100,000 + 60,000 + 40,000 = 200,000: base rates
      //   100,000 × 3.00 = 300,000; 60,000 × 0.30 = 18,000; 40,000 × 3.75 = 150,000; 2,000 × 15.00 = 30,000
      //   sum 498,000 per million = 0.498
      expect(cost({ input_tokens: 100_000, cache_read_tokens: 60_000, cache_write_tokens: 40_000, output_tokens: 2_000 }, SONNET)).toBe('0.498')
      // context 100,000 + 60,000 + 40,001 = 200,001: every kind at the tier's rates
      //   100,000 × 6.00 = 600,000; 60,000 × 0.60 = 36,000; 40,001 × 7.50 = 300,007.5; 2,000 × 22.50 = 45,000
      //   sum 981,007.5 per million = 0.9810075
      expect(cost({ input_tokens: 100_000, cache_read_tokens: 60_000, cache_write_tokens: 40_001, output_tokens: 2_000 }, SONNET)).toBe('0.9810075')
    })
  })

  describe('google/gemini-2.5-pro', () => {
    it('prices just below the threshold at the base rates', () => {
      // context 150,000 + 49,999 = 199,999
      //   150,000 × 1.25 = 187,500; 49,999 × 0.31 = 15,499.69; 5,000 × 10.00 = 50,000
      //   sum 252,999.69 per million = 0.25299969
      expect(cost({ input_tokens: 150_000, cache_read_tokens: 49_999, output_tokens: 5_000 }, GEMINI_PRO)).toBe('0.25299969')
    })

    it('prices exactly at the threshold at the base rates', () => {
      // 200,000 × 1.25 = 250,000; 100 × 10.00 = 1,000; sum 251,000 per million = 0.251
      expect(cost({ input_tokens: 200_000, output_tokens: 100 }, GEMINI_PRO)).toBe('0.251')
    })

    it('reprices the whole request just above the threshold', () => {
      // context 150,000 + 50,001 = 200,001
      //   150,000 × 2.50 = 375,000; 50,001 × 0.625 = 31,250.625; 5,000 × 15.00 = 75,000
      //   sum 481,250.625 per million = 0.481250625
      expect(cost({ input_tokens: 150_000, cache_read_tokens: 50_001, output_tokens: 5_000 }, GEMINI_PRO)).toBe('0.481250625')
    })
  })

  describe('sandbox/echo-1m (decisions §6: doubles past the tier)', () => {
    it('prices below, at and above 200k context tokens', () => {
      // below: 199,999 × 1.00 = 199,999; 100 × 2.00 = 200; 200,199 per million = 0.200199
      expect(cost({ input_tokens: 199_999, output_tokens: 100 }, ECHO_1M)).toBe('0.200199')
      // at: 200,000 × 1.00 = 200,000; 100 × 2.00 = 200; 200,200 per million = 0.2002
      expect(cost({ input_tokens: 200_000, output_tokens: 100 }, ECHO_1M)).toBe('0.2002')
      // above: 200,001 × 2.00 = 400,002; 100 × 4.00 = 400; 400,402 per million = 0.400402
      expect(cost({ input_tokens: 200_001, output_tokens: 100 }, ECHO_1M)).toBe('0.400402')
    })

    it('doubles the cache read rate past the tier too', () => {
      // below: 150,000 × 1.00 = 150,000; 49,999 × 0.10 = 4,999.9; total 154,999.9 per million = 0.1549999
      expect(cost({ input_tokens: 150_000, cache_read_tokens: 49_999 }, ECHO_1M)).toBe('0.1549999')
      // above: 150,000 × 2.00 = 300,000; 50,001 × 0.20 = 10,000.2; total 310,000.2 per million = 0.3100002
      expect(cost({ input_tokens: 150_000, cache_read_tokens: 50_001 }, ECHO_1M)).toBe('0.3100002')
    })
  })
})

describe('cache rates', () => {
  it('prices cache reads and writes at their own rates (below any tier)', () => {
    // Sonnet: 1,000 × 3.00 = 3,000; 10,000 × 0.30 = 3,000; 20,000 × 3.75 = 75,000; 500 × 15.00 = 7,500
    //   sum 88,500 per million = 0.0885
    expect(cost({ input_tokens: 1_000, cache_read_tokens: 10_000, cache_write_tokens: 20_000, output_tokens: 500 }, SONNET)).toBe('0.0885')
  })

  it('prices a cache read alone', () => {
    // Gemini 2.5 Pro: 100,000 × 0.31 = 31,000 per million = 0.031
    expect(cost({ cache_read_tokens: 100_000 }, GEMINI_PRO)).toBe('0.031')
    // 1,000,000 cached tokens are themselves 1M context tokens, over the cliff: 1,000,000 × 0.625 = 0.625
    expect(cost({ cache_read_tokens: 1_000_000 }, GEMINI_PRO)).toBe('0.625')
  })
})

const synthetic = (rates: Omit<Rates, 'currency'>, tiers: Tier[]) => ({ rates: { ...rates, currency: 'USD' }, tiers })

describe('a tier that leaves a rate null', () => {
  // Base 1.00 / 2.00 / 0.10 / 1.25; the cliff tier over 1,000 reprices only input and cache write.
  const m = synthetic({ input: '1.00', output: '2.00', cache_read: '0.10', cache_write: '1.25' }, [
    { id: 'long', metric: 'context_tokens', min: 1_000, max: null, mode: 'cliff', input: '2.00', output: null, cache_read: null, cache_write: '2.50' },
  ])

  it('falls back to the base rate for that kind', () => {
    // context 1,000 + 500 + 100 = 1,600 > 1,000: the tier applies
    //   input 1,000 × 2.00 (tier) = 2,000; cache read 500 × 0.10 (base) = 50;
    //   cache write 100 × 2.50 (tier) = 250; output 100 × 2.00 (base) = 200
    //   sum 2,500 per million = 0.0025
    expect(cost({ input_tokens: 1_000, cache_read_tokens: 500, cache_write_tokens: 100, output_tokens: 100 }, m)).toBe('0.0025')
  })

  it('a tier rate left undefined falls back the same way', () => {
    const partial = synthetic({ input: '1.00', output: '2.00', cache_read: '0.10' }, [
      { id: 'long', metric: 'context_tokens', min: 10, mode: 'cliff', input: '3.00' },
    ])
    // context 20 > 10: 20 × 3.00 = 60; output 10 × 2.00 (base) = 20; 80 per million = 0.00008
    expect(cost({ input_tokens: 20, output_tokens: 10 }, partial)).toBe('0.00008')
  })
})

describe('a cliff tier with a ceiling', () => {
  // Two cliffs: (1,000, 2,000] at 2.00 and over 2,000 at 3.00; input only.
  const m = synthetic({ input: '1.00', output: '1.00' }, [
    { id: 'mid', metric: 'context_tokens', min: 1_000, max: 2_000, mode: 'cliff', input: '2.00', output: null },
    { id: 'top', metric: 'context_tokens', min: 2_000, max: null, mode: 'cliff', input: '3.00', output: null },
  ])

  it('applies the tier whose range holds the context', () => {
    expect(cost({ input_tokens: 1_000 }, m)).toBe('0.001') // 1,000 × 1.00
    expect(cost({ input_tokens: 2_000 }, m)).toBe('0.004') // 2,000 × 2.00 (2,000 is not above the ceiling)
    expect(cost({ input_tokens: 2_001 }, m)).toBe('0.006003') // 2,001 × 3.00
  })
})

describe('graduated tiers', () => {
  // Base band (0, 1,000]: 1.00 / 4.00 / 0.10 / 2.00
  // Band (1,000, 3,000]:  2.00 / 8.00 / 0.20 / null (falls back to 2.00)
  // Band (3,000, ∞):      3.00 / 12.00 / 0.30 / 6.00
  const m = synthetic({ input: '1.00', output: '4.00', cache_read: '0.10', cache_write: '2.00' }, [
    { id: 'band-2', metric: 'context_tokens', min: 1_000, max: 3_000, mode: 'graduated', input: '2.00', output: '8.00', cache_read: '0.20', cache_write: null },
    { id: 'band-3', metric: 'context_tokens', min: 3_000, max: null, mode: 'graduated', input: '3.00', output: '12.00', cache_read: '0.30', cache_write: '6.00' },
  ])

  it('prices a context that stays in the first band at base rates', () => {
    // 1,000 × 1.00 = 1,000; output 10 × 4.00 = 40; 1,040 per million = 0.00104
    expect(cost({ input_tokens: 1_000, output_tokens: 10 }, m)).toBe('0.00104')
  })

  it('prices only the tokens past a band edge at that band, and output at the band the context ended in', () => {
    // positions 1..1,000 at 1.00 = 1,000; position 1,001 at 2.00 = 2; output 10 × 8.00 = 80
    //   sum 1,082 per million = 0.001082
    expect(cost({ input_tokens: 1_001, output_tokens: 10 }, m)).toBe('0.001082')
  })

  it('puts cached tokens first, then fresh input, across every band they cross', () => {
    // context 800 + 400 + 2,000 = 3,200
    //   cache read  positions 1..800:       800 × 0.10 = 80
    //   cache write positions 801..1,200:   200 × 2.00 (base) + 200 × 2.00 (band 2 null → base) = 800
    //   input       positions 1,201..3,200: 1,800 × 2.00 (band 2) + 200 × 3.00 (band 3) = 4,200
    //   output      context ended in band 3: 1,000 × 12.00 = 12,000
    //   sum 17,080 per million = 0.01708
    expect(cost({ cache_read_tokens: 800, cache_write_tokens: 400, input_tokens: 2_000, output_tokens: 1_000 }, m)).toBe('0.01708')
  })

  it('prices context past the last band’s ceiling at base rates, never at zero', () => {
    // One band (1,000, 2,000] at 2.00 / 8.00 over base 1.00 / 4.00; nothing covers positions above 2,000.
    const capped = synthetic({ input: '1.00', output: '4.00' }, [
      { id: 'band', metric: 'context_tokens', min: 1_000, max: 2_000, mode: 'graduated', input: '2.00', output: '8.00' },
    ])
    // positions 1..1,000 at 1.00 = 1,000; 1,001..2,000 at 2.00 = 2,000; 2,001..3,000 at base 1.00 = 1,000
    // output: the context ended at 3,000, outside the band, so base 4.00: 10 × 4.00 = 40
    //   sum 4,040 per million = 0.00404
    expect(cost({ input_tokens: 3_000, output_tokens: 10 }, capped)).toBe('0.00404')
  })

  it('prices a gap between bands at base rates', () => {
    // Bands (1,000, 2,000] at 2.00 and (3,000, ∞) at 3.00; positions 2,001..3,000 belong to no band.
    const gapped = synthetic({ input: '1.00', output: '4.00' }, [
      { id: 'b2', metric: 'context_tokens', min: 1_000, max: 2_000, mode: 'graduated', input: '2.00', output: '8.00' },
      { id: 'b3', metric: 'context_tokens', min: 3_000, max: null, mode: 'graduated', input: '3.00', output: '12.00' },
    ])
    // context 2,500: 1,000 × 1.00 + 1,000 × 2.00 + 500 × 1.00 = 3,500; output in the gap, base: 10 × 4.00 = 40
    //   sum 3,540 per million = 0.00354
    expect(cost({ input_tokens: 2_500, output_tokens: 10 }, gapped)).toBe('0.00354')
    // context 3,500: 1,000 + 2,000 + 1,000 × 1.00 + 500 × 3.00 = 5,500; output in b3: 10 × 12.00 = 120
    //   sum 5,620 per million = 0.00562
    expect(cost({ input_tokens: 3_500, output_tokens: 10 }, gapped)).toBe('0.00562')
  })
})

describe('reasoning tokens', () => {
  it('are part of output and never billed on top of it', () => {
    // Sonnet: 100 × 3.00 = 300; 1,000 × 15.00 = 15,000; 15,300 per million = 0.0153, with or without reasoning
    expect(cost({ input_tokens: 100, output_tokens: 1_000, reasoning_tokens: 0 }, SONNET)).toBe('0.0153')
    expect(cost({ input_tokens: 100, output_tokens: 1_000, reasoning_tokens: 600 }, SONNET)).toBe('0.0153')
    expect(cost({ input_tokens: 100, output_tokens: 1_000, reasoning_tokens: 1_000 }, SONNET)).toBe('0.0153')
  })

  it('do not push the context over a cliff', () => {
    // 199,999 context tokens plus 50,000 reasoning tokens: still base rates
    //   199,999 × 3.00 = 599,997; 60,000 × 15.00 = 900,000; 1,499,997 per million = 1.499997
    expect(cost({ input_tokens: 199_999, output_tokens: 60_000, reasoning_tokens: 50_000 }, SONNET)).toBe('1.499997')
  })
})

describe('the smallest rate in the catalogue', () => {
  const rates = catalogue.entries.flatMap((m) => [
    ...[m.rates.input, m.rates.output, m.rates.cache_read, m.rates.cache_write].map((rate) => ({ model: m, rate })),
    ...m.tiers.flatMap((t) => [t.input, t.output, t.cache_read, t.cache_write].map((rate) => ({ model: m, rate }))),
  ])
  const smallest = rates
    .filter((r): r is { model: CatalogueEntry; rate: string } => typeof r.rate === 'string')
    .sort((a, b) => Number(a.rate) - Number(b.rate))[0]!

  it('is deepseek/deepseek-v4-flash cache read at 0.0028', () => {
    expect(smallest.rate).toBe('0.0028')
    expect(smallest.model.name).toBe('deepseek/deepseek-v4-flash')
    expect(smallest.model.rates.cache_read).toBe('0.0028')
  })

  it('prices one token exactly, with no float drift', () => {
    // 1 × 0.0028 / 1,000,000 = 0.0000000028, within the ledger's 10 fractional digits
    expect(cost({ cache_read_tokens: 1 }, smallest.model)).toBe('0.0000000028')
  })

  it('prices one token at every rate of every model exactly as rate / 1,000,000', () => {
    for (const m of catalogue.entries) {
      // output has no tier effect for a 1-token request (context 0), so the base rate applies
      const expected = shiftLeft(m.rates.output, 6)
      expect(cost({ output_tokens: 1 }, m), m.name).toBe(expected)
    }
  })
})

/** Divides a plain decimal string by 10^places by moving the point: pure string arithmetic. */
function shiftLeft(decimal: string, places: number): string {
  const [whole, fraction = ''] = decimal.split('.')
  const digits = `${'0'.repeat(places)}${whole}${fraction}`
  const point = digits.length - fraction.length - places
  const result = `${digits.slice(0, point)}.${digits.slice(point)}`.replace(/^0+(?=\d)/, '').replace(/\.?0+$/, '')
  return result === '' ? '0' : result
}
