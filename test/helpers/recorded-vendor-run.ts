import type { LanguageModelV4FunctionTool, LanguageModelV4Prompt } from '@ai-sdk/provider'
import { executeRun } from '../../src/actors/execute-run.ts'
import { endStream } from '../../src/actors/finish-run.ts'
import { framesOf, nextEvent, RunChannel } from '../../src/actors/run-channel.ts'
import type { DomainError } from '../../src/domain/errors.ts'
import type { RunDeps } from '../../src/actors/run-deps.ts'
import type { Admission } from '../../src/actors/turn-types.ts'
import type { CatalogueEntry } from '../../src/domain/catalogue/catalogue-entry.ts'
import type { PackedPart, RenderedPart } from '../../src/domain/context/context-types.ts'
import type { PartBody } from '../../src/domain/parts.ts'
import { customerCost } from '../../src/domain/pricing/customer-cost.ts'
import type { RunOutcome } from '../../src/domain/runs/run-outcome.ts'
import type { TranslationWarning } from '../../src/domain/turns/coerce-reasoning-effort.ts'
import type { ReasoningEffort } from '../../src/domain/turns/submission.ts'
import { baseUrlVariable, VENDOR_KEY_VARIABLES } from '../../src/providers/catalogue/active-providers.ts'
import { loadCatalogue } from '../../src/providers/catalogue/load-catalogue.ts'
import { convertToProviderPrompt } from '../../src/providers/convert-to-provider-prompt.ts'
import { createLanguageModelsOver } from '../../src/providers/language-models.ts'
import { mapReasoningEffort } from '../../src/providers/map-reasoning-effort.ts'
import { FIXTURES, type ReplayResponse, type Vendor } from '../e2e/vendor-fixtures/index.ts'
import { createRecordedFetch, type RecordedFetchRequest } from './recorded-fetch.ts'
import { VENDOR_MODELS } from './vendor-cases.ts'

/**
 * One run on a real vendor model, in process: the catalogue model built as production builds it
 * (src/providers/language-models.ts: the @ai-sdk package behind the vendor fetch with its retries),
 * its network a fetch test double answering with recorded vendor bytes (./recorded-fetch.ts), and
 * the run path that turns the package's stream parts into frames, ledger parts, a RunOutcome and
 * the terminal frame (executeRun, endStream). No server, no HTTP app, no database: the ledger and
 * the manifest are stand-ins that keep what the run writes.
 */

export const RECORDED_KEYS: Record<Vendor, string> = {
  anthropic: 'sk-ant-recorded-key',
  openai: 'sk-proj-recorded-key',
  google: 'AIzaSyRecorded-key',
  mistral: 'recorded-mistral-key',
  xai: 'xai-recorded-key',
  deepseek: 'sk-recorded-deepseek-key',
}

/** Where the recorded vendors live: the fixtures' base paths on a host nobody resolves. */
export const RECORDED_ORIGIN = 'http://recorded.invalid'

export const PROMPT = 'What is the capital of Norway? One sentence, please.'

export const WEATHER: LanguageModelV4FunctionTool = {
  type: 'function',
  name: 'get_weather',
  description: 'Current weather for a city.',
  inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
}

const ENTRIES = loadCatalogue().entries
export function catalogueEntry(name: string): CatalogueEntry {
  const entry = ENTRIES.find((e) => e.name === name)
  if (!entry) throw new Error(`no catalogue model ${name}`)
  return entry
}

/** Every vendor's key and base URL, as the server's environment has them. */
const ENV: NodeJS.ProcessEnv = Object.fromEntries(
  (Object.keys(FIXTURES) as Vendor[]).flatMap((v) => [
    [VENDOR_KEY_VARIABLES[v]!, RECORDED_KEYS[v]],
    [baseUrlVariable(v), `${RECORDED_ORIGIN}${FIXTURES[v].basePath}`],
  ]),
)

export type RecordedTurn = {
  /** The prompt as sent (default: PROMPT as one user message). */
  prompt?: LanguageModelV4Prompt
  tools?: LanguageModelV4FunctionTool[]
  reasoningEffort?: ReasoningEffort | null
  /** The turn's effective max_tokens (default 1024). */
  maxTokens?: number
  chatId?: string
}

export type RecordedRun = {
  outcome: RunOutcome
  /** Whether the stream opened, or the run failed before it with a domain error. */
  opening: RunOpening
  /** The frames after the opening ones, the terminal `done` or `error` included when the stream opened. */
  frames: { event: string; data: any }[]
  /** The ledger parts the run wrote, in order. */
  persisted: PartBody[]
  /** The vendor warnings the run recorded for its manifest (stream-start and raw-chunk warnings). */
  recordedWarnings: TranslationWarning[]
  /** The effort's own translation warnings (admission's), from mapReasoningEffort. */
  effortWarnings: TranslationWarning[]
  /** Every HTTP request the vendor package sent, retries included. */
  requests: RecordedFetchRequest[]
  /** The cost settlement charges for the outcome's usage, at the platform markup. */
  cost: string
}

const MARKUP_PERCENT = '5'

