import type { LanguageModelV4FunctionTool, LanguageModelV4Prompt, SharedV4ProviderOptions } from '@ai-sdk/provider'
import type { CatalogueEntry } from '../domain/catalogue/catalogue-entry.ts'
import type { ConfigWarning } from '../domain/config/config-types.ts'
import type { TranslationWarning } from '../domain/turns/coerce-reasoning-effort.ts'
import type { ReasoningEffort, Submission } from '../domain/turns/submission.ts'
import type { CallSettings } from '../providers/map-call-settings.ts'
import type { VendorReasoning } from '../providers/map-reasoning-effort.ts'
import type { RunChannel } from './run-channel.ts'
import type { BlockToSummarise } from '../domain/context/block-to-summarise.ts'
import type { WindowInForce } from '../domain/context/model-limits.ts'
import type { TurnFrame } from './assemble-turn.ts'

// What the HTTP layer hands the chat actor lives in src/domain (the machine imports it from there).
export type { PreparedPart, Submission } from '../domain/turns/submission.ts'

/** A run the actor admitted: written, and about to call the provider. */
export type Admission = {
  runId: string
  chatId: string
  orgId: string
  apiKeyId: string | null
  namespace: string | null
  model: CatalogueEntry
  channel: RunChannel
  closedToolCalls: string[]
  configWarnings: ConfigWarning[]
  translationWarnings: TranslationWarning[]
  prompt: LanguageModelV4Prompt
  tools: LanguageModelV4FunctionTool[]
  /** The effective max_tokens: what the answer and any thinking may spend together. */
  maxTokens: number
  /** The window the request fits, and whether it opts in to the model's long context (docs/decisions/027-model-limits.md). */
  window: WindowInForce
  reasoningEffort: ReasoningEffort | null
  /** The effort as the vendor's package takes it, and the answer's share of maxTokens (decision 010). */
  vendorReasoning: VendorReasoning
  /** temperature, tool_choice and response_format as the vendor's package takes them (docs/guide/turn-options.md). */
  callSettings: CallSettings
  estimatedInputTokens: number
  /** The ledger ordinals the admission wrote (closures, input, carried history); null when it wrote none (a retry). */
  inputOrdinals: { first: number; last: number } | null
  isRetry: boolean
  userMetadata: Record<string, unknown>
  markupPercent: string
  startedAtMs: number
  /** When the run was created, by the service's clock. */
  createdAt: string
  /** Ledger blocks to summarise before this run can stream (docs/guide/context.md); null when none. */
  compaction: CompactionRequest | null
  /** done.compaction: the summaries this run's context sends; null when none. */
  compactionReport: CompactionReport | null
  /** What packing the turn again after compaction needs (src/actors/compact-for-turn.ts). */
  repack: Repack
  /** How many times the turn was packed again after a context refusal (src/actors/refit-turn.ts). */
  refits: number
}

/** What a run waits for before it can stream: blocks to summarise, some being made by other work. */
export type CompactionRequest = { blocks: BlockToSummarise[]; inProgressElsewhere: number; elsewhere: string[] }
export type CompactionReport = { blocks_generated: number; blocks_reused: number; in_progress_elsewhere: number }

/** What packing the turn again after compaction needs: the turn's frame, packed with no new parts and the run among the current ones. */
export type Repack = TurnFrame
