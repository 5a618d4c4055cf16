import type { LanguageModelV4, LanguageModelV4CallOptions } from '@ai-sdk/provider'
import type { LanguageModelFor } from '../../src/providers/language-models.ts'
import { createSandboxLanguageModel } from '../../src/providers/sandbox/sandbox-language-model.ts'
import { estimatePromptTokens } from '../../src/providers/estimate-prompt-tokens.ts'
import { sandboxLimitsOf } from './turns.ts'

/** A compaction run's range, as src/actors/summarise-block.ts tells the sandbox; null for a customer call. */
export const compactionOf = (options: LanguageModelV4CallOptions): { firstOrdinal: number; lastOrdinal: number } | null =>
  (options.providerOptions?.sandbox as { compaction?: { firstOrdinal: number; lastOrdinal: number } } | undefined)?.compaction ?? null

/**
 * The real sandbox models, every call first shown to `before` (a test's gate, counter or recorder),
 * which may hold it or throw. One model object per vendor model id.
 */
export function sandboxThrough(before: (options: LanguageModelV4CallOptions) => Promise<void> | void): LanguageModelFor {
  const models = new Map<string, LanguageModelV4>()
  return (entry) => {
    const key = `${entry.vendor_model_id}@${entry.context_window}`
    let model = models.get(key)
    if (!model) {
      // Held to its entry's window, as the app's sandbox is.
      const inner = createSandboxLanguageModel(entry.vendor_model_id, sandboxLimitsOf(entry))
      model = {
        ...inner,
        async doStream(options) {
          await before(options)
          return inner.doStream(options)
        },
      }
      models.set(key, model)
    }
    return model
  }
}

/** One compaction call as the sandbox received it: its own count of the prompt, the max_tokens asked, the window of the model it reached. */
export type ReceivedCompaction = {
  model: string
  firstOrdinal: number
  lastOrdinal: number
  input: number
  maxTokens: number
  window: number
  inputLimit: number | null
  /** The model's token correction when the call was made (the factor Parley expects the vendor to count by). */
  correction: number
  text: string
}

/**
 * The real sandbox models held to their entries' windows, recording every compaction call as it
 * arrived (decision 043): what the model actually received, counted by the vendor's side, not a
 * figure Parley computed for itself. `also` sees every call first (a recorder of customer prompts).
 */
export function recordingCompactions(
  also: (options: LanguageModelV4CallOptions) => void = () => undefined,
  correctionOf: (modelId: string) => number = () => 1,
) {
  const received: ReceivedCompaction[] = []
  const models = new Map<string, LanguageModelV4>()
  const languageModelFor: LanguageModelFor = (entry) => {
    const key = `${entry.vendor_model_id}@${entry.context_window}`
    let model = models.get(key)
    if (!model) {
      const inner = createSandboxLanguageModel(entry.vendor_model_id, sandboxLimitsOf(entry))
      model = {
        ...inner,
        async doStream(options) {
          also(options)
          const range = compactionOf(options)
          if (range) {
            received.push({
              model: entry.vendor_model_id,
              ...range,
              input: estimatePromptTokens(options.prompt),
              maxTokens: options.maxOutputTokens ?? 0,
              window: entry.context_window!,
              inputLimit: entry.max_input_tokens ?? null,
              // The run layer passes the whole catalogue entry: its id names the model's correction.
              correction: correctionOf((entry as { id?: string }).id ?? ''),
              text: options.prompt.flatMap((m) => (typeof m.content === 'string' ? [m.content] : m.content.flatMap((c) => (c.type === 'text' ? [c.text] : [])))).join('\n'),
            })
          }
          return inner.doStream(options)
        },
      }
      models.set(key, model)
    }
    return model
  }
  return { languageModelFor, received }
}
