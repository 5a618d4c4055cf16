import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Vendor } from './vendor-fixtures/index.ts'

/**
 * What each vendor documents as a model's token limits, written from the vendors' own pages and
 * NOT from catalogue/models.json: the replay server enforces these, and test/http/long-chats.test.ts
 * checks what Parley sends against them, so a figure copied from the catalogue would test nothing.
 * Every figure names the page it comes from. Where a page leaves a figure out or is ambiguous, the
 * comment says so and which reading the double takes (always the stricter one).
 */

export type Source = { figure: string; url: string; note?: string }

export type LongContextOptIn = {
  /** The window a request has without the opt-in. */
  standardWindow: number
  /** The request header that opts in, and the value it must list (comma-separated list). */
  header: string
  value: string
}

export type DocumentedLimits = {
  vendor: Vendor
  /** The vendor's model id, as sent in the request (`model` field or URL). */
  vendorModelId: string
  /**
   * The most input plus output ceiling one request may hold (the opt-in window for a model with a
   * long-context opt-in), or null where the vendor documents no combined window (Gemini documents
   * input and output limits apart).
   */
  window: number | null
  /** The most input tokens a request may hold, or null when only the window bounds input. */
  inputLimit: number | null
  /** The highest output ceiling a request may ask for, or null when the vendor documents none. */
  outputLimit: number | null
  longContext: LongContextOptIn | null
  sources: Source[]
}

const ANTHROPIC_MODELS = 'https://docs.claude.com/en/docs/about-claude/models/overview'
const ANTHROPIC_CONTEXT_WINDOWS = 'https://docs.claude.com/en/docs/build-with-claude/context-windows'
const OPENAI_GPT5 = 'https://platform.openai.com/docs/models/gpt-5'
const OPENAI_GPT5_MINI = 'https://platform.openai.com/docs/models/gpt-5-mini'
const OPENAI_GPT5_LAUNCH = 'https://openai.com/index/introducing-gpt-5-for-developers/'
const GEMINI_MODELS = 'https://ai.google.dev/gemini-api/docs/models'
const MISTRAL_MODELS = 'https://docs.mistral.ai/getting-started/models/models_overview/'
const XAI_MODELS = 'https://docs.x.ai/docs/models'
const DEEPSEEK_PRICING = 'https://api-docs.deepseek.com/quick_start/pricing'

/** Anthropic counts input plus max_tokens against the window (context-windows page, "input length and `max_tokens`"). */
const anthropicSources = (model: string): Source[] => [
  { figure: `${model}: context window 200K tokens, max output 64K tokens`, url: ANTHROPIC_MODELS },
  {
    figure: 'input tokens plus max_tokens must fit the context window; the API refuses the request otherwise',
    url: ANTHROPIC_CONTEXT_WINDOWS,
  },
]

