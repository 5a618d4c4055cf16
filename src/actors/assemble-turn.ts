import { deprecationWarning } from '../domain/catalogue/lifecycle.ts'
import type { LanguageModelV4FunctionTool, LanguageModelV4Prompt } from '@ai-sdk/provider'
import type { ConfigWarning } from '../domain/config/config-types.ts'
import type { ContextManifest } from '../domain/context/context-manifest.ts'
import type { RefitRecord } from '../domain/context/refit.ts'
import { correctedTokens, type WindowInForce } from '../domain/context/model-limits.ts'
import type { TranslationWarning } from '../domain/turns/coerce-reasoning-effort.ts'
import { decideMaxTokens, type BudgetFacts } from '../domain/turns/decide-admission.ts'
import type { ReasoningEffort } from '../domain/turns/submission.ts'
import { convertToProviderPrompt } from '../providers/convert-to-provider-prompt.ts'
import { mapReasoningEffort, type VendorReasoning } from '../providers/map-reasoning-effort.ts'
import { mapCallSettings, type CallSettings } from '../providers/map-call-settings.ts'
import { vendorTranslationWarnings } from '../providers/vendor-fidelity.ts'
import type { ResolvedConfiguration } from '../store/config-resolution.ts'
import type { PackedTurn, PackRequest } from './context-history.ts'
import type { Submission } from './turn-types.ts'

/** The max_tokens a turn is sent with, and the window it fits (docs/decisions/027-model-limits.md). */
export type MaxTokensFit = {
  maxTokens: number
  window: WindowInForce
  /** The input as the vendor is expected to count it: the estimate times the model's correction. */
  correctedInputTokens: number
}

/**
 * What a turn is assembled from besides its packed context: read once by readTurn (src/actors/admit-turn.ts)
 * and kept with the run, so that compaction packs it again over its summaries (compact-for-turn.ts)
 * and assembles it the same way.
 */
export type TurnFrame = {
  submission: Submission
  /** How the turn is packed; after admission, with no new parts and the run among the current ones. */
  request: PackRequest
  instructions: string | null
  configVersions: ResolvedConfiguration['versions']
  /** The budget in force (resolveBudget's answer, its warnings included), as the manifest records it. */
  budget: { budget: PackRequest['budget'] } & Record<string, unknown>
  /** The configuration's and the budget's warnings; packing adds its own. */
  baseConfigWarnings: ConfigWarning[]
  effort: { value: ReasoningEffort | null; warnings: TranslationWarning[] }
  /** Our estimate as this model's vendor counts it (docs/decisions/027-model-limits.md). */
  correction: { correction: number; runs: number }
  markupPercent: string
  tools: LanguageModelV4FunctionTool[]
  /** The vendor refused the run's first request for its context, and the turn was packed again (src/actors/refit-turn.ts). */
  refit?: RefitRecord
}

/** What decideMaxTokens decides the 402 and max_tokens on, for a turn packed to `inputTokens` (docs/guide/billing-and-usage.md). */
export function budgetFactsOf(frame: TurnFrame, inputTokens: number, balance: string): BudgetFacts {
  const { model, request } = frame.submission
  return {
    balance,
    model,
    markupPercent: frame.markupPercent,
    inputTokens,
    correctedInputTokens: correctedTokens(inputTokens, frame.correction.correction),
    requestedMaxTokens: request.max_tokens,
    headroom: frame.request.budget.headroom,
  }
}

/** A packed turn as it is sent and recorded. */
export type AssembledTurn = {
  prompt: LanguageModelV4Prompt
  configWarnings: ConfigWarning[]
  translationWarnings: TranslationWarning[]
  maxTokens: number
  window: WindowInForce
  vendorReasoning: VendorReasoning
  /** temperature, tool_choice and response_format as the vendor's package takes them (docs/guide/turn-options.md). */
  callSettings: CallSettings
  estimatedInputTokens: number
  /** The run's manifest, over the context it sends (admission adds the parts it wrote first). */
  manifest: (context: ContextManifest) => Record<string, unknown>
}

