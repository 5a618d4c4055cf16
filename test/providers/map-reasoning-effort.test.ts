import { describe, expect, it } from 'vitest'
import { mapReasoningEffort } from '../../src/providers/map-reasoning-effort.ts'

const model = (provider: string, vendor_model_id = 'm', supports_reasoning = true, thinking = 'budgeted') => ({ provider, vendor_model_id, supports_reasoning, thinking })

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
    expect(mapReasoningEffort(model('openai'), 'low', 9).value.providerOptions).toEqual({ openai: { reasoningEffort: 'low', reasoningSummary: null } })
    expect(mapReasoningEffort(model('openai'), 'x_high', 9).value.providerOptions).toEqual({ openai: { reasoningEffort: 'xhigh', reasoningSummary: null } })
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
      const fixed = mapReasoningEffort(model(provider, 'm', true, 'always'), 'low', 50)
      expect(fixed.value).toEqual({ providerOptions: {}, maxOutputTokens: 50 })
      expect(fixed.warnings).toEqual([expect.objectContaining({ code: 'reasoning_effort_fixed', details: { requested: 'low' } })])
      expect(mapReasoningEffort(model(provider, 'chat', false), 'off', 50).warnings).toEqual([])
    }
  })

  it('Claude with adaptive thinking: effort by name, no budget taken from max_tokens; off is the least effort, with a warning', () => {
    const adaptive = model('anthropic', 'claude-sonnet-5-5', true, 'adaptive')
    expect(mapReasoningEffort(adaptive, 'medium', 8_000)).toEqual({
      value: { providerOptions: { anthropic: { thinking: { type: 'adaptive', display: 'summarized' }, effort: 'medium' } }, maxOutputTokens: 8_000 },
      warnings: [],
    })
    expect(mapReasoningEffort(adaptive, 'x_high', 8_000).value.providerOptions).toEqual({ anthropic: { thinking: { type: 'adaptive', display: 'summarized' }, effort: 'xhigh' } })
    expect(mapReasoningEffort(adaptive, 'max', 8_000).value.providerOptions).toEqual({ anthropic: { thinking: { type: 'adaptive', display: 'summarized' }, effort: 'max' } })
    const off = mapReasoningEffort(adaptive, 'off', 8_000)
    expect(off.value.providerOptions).toEqual({ anthropic: { thinking: { type: 'adaptive', display: 'summarized' }, effort: 'low' } })
    expect(off.warnings).toEqual([expect.objectContaining({ code: 'reasoning_effort_coerced', details: { requested: 'off', applied: 'low' } })])
  })

  it('DeepSeek V4: thinking is a switch; off turns it off, the rest turn it on at low, high or max', () => {
    const v4 = model('deepseek', 'deepseek-v4-pro', true, 'switch')
    expect(mapReasoningEffort(v4, 'off', 500)).toEqual({ value: { providerOptions: { deepseek: { thinking: { type: 'disabled' } } }, maxOutputTokens: 500 }, warnings: [] })
    expect(mapReasoningEffort(v4, 'low', 500)).toEqual({
      value: { providerOptions: { deepseek: { thinking: { type: 'enabled' }, reasoningEffort: 'low' } }, maxOutputTokens: 500 },
      warnings: [],
    })
    const medium = mapReasoningEffort(v4, 'medium', 500)
    expect(medium.value.providerOptions).toEqual({ deepseek: { thinking: { type: 'enabled' }, reasoningEffort: 'high' } })
    expect(medium.warnings).toEqual([expect.objectContaining({ code: 'reasoning_effort_coerced', details: { requested: 'medium', applied: 'high' } })])
    expect(mapReasoningEffort(v4, 'max', 500).value.providerOptions).toEqual({ deepseek: { thinking: { type: 'enabled' }, reasoningEffort: 'max' } })
    expect(mapReasoningEffort(v4, 'max', 500).warnings).toEqual([])
  })

  it('Grok with reasoning_effort: off is none; high is the most, with a warning above it', () => {
    const grok = model('xai', 'grok-4.3', true, 'effort')
    expect(mapReasoningEffort(grok, 'off', 500)).toEqual({ value: { providerOptions: { xai: { reasoningEffort: 'none' } }, maxOutputTokens: 500 }, warnings: [] })
    expect(mapReasoningEffort(grok, 'medium', 500)).toEqual({ value: { providerOptions: { xai: { reasoningEffort: 'medium' } }, maxOutputTokens: 500 }, warnings: [] })
    const max = mapReasoningEffort(grok, 'max', 500)
    expect(max.value.providerOptions).toEqual({ xai: { reasoningEffort: 'high' } })
    expect(max.warnings).toEqual([expect.objectContaining({ code: 'reasoning_effort_coerced', details: { requested: 'max', applied: 'high' } })])
  })

  it('Gemini with thinking levels: a level, not a budget; off is the least level', () => {
    const gemini3 = model('google', 'gemini-3-pro', true, 'level')
    expect(mapReasoningEffort(gemini3, 'medium', 900)).toEqual({
      value: { providerOptions: { google: { thinkingConfig: { thinkingLevel: 'medium', includeThoughts: true } } }, maxOutputTokens: 900 },
      warnings: [],
    })
    expect(mapReasoningEffort(gemini3, 'off', 900).warnings).toEqual([expect.objectContaining({ details: { requested: 'off', applied: 'low' } })])
    expect(mapReasoningEffort(gemini3, 'max', 900).value.providerOptions).toEqual({ google: { thinkingConfig: { thinkingLevel: 'high', includeThoughts: true } } })
  })
})