export const DOCUMENTED_LIMITS: DocumentedLimits[] = [
  {
    vendor: 'anthropic',
    vendorModelId: 'claude-sonnet-4-5-20250929',
    window: 200_000,
    inputLimit: null,
    outputLimit: 64_000,
    longContext: null,
    sources: [
      { figure: 'Claude Sonnet 4.5: context window 200K tokens, max output 64K tokens; deprecated, retires November 30, 2026', url: 'https://platform.claude.com/docs/en/models/sonnet-4-5/overview' },
      { figure: 'input tokens plus max_tokens must fit the context window; the API refuses the request otherwise', url: ANTHROPIC_CONTEXT_WINDOWS },
      { figure: 'the 1M-context beta header context-1m-2025-08-07 has been withdrawn (issue 33)', url: ANTHROPIC_CONTEXT_WINDOWS, note: 'the double no longer opens 1M for it' },
    ],
  },
  {
    vendor: 'anthropic',
    vendorModelId: 'claude-sonnet-5-5',
    window: 1_000_000,
    inputLimit: null,
    outputLimit: 128_000,
    longContext: null,
    sources: [
      { figure: 'Claude Sonnet 5.5: context window 1M tokens, max output 128K tokens', url: 'https://platform.claude.com/docs/en/models/sonnet-5-5/overview' },
      { figure: 'input tokens plus max_tokens must fit the context window; the API refuses the request otherwise', url: ANTHROPIC_CONTEXT_WINDOWS },
    ],
  },
  {
    vendor: 'anthropic',
    vendorModelId: 'claude-haiku-4-5-20251001',
    window: 200_000,
    inputLimit: null,
    outputLimit: 64_000,
    longContext: null,
    sources: anthropicSources('Claude Haiku 4.5'),
  },
  {
    vendor: 'openai',
    vendorModelId: 'gpt-5',
    window: 400_000,
    inputLimit: 272_000,
    outputLimit: 128_000,
    longContext: null,
    sources: [
      { figure: 'gpt-5: 400,000 context window, 128,000 max output tokens', url: OPENAI_GPT5 },
      {
        figure: 'input limit 272,000 tokens (400,000 window less the 128,000 output)',
        url: OPENAI_GPT5_LAUNCH,
        note: 'the model page gives only the window; the 272,000 input limit is stated in the launch post and in the API error "Input tokens exceed the configured limit of 272000 tokens"',
      },
    ],
  },
  {
    vendor: 'openai',
    vendorModelId: 'gpt-5-mini',
    window: 400_000,
    inputLimit: 272_000,
    outputLimit: 128_000,
    longContext: null,
    sources: [
      { figure: 'gpt-5-mini: 400,000 context window, 128,000 max output tokens', url: OPENAI_GPT5_MINI },
      { figure: 'input limit 272,000 tokens, as gpt-5', url: OPENAI_GPT5_LAUNCH, note: 'stated for the GPT-5 family in the launch post' },
    ],
  },
  {
    vendor: 'google',
    vendorModelId: 'gemini-2.5-pro',
    window: null,
    inputLimit: 1_048_576,
    outputLimit: 65_536,
    longContext: null,
    sources: [
      {
        figure: 'gemini-2.5-pro: input token limit 1,048,576; output token limit 65,536',
        url: GEMINI_MODELS,
        note: 'Google documents input and output limits apart and no combined window; the double checks each against its own limit',
      },
    ],
  },
  {
    vendor: 'google',
    vendorModelId: 'gemini-2.5-flash',
    window: null,
    inputLimit: 1_048_576,
    outputLimit: 65_536,
    longContext: null,
    sources: [{ figure: 'gemini-2.5-flash: input token limit 1,048,576; output token limit 65,536', url: GEMINI_MODELS }],
  },
  {
    vendor: 'mistral',
    vendorModelId: 'mistral-medium-2508',
    window: 128_000,
    inputLimit: null,
    outputLimit: null,
    longContext: null,
    sources: [
      {
        figure: 'Mistral Medium 3.1 (mistral-medium-2508): max tokens 128k',
        url: MISTRAL_MODELS,
        note: 'uncertain: "128k" may mean 131,072 (the API\'s own errors have named 131072); the double takes the stricter 128,000. No separate output limit is documented, so the output ceiling is bounded by the window only, and the double assumes (stricter than known) that input plus max_tokens must fit it',
      },
    ],
  },
  {
    vendor: 'mistral',
    vendorModelId: 'mistral-small-2506',
    window: 128_000,
    inputLimit: null,
    outputLimit: null,
    longContext: null,
    sources: [
      {
        figure: 'Mistral Small 3.2 (mistral-small-2506): max tokens 128k',
        url: MISTRAL_MODELS,
        note: 'as Mistral Medium 3.1: 128,000 taken for "128k", no output limit documented, input plus max_tokens assumed to have to fit',
      },
    ],
  },
  {
    vendor: 'xai',
    vendorModelId: 'grok-4-0709',
    window: 256_000,
    inputLimit: null,
    outputLimit: null,
    longContext: null,
    sources: [
      {
        figure: 'grok-4-0709: context window 256,000 tokens',
        url: XAI_MODELS,
        note: 'no output limit is given on the models page; whether xAI counts max_tokens against the window is not documented, the double assumes it does (stricter)',
      },
    ],
  },
  {
    vendor: 'xai',
    vendorModelId: 'grok-4-fast-reasoning',
    window: 2_000_000,
    inputLimit: null,
    outputLimit: null,
    longContext: null,
    sources: [
      {
        figure: 'grok-4-fast-reasoning: context window 2,000,000 tokens',
        url: XAI_MODELS,
        note: 'as grok-4-0709: no output limit documented; input plus max_tokens assumed to have to fit',
      },
    ],
  },
  {
    vendor: 'deepseek',
    vendorModelId: 'deepseek-chat',
    window: 131_072,
    inputLimit: null,
    outputLimit: 8_192,
    longContext: null,
    sources: [
      {
        figure: 'deepseek-chat: context length 128K; max output 8K (default 4K)',
        url: DEEPSEEK_PRICING,
        note: '128K read as 131,072, the figure the API names in "This model\'s maximum context length is 131072 tokens"; 8K as 8,192, the top of the range the API names in "the valid range of max_tokens is [1, 8192]"',
      },
    ],
  },
  {
    vendor: 'deepseek',
    vendorModelId: 'deepseek-reasoner',
    window: 131_072,
    inputLimit: null,
    outputLimit: 65_536,
    longContext: null,
    sources: [
      {
        figure: 'deepseek-reasoner: context length 128K; max output 64K (default 32K)',
        url: DEEPSEEK_PRICING,
        note: '128K read as 131,072 as for deepseek-chat; 64K read as 65,536 (uncertain: the page says only "64K")',
      },
    ],
  },
  {
    vendor: 'openai',
    vendorModelId: 'gpt-5.5',
    window: 1_050_000,
    inputLimit: null,
    outputLimit: 128_000,
    longContext: null,
    sources: [{ figure: 'GPT 5.5: context length 1,050,000 tokens, max output 128,000 tokens', url: 'https://docs.oxen.ai/inference-api/reference/models/gpt-5-5-2026-04-23.md', note: "a third party's page: OpenAI's own was not found in this session" }],
  },
  {
    vendor: 'google',
    vendorModelId: 'gemini-3.8-flash',
    window: null,
    inputLimit: 1_048_576,
    outputLimit: 65_536,
    longContext: null,
    sources: [{ figure: 'Gemini 3.8 Flash: 1,048,576-token context window, 65,536-token max output', url: 'https://github.com/BerriAI/litellm/discussions/39357', note: "LiteLLM's announcement; Google's model page was not found in this session" }],
  },
  {
    vendor: 'mistral',
    vendorModelId: 'mistral-medium-2604',
    window: 256_000,
    inputLimit: null,
    outputLimit: null,
    longContext: null,
    sources: [{ figure: 'Mistral Medium 3.5: context 256k', url: 'https://docs.mistral.ai/models/model-cards/mistral-medium-3-5-26-04', note: 'the double takes the stricter 256,000 and assumes input plus max_tokens must fit it' }],
  },
  {
    vendor: 'xai',
    vendorModelId: 'grok-4.3',
    window: 1_000_000,
    inputLimit: null,
    outputLimit: null,
    longContext: null,
    sources: [{ figure: 'grok-4.3: context window 1,000,000 tokens', url: XAI_MODELS, note: 'no output limit is given; the double assumes input plus max_tokens must fit the window (stricter)' }],
  },
  {
    vendor: 'deepseek',
    vendorModelId: 'deepseek-v4-flash',
    window: 1_048_576,
    inputLimit: null,
    outputLimit: 393_216,
    longContext: null,
    sources: [{ figure: 'deepseek-v4-flash: context length 1M, max output 384K', url: DEEPSEEK_PRICING, note: '1M read as 1,048,576 (OpenRouter lists 1,048,576)' }],
  },
  {
    vendor: 'deepseek',
    vendorModelId: 'deepseek-v4-pro',
    window: 1_048_576,
    inputLimit: null,
    outputLimit: 393_216,
    longContext: null,
    sources: [{ figure: 'deepseek-v4-pro: context length 1M, max output 384K', url: DEEPSEEK_PRICING }],
  },
]

