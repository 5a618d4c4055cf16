import { windowInForce } from '../domain/context/model-limits.ts'
import { assembleTurn, budgetFactsOf, type TurnFrame } from './assemble-turn.ts'
import type { PackedTurn } from './context-history.ts'
import type { RunDeps } from './run-deps.ts'
import type { Admission } from './turn-types.ts'

/** What a run's admission holds of its assembled turn: what packing it again replaces. */
export type Reassembly = Pick<Admission, 'prompt' | 'configWarnings' | 'translationWarnings' | 'maxTokens' | 'window' | 'vendorReasoning' | 'callSettings' | 'estimatedInputTokens'>

/**
 * An admitted run's turn assembled again over a new packing (after its summaries were made, or after
 * a context refusal's refit): the one assembly (./assemble-turn.ts) over the balance read now, its
 * manifest written over the run's, and changed config warnings told to the stream. The run was
 * admitted and its summaries paid for: when the balance would now refuse it, it keeps the max_tokens
 * it was admitted with, within what the window leaves after the input packed now.
 */
export async function reassembleTurn(
  deps: RunDeps,
  admission: Admission,
  frame: TurnFrame,
  packed: PackedTurn,
  /** Whether the prompt waits for summaries still to make: by default while any is needed (a refit); after compaction, never. */
  promptWaits = packed.needed.length > 0,
): Promise<Reassembly> {
  const turn = assembleTurn(
    frame,
    packed,
    budgetFactsOf(frame, packed.estimatedTokens, deps.store.balance.balanceOf(admission.orgId)),
    ({ correctedInputTokens }) => {
      const window = windowInForce(admission.model, correctedInputTokens)
      return { maxTokens: Math.max(1, Math.min(admission.maxTokens, window.window - correctedInputTokens)), window, correctedInputTokens }
    },
    promptWaits,
  )
  const manifest = { ...turn.manifest(packed.context), input_ordinals: admission.inputOrdinals }
  await deps.store.writes.write(() => deps.store.runs.setManifest(admission.runId, manifest))
  // docs/guide/sandbox.md: config_warnings may repeat after compaction, when they changed.
  if (JSON.stringify(turn.configWarnings) !== JSON.stringify(admission.configWarnings)) admission.channel.push('config_warnings', { warnings: turn.configWarnings })
  return {
    prompt: turn.prompt,
    configWarnings: turn.configWarnings,
    translationWarnings: turn.translationWarnings,
    maxTokens: turn.maxTokens,
    window: turn.window,
    vendorReasoning: turn.vendorReasoning,
    callSettings: turn.callSettings,
    estimatedInputTokens: turn.estimatedInputTokens,
  }
}
