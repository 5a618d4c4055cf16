import type { LanguageModelV4, LanguageModelV4CallOptions } from '@ai-sdk/provider'
import type { LanguageModelFor } from '../../src/providers/language-models.ts'
import { createSandboxLanguageModel } from '../../src/providers/sandbox/sandbox-language-model.ts'

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
    let model = models.get(entry.vendor_model_id)
    if (!model) {
      const inner = createSandboxLanguageModel(entry.vendor_model_id)
      model = {
        ...inner,
        async doStream(options) {
          await before(options)
          return inner.doStream(options)
        },
      }
      models.set(entry.vendor_model_id, model)
    }
    return model
  }
}
