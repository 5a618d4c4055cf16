import { blockKey } from '../domain/context/cut-blocks.ts'
import { compactionReport } from './admit-turn.ts'
import type { Compactor } from './compactor.ts'
import { reassembleTurn } from './reassemble-turn.ts'
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
  // The one assembly, over the summaries made now (src/actors/reassemble-turn.ts).
  return {
    ...admission,
    // The summaries made now are all this run waits for: its prompt is built whatever packing still asks.
    ...(await reassembleTurn(deps, admission, repack, packed, false)),
    compaction: { ...request, elsewhere: outcome.elsewhere },
    compactionReport: compactionReport(packed.context, outcome.elsewhere),
  }
}
