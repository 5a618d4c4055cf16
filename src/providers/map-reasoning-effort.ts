import type { SharedV3ProviderOptions } from '@ai-sdk/provider'
import type { CatalogueEntry } from '../domain/catalogue/catalogue-entry.ts'
import type { TranslationWarning } from '../domain/turns/coerce-reasoning-effort.ts'
import type { ReasoningEffort } from '../domain/turns/submission.ts'

export type VendorReasoning = {
  /** What the vendor's AI SDK package reads to set its reasoning (decision 010). */
  providerOptions: SharedV3ProviderOptions
  /** Output tokens left for the answer: a thinking budget counted apart comes out of max_tokens. */
  maxOutputTokens: number
}

type Effort = Exclude<ReasoningEffort, 'off'>

// Thinking budgets in tokens. Anthropic's least is 1,024; Gemini 2.5 Flash's most is 24,576.
const ANTHROPIC_BUDGET: Record<Effort, number> = { low: 2_048, medium: 8_192, high: 16_384, x_high: 32_768, max: 63_999 }
const GEMINI_BUDGET: Record<Effort, number> = { low: 1_024, medium: 8_192, high: 24_576, x_high: 24_576, max: 24_576 }
const ANTHROPIC_LEAST_BUDGET = 1_024
// Gemini 2.5 Pro cannot stop thinking: its least budget is 128.
const GEMINI_PRO_LEAST_BUDGET = 128
const OPENAI_EFFORT: Record<Effort, string> = { low: 'low', medium: 'medium', high: 'high', x_high: 'xhigh', max: 'xhigh' }

const coerced = (requested: ReasoningEffort, applied: string, why: string): TranslationWarning => ({
  code: 'reasoning_effort_coerced',
  message: `reasoning_effort ${requested} was sent as ${applied}: ${why}`,
  details: { requested, applied },
})

/**
 * The (already coerced) reasoning effort as each vendor takes it. Null leaves the vendor's default.
 * A vendor whose models reason at a fixed effort (xAI's Grok 4, DeepSeek's reasoner) gets nothing
 * and the caller a warning. Pure; the warnings join the turn's `translation_warnings`.
 */
export function mapReasoningEffort(
  model: Pick<CatalogueEntry, 'provider' | 'vendor_model_id' | 'supports_reasoning'>,
  effort: ReasoningEffort | null,
  maxTokens: number,
): { value: VendorReasoning; warnings: TranslationWarning[] } {
  const plain = { providerOptions: {}, maxOutputTokens: maxTokens }
  if (effort === null) return { value: plain, warnings: [] }
  switch (model.provider) {
    case 'anthropic': {
      if (effort === 'off') return { value: { ...plain, providerOptions: { anthropic: { thinking: { type: 'disabled' } } } }, warnings: [] }
      // The SDK asks for max_tokens = answer + budget: the budget comes out of what the turn may spend.
      const budget = Math.min(ANTHROPIC_BUDGET[effort], maxTokens - 1)
      if (budget < ANTHROPIC_LEAST_BUDGET) {
        return {
          value: { ...plain, providerOptions: { anthropic: { thinking: { type: 'disabled' } } } },
          warnings: [coerced(effort, 'off', `max_tokens ${maxTokens} leaves no room for the least thinking budget (${ANTHROPIC_LEAST_BUDGET})`)],
        }
      }
      return {
        value: { providerOptions: { anthropic: { thinking: { type: 'enabled', budgetTokens: budget } } }, maxOutputTokens: maxTokens - budget },
        warnings: [],
      }
    }
    case 'openai': {
      if (effort === 'off') {
        return {
          value: { ...plain, providerOptions: { openai: { reasoningEffort: 'minimal' } } },
          warnings: [coerced(effort, 'minimal', 'this model always reasons; minimal is its least effort')],
        }
      }
      return { value: { ...plain, providerOptions: { openai: { reasoningEffort: OPENAI_EFFORT[effort] } } }, warnings: [] }
    }
    case 'google': {
      const pro = model.vendor_model_id.startsWith('gemini-2.5-pro')
      if (effort === 'off') {
        if (!pro) return { value: { ...plain, providerOptions: { google: { thinkingConfig: { thinkingBudget: 0 } } } }, warnings: [] }
        return {
          value: { ...plain, providerOptions: { google: { thinkingConfig: { thinkingBudget: GEMINI_PRO_LEAST_BUDGET } } } },
          warnings: [coerced(effort, 'low', `this model always thinks; its least budget is ${GEMINI_PRO_LEAST_BUDGET} tokens`)],
        }
      }
      // Thinking is billed as output: like Anthropic's, the budget comes out of what the turn may spend.
      const budget = Math.max(pro ? GEMINI_PRO_LEAST_BUDGET : 0, Math.min(GEMINI_BUDGET[effort], maxTokens - 1))
      return {
        value: {
          providerOptions: { google: { thinkingConfig: { thinkingBudget: budget, includeThoughts: true } } },
          maxOutputTokens: Math.max(1, maxTokens - budget),
        },
        warnings: [],
      }
    }
    case 'xai':
    case 'deepseek':
      // A model that does not reason was coerced to off already, which it honours by itself.
      if (!model.supports_reasoning) return { value: plain, warnings: [] }
      return {
        value: plain,
        warnings: [
          {
            code: 'reasoning_effort_fixed',
            message: `this model reasons at a fixed effort; reasoning_effort ${effort} has no effect`,
            details: { requested: effort },
          },
        ],
      }
    default:
      // Mistral's catalogue models do not reason; the sandbox reasons only when a prompt says /think.
      return { value: plain, warnings: [] }
  }
}