/**
 * The one assembly of a packed turn, at admission and after compaction: the provider prompt (none
 * yet while summaries are pending), max_tokens by decideMaxTokens over `budget` (the 402's rule), the
 * vendor's reasoning options, the warnings in their order, and the manifest. A refusal by
 * decideMaxTokens is `whenRefused`'s to answer: admission's guard refused it already, compaction
 * keeps the max_tokens the run was admitted with.
 */
export function assembleTurn(
  frame: TurnFrame,
  packed: PackedTurn,
  budget: BudgetFacts,
  whenRefused: (input: { correctedInputTokens: number }) => MaxTokensFit,
  /** Whether the prompt waits for summaries still to make (compaction builds it once they are); by default, while any is needed. */
  promptWaits = packed.needed.length > 0,
): AssembledTurn {
  const { model } = frame.submission
  const prompt = promptWaits
    ? []
    : convertToProviderPrompt(frame.instructions, packed.parts, packed.bytesOf, { cacheBreakpointsAfter: packed.stablePrefixEnds, provider: model.provider })
  const configWarnings = [...frame.baseConfigWarnings, ...packed.warnings.config]
  const translationWarnings: TranslationWarning[] = [...frame.effort.warnings, ...packed.warnings.translation]
  const correctedInputTokens = budget.correctedInputTokens ?? budget.inputTokens
  const decided = decideMaxTokens(budget)
  let sent: MaxTokensFit
  if (decided.value.kind === 'reject') sent = whenRefused({ correctedInputTokens })
  else {
    translationWarnings.push(...decided.warnings)
    sent = { maxTokens: decided.value.maxTokens, window: decided.value.window, correctedInputTokens }
  }
  const vendorReasoning = mapReasoningEffort(model, frame.effort.value, sent.maxTokens)
  translationWarnings.push(...vendorReasoning.warnings)
  const callSettings = mapCallSettings(model.provider, frame.submission.request)
  translationWarnings.push(...callSettings.warnings)
  // What the vendor will not keep: strict, is_error (decision 017).
  translationWarnings.push(...vendorTranslationWarnings(model.provider, packed.parts, frame.tools))
  // A deprecated model runs with a warning naming its retirement and successor (decision 041).
  if (model.status === 'deprecated') translationWarnings.push(deprecationWarning(model))
  const estimated = packed.estimatedTokens
  const manifest = (context: ContextManifest) => ({
    model: model.name,
    model_id: model.id,
    vendor_model_id: model.vendor_model_id,
    config_versions: frame.configVersions,
    budget: { ...frame.budget, input_budget: context.input_budget },
    context,
    estimated_input_tokens: estimated,
    // The estimate as the vendor is expected to count it, and the correction learned for this model.
    token_estimate: { estimated, correction: frame.correction.correction, corrected: sent.correctedInputTokens, runs: frame.correction.runs },
    max_tokens: sent.maxTokens,
    // What the request had to fit (docs/decisions/027-model-limits.md).
    limits: { window: sent.window.window, input_limit: model.max_input_tokens ?? null, long_context: sent.window.longContext },
    reasoning_effort: frame.effort.value,
    vendor_reasoning: vendorReasoning.value.providerOptions,
    // docs/guide/turn-options.md: what the turn asked of the call, as sent.
    call_settings: callSettings.value,
    instructions_sent: frame.instructions !== null,
    markup_percent: frame.markupPercent,
    retry_of: frame.submission.request.retry_of ?? null,
    // docs/decisions/044-context-refusal-refit.md: the refused request, and this one.
    refit: frame.refit ? { ...frame.refit, after: { estimated_input_tokens: estimated, correction: frame.correction.correction, max_tokens: sent.maxTokens } } : null,
    warnings: { config: configWarnings, translation: translationWarnings },
    ...(frame.submission.openaiRequest ? { openai_request: frame.submission.openaiRequest } : {}),
  })
  return {
    prompt,
    configWarnings,
    translationWarnings,
    maxTokens: sent.maxTokens,
    window: sent.window,
    vendorReasoning: vendorReasoning.value,
    callSettings: callSettings.value,
    estimatedInputTokens: estimated,
    manifest,
  }
}
