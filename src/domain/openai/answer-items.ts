import type { PartKind } from '../parts.ts'
import { partToItem, type Item, type LedgerPart } from './part-to-item.ts'

const ANSWER_KINDS: ReadonlySet<PartKind> = new Set(['message', 'reasoning', 'tool_call'])

/** Whether a part is a run's answer (its output), not input the run was given. */
export const isAnswerPart = (part: Pick<LedgerPart, 'kind' | 'run_id'>) => part.run_id !== null && ANSWER_KINDS.has(part.kind)

/**
 * Ledger parts as items, in ledger order, each answer part named by its place in its run's answer.
 * `earlierAnswers` counts each run's answer parts before the first part given (a page that starts
 * mid-answer), so ids are the same whichever page lists them.
 */
export function partsToItems(parts: readonly LedgerPart[], earlierAnswers: ReadonlyMap<string, number> = new Map()): Item[] {
  const seen = new Map(earlierAnswers)
  return parts.map((part) => {
    if (!isAnswerPart(part)) return partToItem(part, null)
    const place = seen.get(part.run_id!) ?? 0
    seen.set(part.run_id!, place + 1)
    return partToItem(part, place)
  })
}

/** Each answer part's place in its run's answer, from the run's parts in ledger order. */
export function answerPlaces(runParts: readonly Pick<LedgerPart, 'id' | 'kind' | 'run_id'>[]): Map<string, number> {
  const places = new Map<string, number>()
  for (const part of runParts) if (isAnswerPart(part)) places.set(part.id, places.size)
  return places
}