/** A model's documented limits by the id the vendor is sent; undefined for a model not in the table. */
export function documentedLimits(vendor: Vendor, vendorModelId: string): DocumentedLimits | undefined {
  return DOCUMENTED_LIMITS.find((l) => l.vendor === vendor && l.vendorModelId === vendorModelId)
}

/** The window a request is held to: the standard one unless it carries the model's long-context opt-in. */
export function windowFor(limits: DocumentedLimits, headers: Record<string, string | string[] | undefined>): number | null {
  const optIn = limits.longContext
  if (!optIn) return limits.window
  const raw = headers[optIn.header.toLowerCase()]
  const values = (Array.isArray(raw) ? raw : raw === undefined ? [] : [raw]).flatMap((v) => v.split(',').map((s) => s.trim()))
  return values.includes(optIn.value) ? limits.window : optIn.standardWindow
}

/**
 * The most bytes one request body may hold, by the vendor's model id, or null for a model the catalogue
 * does not name. The figure is catalogue/models.json's `max_request_bytes` (read as data, not through
 * src/), because only some vendors document one, and the catalogue records which:
 *   - Anthropic: 32 MB for the Messages API, "fixed per endpoint rather than per tier"
 *     (https://platform.claude.com/docs/en/api/overview#request-size-limits, restated by Anthropic in
 *     https://github.com/anthropics/anthropic-sdk-python/issues/938, 2026-08-05);
 *   - Google: 20 MB for a request with inline data (https://ai.google.dev/gemini-api/docs/file-input-methods);
 *   - OpenAI, Mistral, xAI, DeepSeek: no figure found; the catalogue's own (its sources say so), which
 *     the double holds them to so that Parley's packing is tested against what it promises.
 */
export function requestByteLimit(vendor: Vendor, vendorModelId: string): number | null {
  const entry = catalogueModels().find((m) => m.provider === vendor && m.vendor_model_id === vendorModelId)
  return entry?.max_request_bytes ?? null
}

type CatalogueModel = { provider: string; vendor_model_id: string; max_request_bytes: number | null }
let catalogue: CatalogueModel[] | null = null
const catalogueModels = (): CatalogueModel[] =>
  (catalogue ??= (JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'catalogue', 'models.json'), 'utf8')) as { models: CatalogueModel[] }).models)
