import type { LanguageModelV3, LanguageModelV3CallOptions } from '@ai-sdk/provider'
import type { LanguageModelFor } from '../../src/providers/language-models.ts'
import { createSandboxLanguageModel } from '../../src/providers/sandbox/sandbox-language-model.ts'
import { sandboxLimitsOf } from './turns.ts'

/** A compaction run's range, as src/actors/summarise-block.ts tells the sandbox; null for a customer call. */
export const compactionOf = (options: LanguageModelV3CallOptions): { firstOrdinal: number; lastOrdinal: number } | null =>
  (options.providerOptions?.sandbox as { compaction?: { firstOrdinal: number; lastOrdinal: number } } | undefined)?.compaction ?? null

/**
 * The real sandbox models, every call first shown to `before` (a test's gate, counter or recorder),
 * which may hold it or throw. One model object per vendor model id.
 */
export function sandboxThrough(before: (options: LanguageModelV3CallOptions) => Promise<void> | void): LanguageModelFor {
  const models = new Map<string, LanguageModelV3>()
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
