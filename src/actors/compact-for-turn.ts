import { blockKey } from '../domain/context/cut-blocks.ts'
import { correctedTokens, windowInForce } from '../domain/context/model-limits.ts'
import { InsufficientBalanceError } from '../domain/errors.ts'
import { convertToProviderPrompt } from '../providers/convert-to-provider-prompt.ts'
import { mapReasoningEffort } from '../providers/map-reasoning-effort.ts'
import { vendorTranslationWarnings } from '../providers/vendor-fidelity.ts'
import { affordableMaxTokens, type MaxTokensFit } from './affordable-max-tokens.ts'
import { compactionReport } from './admit-turn.ts'
import type { Compactor } from './compactor.ts'
import type { RunDeps } from './run-deps.ts'
import type { CompactionJob } from '../domain/context/compaction-job.ts'
import type { Admission } from './turn-types.ts'

export const compactionJobOf = (admission: Admission, forRunId: string | null): CompactionJob => ({
  chatId: admission.chatId,
  orgId: admission.orgId,
  apiKeyId: admission.apiKeyId,
  namespace: admission.namespace,
  model: admission.model,
  markupPercent: admission.markupPercent,
  forRunId,
})

/**
 * The I/O of the chat machine's `running.compacting` state: makes the summaries an admitted run
 * needs (or waits for those other work is making), then packs the turn again over them and records
 * the context it will send. A block left without a summary is dropped with `history_dropped`
 * (docs/guide/context.md); the turn goes on.
 */
export async function compactForTurn(deps: RunDeps, compactor: Compactor, admission: Admission, signal: AbortSignal): Promise<Admission> {
  const request = admission.compaction!
  const outcome = await compactor.summarise(compactionJobOf(admission, admission.runId), request.blocks, signal)
  // Stopped (a cancel, or the chat's deletion: decision 020): the machine has moved on, and packing
  // again would only bring a deleted chat's history back into memory.
  if (signal.aborted) throw new Error('the run was stopped while its history was summarised')
  const { repack } = admission
  const unavailable = new Set(outcome.failed.map(blockKey))
  const madeNow = new Set(outcome.generated)
  let packed = deps.history.pack(admission.chatId, { ...repack.request, compaction: { unavailable, madeNow } })
  // The boundary of the first packing holds, so nothing else is needed; if it moved, what it would need is dropped.
  if (packed.needed.length > 0) {
    for (const block of packed.needed) unavailable.add(blockKey(block))
    packed = deps.history.pack(admission.chatId, { ...repack.request, compaction: { unavailable, madeNow } })
  }
  const prompt = convertToProviderPrompt(repack.instructions, packed.parts, packed.bytesOf, { cacheBreakpointsAfter: packed.stablePrefixEnds, provider: admission.model.provider })
  const configWarnings = [...repack.baseConfigWarnings, ...packed.warnings.config]
  const translationWarnings = [...repack.effortWarnings, ...packed.warnings.translation]
  const correction = repack.request.tokenCorrection ?? 1
  let sent: MaxTokensFit
  try {
    sent = affordableMaxTokens(deps, repack.submission, packed.estimatedTokens, admission.markupPercent, translationWarnings, correction)
  } catch (error) {
    if (!(error instanceof InsufficientBalanceError)) throw error
    // The turn was admitted and its summaries are paid for: it keeps the max_tokens it was admitted
    // with, within what the window leaves after the input packed now.
    const correctedInputTokens = correctedTokens(packed.estimatedTokens, correction)
    const window = windowInForce(admission.model, correctedInputTokens)
    sent = { maxTokens: Math.max(1, Math.min(admission.maxTokens, window.window - correctedInputTokens)), window, correctedInputTokens }
  }
  const maxTokens = sent.maxTokens
  const vendorReasoning = mapReasoningEffort(admission.model, admission.reasoningEffort, maxTokens)
  translationWarnings.push(...vendorReasoning.warnings)
  translationWarnings.push(...vendorTranslationWarnings(admission.model.provider, packed.parts, admission.tools))
  const manifest = repack.manifestOf(packed.context, packed.estimatedTokens, sent, vendorReasoning, { config: configWarnings, translation: translationWarnings })
  await deps.store.writes.write(() => deps.store.runs.setManifest(admission.runId, manifest))
  // docs/guide/sandbox.md: config_warnings may repeat after compaction, when they changed.
  if (JSON.stringify(configWarnings) !== JSON.stringify(admission.configWarnings)) admission.channel.push('config_warnings', { warnings: configWarnings })
  return {
    ...admission,
    prompt,
    configWarnings,
    translationWarnings,
    maxTokens,
    window: sent.window,
    vendorReasoning: vendorReasoning.value,
    estimatedInputTokens: packed.estimatedTokens,
    compaction: { ...request, elsewhere: outcome.elsewhere },
    compactionReport: compactionReport(packed.context, outcome.elsewhere),
  }
}
