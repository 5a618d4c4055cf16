import type { EagerCompaction } from '../../machines/chat.types.ts'
import { ContextTooLargeError } from '../domain/errors.ts'
import { compactionJobOf } from './compact-for-turn.ts'
import type { Compactor } from './compactor.ts'
import type { RunDeps } from './run-deps.ts'
import type { Admission } from './turn-types.ts'

/**
 * docs/guide/context.md `eager_compaction.at_fill`: after a run settles, the chat's next context as it
 * stands (the ledger with this run's output, nothing new) packed as if its history budget were the
 * fraction `at` of itself. The blocks that packing would summarise, and that nobody is summarising
 * already, are the background work; null when there is none.
 */
export function planEagerCompaction(deps: RunDeps, compactor: Compactor, admission: Admission): EagerCompaction | null {
  const { request } = admission.repack
  const eager = request.budget.eager_compaction
  if (eager?.mode !== 'at_fill' || (request.budget.history_mode ?? 'summarize') !== 'summarize') return null
  try {
    const packed = deps.history.pack(admission.chatId, { ...request, newParts: [], currentRuns: [], fillFraction: eager.at })
    // Blocks only: a merge is planned against the whole budget, by the turn that needs it (at a
    // fraction of the budget every summary would look like one to merge).
    const blocks = packed.needed.filter((block) => block.kind === 'block' && compactor.inProgress(admission.chatId, [block]) === 0)
    return blocks.length > 0 ? { job: compactionJobOf(admission, null), blocks } : null
  } catch (error) {
    // The fixed parts alone no longer fit: the next turn answers 422 whatever is summarised.
    if (error instanceof ContextTooLargeError) return null
    throw error
  }
}
