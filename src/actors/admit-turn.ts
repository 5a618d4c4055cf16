import type { LanguageModelV3FunctionTool } from '@ai-sdk/provider'
import { PLATFORM_MARKUP_PERCENT } from '../domain/catalogue/apply-markup.ts'
import { addSegment, type ContextManifest } from '../domain/context/context-manifest.ts'
import { estimatePartTokens } from '../domain/context/estimate-part-tokens.ts'
import { IdempotencyKeyReusedError, RunInProgressError, RunningRunsLimitError } from '../domain/errors.ts'
import type { PartBody } from '../domain/parts.ts'
import { coerceReasoningEffort, type TranslationWarning } from '../domain/turns/coerce-reasoning-effort.ts'
import type { CallClosing } from '../domain/turns/decide-admission.ts'
import { convertToProviderPrompt } from '../providers/convert-to-provider-prompt.ts'
import { mapReasoningEffort, type VendorReasoning } from '../providers/map-reasoning-effort.ts'
import { vendorTranslationWarnings } from '../providers/vendor-fidelity.ts'
import type { NewPart } from '../store/parts.ts'
import type { ResolvedConfiguration } from '../store/config-resolution.ts'
import { DEFAULT_MAX_RUNNING_RUNS_PER_ORG } from '../settings.ts'
import { affordableMaxTokens, type MaxTokensFit } from './affordable-max-tokens.ts'
import type { RunChannel } from './run-channel.ts'
import type { RunDeps } from './run-deps.ts'
import { openRun } from './run-lifecycle.ts'
import { newPartMedia, type PackedTurn, type PackRequest } from './context-history.ts'
import type { Compactor } from './compactor.ts'
import type { Admission, CompactionReport, PreparedPart, Submission } from './turn-types.ts'

/**
 * Admits a turn the chat machine let through its rules (machines/chat.machine.ts: retry,
 * idempotency, tool ids, and how the pending calls close): packs it (configuration, budget, the
 * packed context), has the pure `decideMaxTokens` decide the 402 and max_tokens (docs/guide/billing-and-usage.md
 * Balance, which needs the packed size), and writes it: tombstones for unanswered calls, the input
 * parts, the run and the idempotency key, in one transaction, committed before it resolves, so before
 * any byte is streamed. Rejects with the domain error that refuses it; a refusal writes nothing.
 * `channel` is the submission's event log (src/actors/run-channel.ts), the run's from admission on.
 */
