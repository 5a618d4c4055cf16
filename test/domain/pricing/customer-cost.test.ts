import { describe, expect, it } from 'vitest'
import type { CatalogueEntry } from '../../../src/domain/catalogue/catalogue-entry.ts'
import { PLATFORM_MARKUP_PERCENT } from '../../../src/domain/catalogue/apply-markup.ts'
import { customerCost } from '../../../src/domain/pricing/customer-cost.ts'
import { ZERO_USAGE, type Usage } from '../../../src/domain/pricing/usage.ts'
import { loadCatalogue } from '../../../src/providers/catalogue/load-catalogue.ts'

/*
 * What the customer pays (decisions §7): provider cost × (1 + markup/100), exact, rounded once,
 * half to even, to 10 fractional digits. Each expected string is worked by hand beside it.
 */

const catalogue = loadCatalogue()
const model = (name: string): CatalogueEntry => catalogue.entries.find((m) => m.name === name)!
// Claude Sonnet 4.5 as its runs were billed while the 1M beta was open (2025-10-15 to its withdrawal): the tier arithmetic
// is the point here, and the shipped entry no longer has the tier (decision 041; issue 33).
const SONNET: CatalogueEntry = { ...model('anthropic/claude-sonnet-4.5'), tiers: [{ id: 'long-context', metric: 'context_tokens', min: 200000, max: null, mode: 'cliff', input: '6.00', output: '22.50', cache_read: '0.60', cache_write: '7.50' }] }
const ECHO_1M = model('sandbox/echo-1m')
const GPT_5_MINI = model('openai/gpt-5-mini')

const usage = (u: Partial<Usage>): Usage => ({ ...ZERO_USAGE, ...u })
/** A one-rate model: every kind of token costs `rate` per million. */
const flat = (rate: string): Pick<CatalogueEntry, 'rates' | 'tiers'> => ({
  rates: { input: rate, output: rate, cache_read: rate, cache_write: rate, currency: 'USD' },
  tiers: [],
})

describe('markup', () => {
  it('is 5 percent on the platform', () => {
    expect(PLATFORM_MARKUP_PERCENT).toBe('5')
  })

  it('adds 5 percent to a cliff-tier request just above 200k', () => {
    // provider: 200,001 × 6.00 + 1,000 × 22.50 = 1,222,506 per million = 1.222506
    // × 1.05 = 1.222506 + 0.0611253 = 1.2836313
    expect(customerCost(usage({ input_tokens: 200_001, output_tokens: 1_000 }), SONNET, '5')).toBe('1.2836313')
  })

  it('adds 5 percent to the same request just below 200k, at base rates', () => {
    // provider: 199,999 × 3.00 + 1,000 × 15.00 = 614,997 per million = 0.614997
    // × 1.05 = 0.614997 + 0.03074985 = 0.64574685
    expect(customerCost(usage({ input_tokens: 199_999, output_tokens: 1_000 }), SONNET, '5')).toBe('0.64574685')
  })

  it('applies a custom organisation markup of 7.5 percent', () => {
    // 1.222506 × 1.075 = 1.222506 + 0.09168795 = 1.31419395
    expect(customerCost(usage({ input_tokens: 200_001, output_tokens: 1_000 }), SONNET, '7.5')).toBe('1.31419395')
  })

  it('is provider cost at a markup of zero', () => {
    expect(customerCost(usage({ input_tokens: 200_001, output_tokens: 1_000 }), SONNET, '0')).toBe('1.222506')
  })

  it('prices the sandbox long-context request with cache reads', () => {
    // echo-1m above 200k: 150,000 × 2.00 + 50,001 × 0.20 + 100 × 4.00 = 300,000 + 10,000.2 + 400
    //   = 310,400.2 per million = 0.3104002; × 1.05 = 0.3104002 + 0.01552001 = 0.32592021
    expect(customerCost(usage({ input_tokens: 150_000, cache_read_tokens: 50_001, output_tokens: 100 }), ECHO_1M, '5')).toBe('0.32592021')
  })
})

