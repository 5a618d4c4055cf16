import { describe, expect, it } from 'vitest'
import { applyMarkup, markUp, PLATFORM_MARKUP_PERCENT } from '../../../src/domain/catalogue/apply-markup.ts'
import type { CatalogueEntry } from '../../../src/domain/catalogue/catalogue-entry.ts'
import { renderModelsMarkdown } from '../../../src/domain/catalogue/render-models-markdown.ts'

const policy = { mime_types: ['image/png'], max_bytes_per_attachment: 1000 }
const entry: CatalogueEntry = {
  id: '0b9d3a52-6a4f-4f5e-9a53-2b6d7f1a0c11',
  name: 'vendor/model',
  vendor_model_id: 'model-v1',
  display_name: 'Model',
  provider: 'vendor',
  provider_label: 'Vendor',
  model_family: 'm',
  context_window: 1000,
  max_output_tokens: 100,
  max_request_bytes: 20_971_520,
  status: 'active',
  deprecated_at: null,
  retires_at: null,
  successor: null,
  supports_reasoning: false,
  supports_tools: true,
  thinking: 'none',
  media: { user: policy, tool_result: { mime_types: [], max_bytes_per_attachment: 0 }, assistant: policy, max_attachments_per_part: 20, configured: false },
  rates: { input: '1.00', output: '3.3333333333', currency: 'USD', cache_read: null },
  tiers: [{ id: 't', metric: 'context_tokens', min: 500, mode: 'graduated', max: 900, input: '0.10', output: null }],
}

describe('markUp', () => {
  it('applies the percentage exactly, with no binary rounding', () => {
    expect(PLATFORM_MARKUP_PERCENT).toBe('5')
    expect(markUp('1.00', '5')).toBe('1.05')
    expect(markUp('0.10', '5')).toBe('0.105')
    expect(markUp('0.3', '10')).toBe('0.33')
    expect(markUp('2', '0')).toBe('2')
    expect(markUp('3.3333333333', '12.5')).toBe('3.7499999999625')
  })
})

describe('applyMarkup', () => {
  it('marks up every price of rates and tiers, keeps nulls and leaves the rest alone', () => {
    const priced = applyMarkup(entry, '5')
    expect(priced.rates).toEqual({ input: '1.05', output: '3.499999999965', currency: 'USD', cache_read: null, cache_write: undefined })
    expect(priced.tiers[0]).toMatchObject({ id: 't', min: 500, max: 900, input: '0.105', output: null })
    const { rates: _r, tiers: _t, ...rest } = priced
    const { rates: _r2, tiers: _t2, ...original } = entry
    expect(rest).toEqual(original)
    expect(entry.rates.input).toBe('1.00')
  })
})

describe('renderModelsMarkdown', () => {
  it('renders a row per model, attachments and pricing conditions', () => {
    const md = renderModelsMarkdown([applyMarkup(entry, '5')], '5', '2025-10-15')
    expect(md).toContain('| vendor/model | vendor | 1000 | 100 | no | yes | 1.05 | 3.499999999965 | — | — |')
    expect(md).toContain('| vendor/model | image/png | none | image/png | 20 |')
    expect(md).toContain('context_tokens from 500 to 900')
    expect(md).toContain('5 % markup')
    expect(md).toContain('2025-10-15')
  })

  it('says so when no model has tiers', () => {
    expect(renderModelsMarkdown([], '5', '2025-10-15')).toContain('No model has tiered pricing.')
  })
})
