import type { LanguageModelV3FunctionTool, LanguageModelV3Prompt, SharedV3ProviderOptions } from '@ai-sdk/provider'
import type { CatalogueEntry } from '../domain/catalogue/catalogue-entry.ts'
import type { ConfigWarning } from '../domain/config/config-types.ts'
import type { Usage } from '../domain/pricing/usage.ts'
import type { TranslationWarning } from '../domain/turns/coerce-reasoning-effort.ts'
import type { ReasoningEffort, Submission } from '../domain/turns/submission.ts'
import type { VendorReasoning } from '../providers/map-reasoning-effort.ts'
import type { RunChannel } from './run-channel.ts'
import type { BlockToSummarise, PackRequest } from './context-history.ts'
import type { ContextManifest } from '../domain/context/context-manifest.ts'

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
  prompt: LanguageModelV3Prompt
  tools: LanguageModelV3FunctionTool[]
  /** The effective max_tokens: what the answer and any thinking may spend together. */
  maxTokens: number
  reasoningEffort: ReasoningEffort | null
  /** The effort as the vendor's package takes it, and the answer's share of maxTokens (decision 010). */
  vendorReasoning: VendorReasoning
  estimatedInputTokens: number
  isRetry: boolean
  userMetadata: Record<string, unknown>
  markupPercent: string
  startedAtMs: number
  /** When the run was created, by the service's clock. */
  createdAt: string
  /** Ledger blocks to summarise before this run can stream (decisions §5.3); null when none. */
  compaction: CompactionRequest | null
  /** done.compaction: the summaries this run's context sends; null when none. */
  compactionReport: CompactionReport | null
  /** What packing the turn again after compaction needs (src/actors/compact-for-turn.ts). */
  repack: Repack
}

/** What a run waits for before it can stream: blocks to summarise, some being made by other work. */
export type CompactionRequest = { blocks: BlockToSummarise[]; inProgressElsewhere: number; elsewhere: string[] }
export type CompactionReport = { blocks_generated: number; blocks_reused: number; in_progress_elsewhere: number }

export type Repack = {
  request: PackRequest
  instructions: string | null
  baseConfigWarnings: ConfigWarning[]
  effortWarnings: TranslationWarning[]
  submission: Submission
  manifestOf: (
    context: ContextManifest,
    estimatedInputTokens: number,
    maxTokens: number,
    vendorReasoning: { value: VendorReasoning },
    warnings: { config: unknown[]; translation: unknown[] },
  ) => unknown
}

export type PendingToolCall = { tool_name: string; tool_use_id: string }

export type StopReason = 'end_turn' | 'max_tokens' | 'tool_use' | 'stop_sequence' | 'refusal'

/**
 * How a run ended: one type from the provider stream (executeRun, summariseBlock) or the sweep to
 * the store (settleRun writes it as the run's row, its balance entry and its uptime sample).
 */
export type RunOutcome = {
  status: 'succeeded' | 'failed' | 'cancelled'
  stopReason: StopReason | null
  error: { code: string; message: string } | null
  /** What is billed: the provider's usage, or the usage known so far (./run-outcome.ts) when it was lost. */
  usage: Usage
  /** True when the provider reported no usage: `usage` is then an estimate, billed but reported as null (spec §2.8). */
  usageLost?: boolean
  providerResponseId: string | null
  /** The vendor's request id header, else the response id (decision 017). */
  providerRequestId?: string | null
  modelServed: string | null
  pendingToolCalls: PendingToolCall[]
  /** Null when nobody timed the run (the sweep settles runs whose streamer is gone). */
  latencyMs: number | null
  firstDeltaMs: number | null
  /** False when the provider failed before its stream opened (nothing reached the customer). */
  streamOpened: boolean
  /** HTTP requests sent to the vendor, retries included; 0 when the vendor library refused the call locally or nobody knows. */
  vendorRequests: number
}

/** The chat machine's name for a run's outcome. */
export type RunResult = RunOutcome
