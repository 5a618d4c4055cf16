import { createAnthropic } from '@ai-sdk/anthropic'
import { createDeepSeek } from '@ai-sdk/deepseek'
import { createGoogleGenerativeAI } from '@ai-sdk/google'
import { createMistral } from '@ai-sdk/mistral'
import { createOpenAI } from '@ai-sdk/openai'
import type { LanguageModelV4 } from '@ai-sdk/provider'
import { createXai } from '@ai-sdk/xai'
import type { CatalogueEntry } from '../domain/catalogue/catalogue-entry.ts'
import { baseUrlVariable, vendorKey } from './catalogue/active-providers.ts'
import { encodeFilesNatively } from './encode-files-natively.ts'
import { createSandboxLanguageModel } from './sandbox/sandbox-language-model.ts'
import { readVendorCallLimits } from './vendor-call-limits.ts'
import { THIN_FORMATS } from './thin/formats.ts'
import { thinDoStream, type ThinFormat } from './thin/thin-model.ts'
import { currentVendorCall, type VendorCallRecord } from './vendor-call-record.ts'
import { createVendorFetch, networkFetch, sleep, type VendorFetch, type VendorFetchDeps } from './vendor-fetch.ts'

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
  const fetch = createVendorFetch(limits, network)
  // VENDOR_THIN_STREAMS=0 sends every call through the vendor's package (decision 050).
  const thin = env.VENDOR_THIN_STREAMS !== '0'
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
        const settings = { apiKey: vendorKey(env, entry.provider), baseURL: env[baseUrlVariable(entry.provider)] }
        const modelId = entry.vendor_model_id
        model = encodeFilesNatively(vendorModel((f) => factory({ ...settings, fetch: f })(modelId), fetch, thin ? THIN_FORMATS[entry.provider] : undefined))
      }
      cache.set(key, model)
    }
    return model
  }
}

type Fetch = typeof globalThis.fetch

/**
 * A vendor's model as the run calls it. Each call gets the package's model over a fetch bound to
 * that call's record (src/providers/vendor-call-record.ts, read as the call starts: no
 * AsyncLocalStorage); the package's model is a few closures, made in microseconds. A call the
 * vendor's thin path covers (./thin, decision 050, decided from the call's options before it is
 * made) streams through it; every other call, and every call of a vendor without one, through the
 * package alone.
 */
function vendorModel(make: (fetch: Fetch) => LanguageModelV4, vendorFetch: VendorFetch, thin: ThinFormat | undefined): LanguageModelV4 {
  const shared = make(vendorFetch as Fetch)
  const fetchFor = (record: VendorCallRecord | undefined): Fetch => (record ? (input, init) => vendorFetch(input, init, record) : (vendorFetch as Fetch))
  return {
    specificationVersion: shared.specificationVersion,
    get provider() {
      return shared.provider
    },
    get modelId() {
      return shared.modelId
    },
    get supportedUrls() {
      return shared.supportedUrls
    },
    doGenerate: (options) => {
      const record = currentVendorCall()
      return (record ? make(fetchFor(record)) : shared).doGenerate(options)
    },
    doStream: (options) => {
      const record = currentVendorCall()
      if (thin?.covers(options)) return thinDoStream(thin, make, fetchFor(record), options)
      return (record ? make(fetchFor(record)) : shared).doStream(options)
    },
  }
}