describe('rounding: once, half to even, 10 fractional digits', () => {
  it('rounds an exact half down to an even last digit', () => {
    // 1 × 0.001 / 1e6 = 0.000000001; × 1.05 = 0.00000000105 → 0.0000000010|5 → even 0 stays: 0.000000001
    // (half-up would give 0.0000000011)
    expect(customerCost(usage({ input_tokens: 1 }), flat('0.001'), '5')).toBe('0.000000001')
  })

  it('rounds an exact half up to an even last digit', () => {
    // 3 × 0.001 / 1e6 = 0.000000003; × 1.05 = 0.00000000315 → 0.0000000031|5 → odd 1 goes to 2: 0.0000000032
    expect(customerCost(usage({ input_tokens: 3 }), flat('0.001'), '5')).toBe('0.0000000032')
  })

  it('rounds a half at markup zero to even', () => {
    // 1 × 0.00025 / 1e6 = 0.00000000025 → 0.0000000002|5 → 0.0000000002 (half-up: 0.0000000003)
    expect(customerCost(usage({ output_tokens: 1 }), flat('0.00025'), '0')).toBe('0.0000000002')
    // 1 × 0.00035 / 1e6 = 0.00000000035 → 0.0000000003|5 → 0.0000000004
    expect(customerCost(usage({ output_tokens: 1 }), flat('0.00035'), '0')).toBe('0.0000000004')
  })

  it('rounds once, after the markup, not the provider cost first', () => {
    // provider 0.00000000025 × 1.05 = 0.0000000002625 → 0.0000000002|625 → above half: 0.0000000003
    // (rounding the provider cost first would give 0.0000000002 × 1.05 = 0.00000000021 → 0.0000000002)
    expect(customerCost(usage({ input_tokens: 1 }), flat('0.00025'), '5')).toBe('0.0000000003')
  })

  it('keeps every digit when there are ten or fewer', () => {
    // 7 × 3.00 + 11 × 15.00 = 21 + 165 = 186 per million = 0.000186; × 1.05 = 0.0001953
    expect(customerCost(usage({ input_tokens: 7, output_tokens: 11 }), SONNET, '5')).toBe('0.0001953')
  })
})

describe('a 1-token request at the smallest rate in the catalogue', () => {
  it('is exact at provider cost and at the platform markup', () => {
    // openai/gpt-5-mini cache read 0.025 per million: 1 token = 0.000000025
    expect(GPT_5_MINI.rates.cache_read).toBe('0.025')
    expect(customerCost(usage({ cache_read_tokens: 1 }), GPT_5_MINI, '0')).toBe('0.000000025')
    // × 1.05 = 0.00000002625 → 0.0000000262|5 → even 2 stays: 0.0000000262
    // (floats give 2.6250000000000003e-8, which would round to ...263)
    expect(customerCost(usage({ cache_read_tokens: 1 }), GPT_5_MINI, '5')).toBe('0.0000000262')
    // × 1.075 = 0.000000026875 → 0.0000000268|75 → 0.0000000269
    expect(customerCost(usage({ cache_read_tokens: 1 }), GPT_5_MINI, '7.5')).toBe('0.0000000269')
  })
})

describe('reasoning tokens', () => {
  it('do not change what the customer pays', () => {
    // Sonnet: 100 × 3.00 + 1,000 × 15.00 = 15,300 per million = 0.0153; × 1.05 = 0.016065
    const without = customerCost(usage({ input_tokens: 100, output_tokens: 1_000 }), SONNET, '5')
    const withReasoning = customerCost(usage({ input_tokens: 100, output_tokens: 1_000, reasoning_tokens: 900 }), SONNET, '5')
    expect(without).toBe('0.016065')
    expect(withReasoning).toBe('0.016065')
  })
})
