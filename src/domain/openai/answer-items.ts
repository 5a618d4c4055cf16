import type { PartKind } from '../parts.ts'
import type { LedgerPart } from './part-to-item.ts'

const ANSWER_KINDS: ReadonlySet<PartKind> = new Set(['message', 'reasoning', 'tool_call'])

/** Whether a part is a run's answer (its output), not input the run was given. */
export const isAnswerPart = (part: Pick<LedgerPart, 'kind' | 'run_id'>) => part.run_id !== null && ANSWER_KINDS.has(part.kind)
