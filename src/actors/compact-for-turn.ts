import { blockKey } from '../domain/context/cut-blocks.ts'
import { windowInForce } from '../domain/context/model-limits.ts'
import { assembleTurn, budgetFactsOf } from './assemble-turn.ts'
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
  // The one assembly (src/actors/assemble-turn.ts), over the balance read now.
  const turn = assembleTurn(repack, packed, budgetFactsOf(repack, packed.estimatedTokens, deps.store.balance.balanceOf(admission.orgId)), ({ correctedInputTokens }) => {
    // The turn was admitted and its summaries are paid for: it keeps the max_tokens it was admitted
    // with, within what the window leaves after the input packed now.
    const window = windowInForce(admission.model, correctedInputTokens)
    return { maxTokens: Math.max(1, Math.min(admission.maxTokens, window.window - correctedInputTokens)), window, correctedInputTokens }
  }, false)
  const { configWarnings } = turn
  const manifest = turn.manifest(packed.context)
  await deps.store.writes.write(() => deps.store.runs.setManifest(admission.runId, manifest))
  // docs/guide/sandbox.md: config_warnings may repeat after compaction, when they changed.
  if (JSON.stringify(configWarnings) !== JSON.stringify(admission.configWarnings)) admission.channel.push('config_warnings', { warnings: configWarnings })
  return {
    ...admission,
    prompt: turn.prompt,
    configWarnings,
    translationWarnings: turn.translationWarnings,
    maxTokens: turn.maxTokens,
    window: turn.window,
    vendorReasoning: turn.vendorReasoning,
    estimatedInputTokens: turn.estimatedInputTokens,
    compaction: { ...request, elsewhere: outcome.elsewhere },
    compactionReport: compactionReport(packed.context, outcome.elsewhere),
  }
}