/** Runs one turn on `vendor`'s catalogue model (VENDOR_MODELS), the network answering with `responses` in order. */
export async function runRecorded(vendor: Vendor, responses: ReplayResponse[], turn: RecordedTurn = {}): Promise<RecordedRun> {
  const recorded = createRecordedFetch()
  recorded.answer(...responses)
  const languageModelFor = createLanguageModelsOver(ENV, {
    fetch: recorded.fetch,
    // No waiting between retries: the backoff is the vendor fetch's own test's concern.
    sleep: async () => undefined,
    random: () => 0.5,
    now: Date.now,
  })
  const model = catalogueEntry(VENDOR_MODELS[vendor])
  const maxTokens = turn.maxTokens ?? 1024
  const reasoning = mapReasoningEffort(model, turn.reasoningEffort ?? null, maxTokens)
  const runId = '0192a6f0-0000-7000-8000-00000000run1'
  const chatId = turn.chatId ?? '0192a6f0-0000-7000-8000-0000000chat1'
  const channel = new RunChannel()
  channel.admit(runId, [])

  const persisted: PartBody[] = []
  const recordedWarnings: TranslationWarning[] = []
  let appended = 0
  const store = {
    writes: { write: async <T>(work: () => T): Promise<T> => work() },
    parts: {
      append: (_chat: string, parts: { body: PartBody }[]) =>
        parts.map((p) => {
          persisted.push(p.body)
          return { created_at: new Date(Date.UTC(2025, 9, 15, 12, 0, appended++)).toISOString() }
        }),
    },
    runs: {
      // The manifest stand-in: a running run whose warnings are kept here.
      getById: () => ({ status: 'running', manifest: JSON.stringify({ warnings: { translation: [] } }) }),
      setManifest: (_run: string, manifest: { warnings: { translation: TranslationWarning[] } }) => {
        recordedWarnings.splice(0, recordedWarnings.length, ...manifest.warnings.translation)
      },
    },
  }
  const deps = { store, languageModelFor } as unknown as RunDeps
  const admission = {
    runId,
    chatId,
    model,
    channel,
    prompt: turn.prompt ?? userPrompt(PROMPT),
    tools: turn.tools ?? [],
    maxTokens,
    window: { window: 200_000, longContext: false },
    vendorReasoning: reasoning.value,
    estimatedInputTokens: 20,
    isRetry: false,
    userMetadata: {},
    compactionReport: null,
  } as unknown as Admission

  const outcome = await executeRun(deps, admission, new AbortController().signal)
  const { event: opened } = await nextEvent(channel, ['opened', 'failed_before_stream'])
  const opening: RunOpening = opened.type === 'opened' ? { ok: true } : { ok: false, error: opened.error }
  const cost = customerCost(outcome.usage, model, MARKUP_PERCENT)
  endStream(admission, outcome, outcome.status === 'succeeded' ? cost : null)
  // The manifest writes are not awaited by the run: let them land.
  await new Promise((resolve) => setImmediate(resolve))
  const frames: { event: string; data: any }[] = framesOf(channel).map((frame) => ({ event: frame.event, data: frame.data }))
  return { outcome, opening, frames, persisted, recordedWarnings, effortWarnings: reasoning.warnings, requests: recorded.requests, cost }
}

/** How the run's stream began: opened, or failed before its first byte (answered with an HTTP error). */
export type RunOpening = { ok: true } | { ok: false; error: DomainError }

export const userPrompt = (text: string): LanguageModelV4Prompt => [{ role: 'user', content: [{ type: 'text', text }] }]

/**
 * The next turn's prompt as the project converts it for `provider` (convertToProviderPrompt): the
 * earlier turn's user prompt, the ledger parts a run wrote (with their replay data), then `after`
 * (a tool result, a new prompt). Ledger bodies become packed parts sent whole.
 */
export function nextTurnPrompt(provider: string, earlier: readonly (PartBody | RenderedPart)[], options: { instructions?: string | null } = {}): LanguageModelV4Prompt {
  const parts: PackedPart[] = earlier.map((p, i) => {
    const content = rendered(p)
    return { ordinal: i + 1, kind: content.type === 'summary' ? 'summary' : content.type, treatment: 'verbatim', content, tokens: 1 } as PackedPart
  })
  return convertToProviderPrompt(options.instructions ?? null, parts, () => new Uint8Array(), { provider })
}

/** A ledger body as packing renders it sent whole; a rendered part as it is. */
function rendered(p: PartBody | RenderedPart): RenderedPart {
  switch (p.type) {
    case 'prompt':
      return 'attachments' in p ? p : { type: 'prompt', text: p.text, attachments: [] }
    case 'tool_result':
      return 'toolUseId' in p ? p : { type: 'tool_result', toolUseId: p.tool_use_id, toolName: p.tool_name, text: p.text, isError: p.is_error, attachments: [] }
    case 'tool_call':
      if ('toolUseId' in p) return p
      return { type: 'tool_call', toolUseId: p.tool_use_id, toolName: p.tool_name, arguments: p.arguments, ...(p.replay ? { replay: p.replay } : {}) }
    case 'message':
      return { type: 'message', text: p.text, ...(p.replay ? { replay: p.replay } : {}) }
    case 'reasoning':
      return { type: 'reasoning', text: p.text, ...(p.replay ? { replay: p.replay } : {}) }
    case 'summary':
      return p
    default: {
      const unknown: never = p
      throw new Error(`unknown part ${JSON.stringify(unknown)}`)
    }
  }
}

/** The blocks the frames carried, each with its text (tool calls with their name and id). */
export function blocksOf(frames: readonly { event: string; data: any }[]): Record<string, unknown>[] {
  const blocks: Record<string, unknown>[] = []
  let open: Record<string, unknown> | null = null
  for (const f of frames) {
    if (f.event === 'block_start') blocks.push((open = { ...f.data, text: '' }))
    else if (f.event === 'delta') open!.text += f.data.text
    else if (f.event === 'block_stop') open = null
  }
  return blocks
}

/** Every delta of one kind, concatenated. */
export const deltaText = (frames: readonly { event: string; data: any }[], kind: string) =>
  frames.filter((f) => f.event === 'delta' && f.data.kind === kind).map((f) => f.data.text as string).join('')