export async function admitTurn(
  deps: RunDeps,
  compactor: Compactor,
  submission: Submission,
  closing: CallClosing,
  channel: RunChannel,
): Promise<Admission> {
  const { store } = deps
  const { request, model, orgId } = submission
  const now = deps.now()
  const { closures } = closing
  const userMetadata = request.user_metadata ?? {}
  const tombstones: PartBody[] = closing.tombstones
  const retryOf = request.retry_of ?? null
  // The organisation's cap on running runs (decision 033), first before anything is spent on packing;
  // the transaction below asks again where the run is written, so concurrent turns cannot both pass.
  const runningCap = deps.maxRunningRunsPerOrg ?? DEFAULT_MAX_RUNNING_RUNS_PER_ORG
  refuseOverRunningCap(deps, orgId, runningCap)

  // Configuration and budget in force now (a retry uses current configuration too).
  const config = deps.resolver.resolveConfig(orgId, submission.namespace, request.tools ?? null)
  const budget = deps.resolver.resolveBudget(orgId, submission.namespace, model.id)
  const tools = providerToolsOf(config)
  // Our estimate as this model's vendor counts it (docs/decisions/027-model-limits.md): packing and max_tokens use it.
  const correction = store.tokenCorrections.correctionFor(model.id)

  // Packing (docs/guide/context.md): the fixed parts whole, then as much history as the budget and the
  // retention rules allow. The current exchange: what this submission writes, the run it retries,
  // and the run whose calls it closes (its calls stay with their results).
  const currentRuns = [...(retryOf ? [retryOf] : []), ...(closing.closesCallsOf ? [closing.closesCallsOf] : [])]
  const newBodies = [
    ...tombstones.map((body) => ({ body, media: [] as PreparedPart['media'], tokens: estimatePartTokens(body) })),
    ...submission.input,
  ]
  const packRequest: PackRequest = {
    newParts: newBodies.map((p, i) => ({ body: p.body, media: newPartMedia(p.media, i) })),
    currentRuns,
    instructionsTokens: config.tokens.instructions,
    toolsTokens: config.tokens.tools,
    rules: config.retention,
    budget: budget.budget,
    model,
    tokenCorrection: correction.correction,
  }
  const packed = deps.history.pack(submission.chatId, packRequest)
  // Summaries still to make: the prompt is built once they are (src/actors/compact-for-turn.ts).
  const prompt = packed.needed.length > 0 ? [] : convertToProviderPrompt(config.instructions, packed.parts, packed.bytesOf, { cacheBreakpointsAfter: packed.stablePrefixEnds, provider: model.provider })
  const estimatedInputTokens = packed.estimatedTokens
  const configWarnings = [...config.warnings, ...budget.warnings, ...packed.warnings.config]

  const effort = coerceReasoningEffort(request.reasoning_effort, model)
  const translationWarnings: TranslationWarning[] = [...effort.warnings, ...packed.warnings.translation]
  const markupPercent = store.organisations.get(orgId)?.markup_percent ?? PLATFORM_MARKUP_PERCENT
  const fit = affordableMaxTokens(deps, submission, estimatedInputTokens, markupPercent, translationWarnings, correction.correction)
  const maxTokens = fit.maxTokens
  const vendorReasoning = mapReasoningEffort(model, effort.value, maxTokens)
  translationWarnings.push(...vendorReasoning.warnings)
  // What the vendor will not keep: strict, is_error (decision 017).
  translationWarnings.push(...vendorTranslationWarnings(model.provider, packed.parts, tools))

  const runId = submission.runId
  const manifestOf = (context: ContextManifest, estimated: number, sent: MaxTokensFit, reasoning: { value: VendorReasoning }, warnings: { config: unknown[]; translation: unknown[] }) => ({
    model: model.name,
    model_id: model.id,
    vendor_model_id: model.vendor_model_id,
    config_versions: config.versions,
    budget: { ...budget, input_budget: context.input_budget },
    context,
    estimated_input_tokens: estimated,
    // The estimate as the vendor is expected to count it, and the correction learned for this model.
    token_estimate: { estimated, correction: correction.correction, corrected: sent.correctedInputTokens, runs: correction.runs },
    max_tokens: sent.maxTokens,
    // What the request had to fit (docs/decisions/027-model-limits.md).
    limits: { window: sent.window.window, input_limit: model.max_input_tokens ?? null, long_context: sent.window.longContext },
    reasoning_effort: effort.value,
    vendor_reasoning: reasoning.value.providerOptions,
    markup_percent: markupPercent,
    retry_of: request.retry_of ?? null,
    warnings,
  })
  await store.writes.write(() => {
    // In the transaction that inserts the run: another chat's turn may have taken the last place since.
    refuseOverRunningCap(deps, orgId, runningCap)
    // Checked again where it is written: another chat's turn may have taken the key since.
    if (request.idempotency_key) {
      const earlier = store.idempotencyKeys.runOf(orgId, request.idempotency_key, now)
      if (earlier) throw new IdempotencyKeyReusedError(earlier)
    }
    const written = store.parts.append(
      submission.chatId,
      newBodies.map((p): NewPart => ({ body: p.body, runId, userMetadata, tokens: p.tokens, media: p.media })),
    )
    const createdAt = now.toISOString()
    insertRun(deps, submission.chatId, {
      id: runId,
      org_id: orgId,
      chat_id: submission.chatId,
      origin: 'customer',
      model_id: model.id,
      model_name: model.name,
      namespace: submission.namespace,
      api_key_id: submission.apiKeyId,
      retry_of: request.retry_of ?? null,
      created_at: createdAt,
      manifest: manifestOf(withWrittenParts(packed.context, packed, written.map((row) => row.ordinal)), estimatedInputTokens, fit, vendorReasoning, {
        config: configWarnings,
        translation: translationWarnings,
      }),
    })
    if (request.idempotency_key) store.idempotencyKeys.record(orgId, request.idempotency_key, runId, now)
  })

  return {
    runId,
    chatId: submission.chatId,
    orgId,
    apiKeyId: submission.apiKeyId,
    namespace: submission.namespace,
    model,
    // The submission's event log: the run's stream once the machine announces the admission.
    channel,
    closedToolCalls: closures.map((c) => c.tool_use_id),
    configWarnings,
    translationWarnings,
    prompt,
    tools,
    maxTokens,
    window: fit.window,
    reasoningEffort: effort.value,
    vendorReasoning: vendorReasoning.value,
    estimatedInputTokens,
    isRetry: Boolean(request.retry_of),
    userMetadata,
    markupPercent,
    startedAtMs: Date.now(),
    createdAt: now.toISOString(),
    compaction:
      packed.needed.length > 0
        ? { blocks: packed.needed, inProgressElsewhere: compactor.inProgress(submission.chatId, packed.needed), elsewhere: [] }
        : null,
    compactionReport: compactionReport(packed.context, []),
    // What compaction needs to pack the turn again over its new summaries: the turn's parts are in
    // the ledger by then, as parts of this run.
    repack: {
      request: { ...packRequest, newParts: [], currentRuns: [...currentRuns, runId] },
      instructions: config.instructions,
      baseConfigWarnings: [...config.warnings, ...budget.warnings],
      effortWarnings: effort.warnings,
      submission,
      manifestOf,
    },
  }
}

