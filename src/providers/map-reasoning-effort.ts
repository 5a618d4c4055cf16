import type { SharedV4ProviderOptions } from '@ai-sdk/provider'
import type { CatalogueEntry } from '../domain/catalogue/catalogue-entry.ts'
import type { TranslationWarning } from '../domain/turns/coerce-reasoning-effort.ts'
import type { ReasoningEffort } from '../domain/turns/submission.ts'

export type VendorReasoning = {
  /** What the vendor's AI SDK package reads to set its reasoning (decision 010). */
  providerOptions: SharedV4ProviderOptions
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
  model: Pick<CatalogueEntry, 'provider' | 'vendor_model_id' | 'supports_reasoning' | 'thinking'>,
  effort: ReasoningEffort | null,
  maxTokens: number,
): { value: VendorReasoning; warnings: TranslationWarning[] } {
  const plain = { providerOptions: {}, maxOutputTokens: maxTokens }
  if (effort === null) return { value: plain, warnings: [] }
  switch (model.provider) {
    case 'anthropic': {
      if (model.thinking === 'adaptive') return adaptiveThinking(effort, maxTokens)
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
      // @ai-sdk/openai 4 asks for a 'detailed' reasoning summary whenever an effort is set; OpenAI
      // serves summaries only to verified organisations, so asking would fail the others' turns.
      // Parley asks for none, as before (decision 010).
      return { value: { ...plain, providerOptions: { openai: { reasoningEffort: OPENAI_EFFORT[effort], reasoningSummary: null } } }, warnings: [] }
    }
    case 'google': {
      if (model.thinking === 'level') return geminiThinkingLevel(effort, maxTokens)
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
      if (model.provider === 'xai' && model.thinking === 'effort') return xaiEffort(effort, maxTokens)
      if (model.provider === 'deepseek' && model.thinking === 'switch') return deepseekThinking(effort, maxTokens)
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


/** Parley's effort as the vendor's own names, with the name each effort falls back to when the vendor has fewer. */
type EffortNames = Record<Effort, string>

function byName(requested: ReasoningEffort, names: EffortNames, effort: Effort, note: string): TranslationWarning[] {
  const applied = names[effort]
  const same = applied === effort || (effort === 'x_high' && applied === 'xhigh')
  return same ? [] : [coerced(requested, applied, note)]
}

// Claude's effort parameter (low, medium, high, xhigh, max): Parley's efforts map one to one.
const CLAUDE_EFFORT: EffortNames = { low: 'low', medium: 'medium', high: 'high', x_high: 'xhigh', max: 'max' }

/**
 * Claude models with adaptive thinking (thinking `adaptive` in the catalogue): the model decides how
 * long to think and `effort` steers it (@ai-sdk/anthropic 4, providerOptions.anthropic.effort and
 * thinking.type 'adaptive'). These models refuse `disabled` thinking, so off is sent as the least
 * effort, with a warning. Thinking counts towards max_tokens with no budget of its own; the summarised
 * display keeps the thinking visible as reasoning blocks, as the budgeted models' was.
 */
function adaptiveThinking(effort: ReasoningEffort, maxTokens: number): { value: VendorReasoning; warnings: TranslationWarning[] } {
  const applied: Effort = effort === 'off' ? 'low' : effort
  return {
    value: { providerOptions: { anthropic: { thinking: { type: 'adaptive', display: 'summarized' }, effort: CLAUDE_EFFORT[applied] } }, maxOutputTokens: maxTokens },
    warnings: effort === 'off' ? [coerced(effort, 'low', 'this model always thinks adaptively; low is its least effort')] : [],
  }
}

// Gemini 3's thinking levels (@ai-sdk/google 4 thinkingConfig.thinkingLevel).
const GEMINI_LEVEL: EffortNames = { low: 'low', medium: 'medium', high: 'high', x_high: 'high', max: 'high' }

/** Gemini models that take a thinking level instead of a budget (thinking `level`): off is the least level. */
function geminiThinkingLevel(effort: ReasoningEffort, maxTokens: number): { value: VendorReasoning; warnings: TranslationWarning[] } {
  const applied: Effort = effort === 'off' ? 'low' : effort
  const warnings =
    effort === 'off' ? [coerced(effort, 'low', 'this model always thinks; low is its least level')] : byName(effort, GEMINI_LEVEL, applied, 'high is this model’s most thinking level')
  return {
    value: { providerOptions: { google: { thinkingConfig: { thinkingLevel: GEMINI_LEVEL[applied], includeThoughts: true } } }, maxOutputTokens: maxTokens },
    warnings,
  }
}

// Grok's reasoning_effort on the Responses API (none, low, medium, high, xhigh on the newest).
const GROK_EFFORT: EffortNames = { low: 'low', medium: 'medium', high: 'high', x_high: 'high', max: 'high' }

/** Grok models that take reasoning_effort (thinking `effort`): off is `none`. */
function xaiEffort(effort: ReasoningEffort, maxTokens: number): { value: VendorReasoning; warnings: TranslationWarning[] } {
  if (effort === 'off') return { value: { providerOptions: { xai: { reasoningEffort: 'none' } }, maxOutputTokens: maxTokens }, warnings: [] }
  return {
    value: { providerOptions: { xai: { reasoningEffort: GROK_EFFORT[effort] } }, maxOutputTokens: maxTokens },
    warnings: byName(effort, GROK_EFFORT, effort, 'high is this model’s most effort'),
  }
}

// DeepSeek V4's canonical efforts are low, high and max (@ai-sdk/deepseek 3 maps others with a warning).
const DEEPSEEK_EFFORT: EffortNames = { low: 'low', medium: 'high', high: 'high', x_high: 'max', max: 'max' }

/**
 * DeepSeek V4 (thinking `switch`): thinking is a request parameter, not a model name. Off turns it
 * off; any other effort turns it on at the nearest of DeepSeek's efforts.
 */
function deepseekThinking(effort: ReasoningEffort, maxTokens: number): { value: VendorReasoning; warnings: TranslationWarning[] } {
  if (effort === 'off') return { value: { providerOptions: { deepseek: { thinking: { type: 'disabled' } } }, maxOutputTokens: maxTokens }, warnings: [] }
  return {
    value: { providerOptions: { deepseek: { thinking: { type: 'enabled' }, reasoningEffort: DEEPSEEK_EFFORT[effort] } }, maxOutputTokens: maxTokens },
    warnings: byName(effort, DEEPSEEK_EFFORT, effort, 'DeepSeek’s efforts are low, high and max'),
  }
}
