import { describe, expect, it } from 'vitest'
import { mapReasoningEffort } from '../../src/providers/map-reasoning-effort.ts'

const model = (provider: string, vendor_model_id = 'm', supports_reasoning = true) => ({ provider, vendor_model_id, supports_reasoning })

describe('mapReasoningEffort', () => {
  it('leaves every vendor its default when no effort was asked for', () => {
    for (const provider of ['anthropic', 'openai', 'google', 'mistral', 'xai', 'deepseek', 'sandbox']) {
      expect(mapReasoningEffort(model(provider), null, 4_000)).toEqual({ value: { providerOptions: {}, maxOutputTokens: 4_000 }, warnings: [] })
    }
  })

  it('anthropic: the thinking budget comes out of max_tokens, never below 1,024', () => {
    expect(mapReasoningEffort(model('anthropic'), 'medium', 20_000).value).toEqual({
      providerOptions: { anthropic: { thinking: { type: 'enabled', budgetTokens: 8_192 } } },
      maxOutputTokens: 11_808,
    })
    // High asks for 16,384; 5,000 in all leaves the answer one token.
    expect(mapReasoningEffort(model('anthropic'), 'high', 5_000).value.maxOutputTokens).toBe(1)
    const tight = mapReasoningEffort(model('anthropic'), 'low', 1_024)
    expect(tight.value.providerOptions).toEqual({ anthropic: { thinking: { type: 'disabled' } } })
    expect(tight.warnings[0]).toMatchObject({ code: 'reasoning_effort_coerced', details: { requested: 'low', applied: 'off' } })
  })

  it('openai: efforts by name; off is sent as minimal, with a warning', () => {
    expect(mapReasoningEffort(model('openai'), 'low', 9).value.providerOptions).toEqual({ openai: { reasoningEffort: 'low' } })
    expect(mapReasoningEffort(model('openai'), 'x_high', 9).value.providerOptions).toEqual({ openai: { reasoningEffort: 'xhigh' } })
    const off = mapReasoningEffort(model('openai'), 'off', 9)
    expect(off.value.providerOptions).toEqual({ openai: { reasoningEffort: 'minimal' } })
    expect(off.warnings.map((w) => w.code)).toEqual(['reasoning_effort_coerced'])
  })

  it('google: a thinking budget; Flash can stop thinking, Pro thinks at least 128 tokens', () => {
    expect(mapReasoningEffort(model('google', 'gemini-2.5-flash'), 'off', 100).value.providerOptions).toEqual({ google: { thinkingConfig: { thinkingBudget: 0 } } })
    const pro = mapReasoningEffort(model('google', 'gemini-2.5-pro'), 'off', 100)
    expect(pro.value.providerOptions).toEqual({ google: { thinkingConfig: { thinkingBudget: 128 } } })
    expect(pro.warnings.map((w) => w.code)).toEqual(['reasoning_effort_coerced'])
    expect(mapReasoningEffort(model('google', 'gemini-2.5-flash'), 'low', 10_000).value).toEqual({
      providerOptions: { google: { thinkingConfig: { thinkingBudget: 1_024, includeThoughts: true } } },
      maxOutputTokens: 8_976,
    })
  })

  it('xai and deepseek: reasoning models take no effort and say so; models that do not reason say nothing', () => {
    for (const provider of ['xai', 'deepseek']) {
      const fixed = mapReasoningEffort(model(provider), 'low', 50)
      expect(fixed.value).toEqual({ providerOptions: {}, maxOutputTokens: 50 })
      expect(fixed.warnings).toEqual([expect.objectContaining({ code: 'reasoning_effort_fixed', details: { requested: 'low' } })])
      expect(mapReasoningEffort(model(provider, 'chat', false), 'off', 50).warnings).toEqual([])
    }
  })
})
