import { createAnthropic } from '@ai-sdk/anthropic'
import { createDeepSeek } from '@ai-sdk/deepseek'
import { createGoogleGenerativeAI } from '@ai-sdk/google'
import { createMistral } from '@ai-sdk/mistral'
import { createOpenAI } from '@ai-sdk/openai'
import type { LanguageModelV4 } from '@ai-sdk/provider'
import { createXai } from '@ai-sdk/xai'
import type { CatalogueEntry } from '../domain/catalogue/catalogue-entry.ts'
import { baseUrlVariable, VENDOR_KEY_VARIABLES } from './catalogue/active-providers.ts'
import { encodeFilesNatively } from './encode-files-natively.ts'
import { createSandboxLanguageModel } from './sandbox/sandbox-language-model.ts'
import { readVendorCallLimits } from './vendor-call-limits.ts'
import { createVendorFetch, networkFetch, sleep, type VendorFetchDeps } from './vendor-fetch.ts'

/** The model a catalogue entry names; a sandbox entry's window and input limit are the limits the sandbox holds requests to. */
export type LanguageModelFor = (entry: Pick<CatalogueEntry, 'provider' | 'vendor_model_id'> & Partial<Pick<CatalogueEntry, 'context_window' | 'max_input_tokens'>>) => LanguageModelV4

type VendorFactory = (settings: { apiKey?: string; baseURL?: string; fetch: typeof globalThis.fetch }) => (modelId: string) => LanguageModelV4

const VENDORS: Record<string, VendorFactory> = {
  anthropic: (s) => createAnthropic(s),
  openai: (s) => createOpenAI(s),
  google: (s) => createGoogleGenerativeAI(s),
  mistral: (s) => createMistral(s),
  xai: (s) => createXai(s),
  deepseek: (s) => createDeepSeek(s),
}

/**
 * One interface for every vendor and the sandbox: the AI SDK's LanguageModelV4. Keys and base URLs
 * come from `<VENDOR>_API_KEY` / `<VENDOR>_BASE_URL` (docs/guide/vendors.md). Every vendor calls through the
 * vendor fetch: deadlines and retries before the first byte (decision 015).
 */
export function createLanguageModels(env: NodeJS.ProcessEnv): LanguageModelFor {
  return createLanguageModelsOver(env, { fetch: networkFetch(readVendorCallLimits(env)), sleep, random: Math.random, now: Date.now })
}

/**
 * The same models over a given network and clock: the vendor fetch (deadlines, retries) wraps
 * `network.fetch`. createLanguageModels passes the real network; tests pass a fetch test double
 * that answers with recorded vendor bytes (test/helpers/recorded-fetch.ts).
 */
export function createLanguageModelsOver(env: NodeJS.ProcessEnv, network: VendorFetchDeps): LanguageModelFor {
  const cache = new Map<string, LanguageModelV4>()
  const limits = readVendorCallLimits(env)
  const fetch = createVendorFetch(limits, network) as typeof globalThis.fetch
  return (entry) => {
    // A sandbox model holds its entry's window: entries sharing a vendor id with another window are another model.
    const key = `${entry.provider}/${entry.vendor_model_id}${entry.provider === 'sandbox' ? `@${entry.context_window}` : ''}`
    let model = cache.get(key)
    if (!model) {
      if (entry.provider === 'sandbox') model = createSandboxLanguageModel(
          entry.vendor_model_id,
          entry.context_window === undefined ? undefined : { contextWindow: entry.context_window, maxInputTokens: entry.max_input_tokens ?? null },
        )
      else {
        const factory = VENDORS[entry.provider]
        if (!factory) throw new Error(`no provider adapter for ${entry.provider}`)
        model = encodeFilesNatively(factory({ apiKey: env[VENDOR_KEY_VARIABLES[entry.provider]!], baseURL: env[baseUrlVariable(entry.provider)], fetch })(entry.vendor_model_id))
      }
      cache.set(key, model)
    }
    return model
  }
}