/** 429 when the organisation already has `cap` running customer runs (compaction runs do not count). */
function refuseOverRunningCap(deps: RunDeps, orgId: string, cap: number): void {
  if (deps.store.runs.runningCustomerRunsOfOrg(orgId, cap) >= cap) throw new RunningRunsLimitError(cap)
}

/**
 * The chat machine refuses a turn while the ledger holds a running run (docs/guide/runs.md); migration
 * 0009's index refuses it here too, should anything get past: the same 409, naming that run.
 */
function insertRun(deps: RunDeps, chatId: string, run: Parameters<typeof openRun>[1]): void {
  try {
    openRun(deps, run)
  } catch (error) {
    const running = (error as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE' ? deps.store.runs.runningCustomerRun(chatId) : null
    if (running) throw new RunInProgressError(running.id)
    throw error
  }
}

/** done.compaction (docs/guide/context.md): null when no summary was packed. */
export function compactionReport(context: ContextManifest, elsewhere: readonly string[]): CompactionReport | null {
  if (context.summaries.length === 0) return null
  const fromElsewhere = new Set(elsewhere)
  const isElsewhere = (s: ContextManifest['summaries'][number]) => fromElsewhere.has(`${s.first_ordinal}-${s.last_ordinal}`)
  return {
    blocks_generated: context.summaries.filter((s) => !s.reused).length,
    blocks_reused: context.summaries.filter((s) => s.reused && !isElsewhere(s)).length,
    in_progress_elsewhere: context.summaries.filter(isElsewhere).length,
  }
}

// Resolved configurations are shared between turns until configuration changes; so are their tools.
const providerTools = new WeakMap<ResolvedConfiguration, LanguageModelV3FunctionTool[]>()
function providerToolsOf(config: ResolvedConfiguration): LanguageModelV3FunctionTool[] {
  let tools = providerTools.get(config)
  if (!tools) {
    tools = config.tools.map((t) => ({
      type: 'function',
      name: t.name,
      inputSchema: t.input_schema as LanguageModelV3FunctionTool['inputSchema'],
      ...(t.description ? { description: t.description } : {}),
      ...(t.strict === true || t.strict === false ? { strict: t.strict } : {}),
    }))
    providerTools.set(config, tools)
  }
  return tools
}

/** The manifest's context with the parts this turn wrote, once their ordinals are known. */
function withWrittenParts(context: ContextManifest, packed: PackedTurn, ordinals: number[]): ContextManifest {
  const segments = context.segments.map((s) => ({ ...s }))
  // The sent new parts end the packed context, in order.
  const sentNew = packed.parts.slice(packed.parts.length - packed.newPartsSent.filter(Boolean).length)
  let next = 0
  ordinals.forEach((ordinal, i) => {
    if (packed.newPartsSent[i]) addSegment(segments, ordinal, ordinal, 1, 'verbatim', sentNew[next++]!.tokens)
  })
  return { ...context, segments }
}
