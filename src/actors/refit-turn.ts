import { refitCorrection, refitRecord, refusalRatio, type ContextRefusal } from '../domain/context/refit.ts'
import { compactionReport } from './admit-turn.ts'
import type { Compactor } from './compactor.ts'
import { reassembleTurn } from './reassemble-turn.ts'
import type { RunDeps } from './run-deps.ts'
import type { Admission } from './turn-types.ts'

/**
 * The I/O of the chat machine's `running.refitting` state (docs/decisions/044-context-refusal-refit.md):
 * the vendor refused the run's request for its context size before the first byte. What the refusal
 * says of the vendor's count is learned at once (the model's correction, src/domain/context/token-correction.ts),
 * and the turn is packed again with it and assembled over the new packing; the manifest records the
 * refit. Nothing reaches the client: the stream (or the HTTP error) is the second request's. When the
 * new packing needs summaries, the machine makes them first (`running.compacting`).
 */
export async function refitTurn(deps: RunDeps, compactor: Compactor, admission: Admission, refusal: ContextRefusal): Promise<Admission> {
  const { model } = admission
  const before = admission.repack
  const ratio = refusalRatio(
    {
      estimatedInputTokens: admission.estimatedInputTokens,
      correction: before.correction.correction,
      maxTokens: admission.maxTokens,
      window: admission.window.window,
      inputLimit: model.max_input_tokens ?? null,
    },
    refusal,
  )
  await deps.store.writes.write(() => deps.store.tokenCorrections.record(model.id, ratio))
  // The highest recent ratio, stepped up (correctionOf): at least what the refusal taught; and one
  // step more for this packing, whose content is not what the vendor counted (refitCorrection).
  const learned = deps.store.tokenCorrections.correctionFor(model.id)
  const correction = { ...learned, correction: refitCorrection(learned.correction) }
  const frame = { ...before, correction, request: { ...before.request, tokenCorrection: correction.correction } }
  const packed = deps.history.pack(admission.chatId, frame.request)
  const refused = { estimated_input_tokens: admission.estimatedInputTokens, correction: before.correction.correction, max_tokens: admission.maxTokens }
  // In the frame, so that the manifest (and any written after the summaries it needs) records the refit.
  const refitted = { ...frame, refit: refitRecord(refusal, refused) }
  const turn = await reassembleTurn(deps, admission, refitted, packed)
  return {
    ...admission,
    ...turn,
    refits: admission.refits + 1,
    repack: refitted,
    compaction:
      packed.needed.length > 0 ? { blocks: packed.needed, inProgressElsewhere: compactor.inProgress(admission.chatId, packed.needed), elsewhere: [] } : null,
    compactionReport: compactionReport(packed.context, []),
  }
}
