import type { Treatment } from './context-types.ts'

export type Segment = { first_ordinal: number; last_ordinal: number; parts: number; treatment: Treatment; tokens: number }
export type DroppedRange = { dropped: number; start_ordinal: number; end_ordinal: number }
/** An attachment sent as a marker so that the request stays within the vendor's size limit (decision 045). */
export type LeftOutAttachment = { ordinal: number; media_id: string; mime: string; byte_len: number; reason: 'request_bytes'; max_request_bytes: number }

/** docs/guide/context.md: the run manifest's `context`, what the model received. */
export type ContextManifest = {
  input_budget: number
  history_budget: number
  tokens: { instructions: number; tools: number; anchors: number; history: number; summaries: number; current: number; total: number }
  segments: Segment[]
  summaries: { first_ordinal: number; last_ordinal: number; run_id: string; tokens: number; reused: boolean }[]
  dropped: DroppedRange | null
  /** Attachments of the parts sent that were left out, oldest first, and why. */
  attachments_left_out: LeftOutAttachment[]
}

/**
 * Adds parts to a segment list kept in ledger order: a run of parts with the same treatment is one
 * segment, so the manifest of a chat of a million parts stays small. `count` parts from `first` to
 * `last` (ordinals of the ledger, gaps allowed).
 */
export function addSegment(segments: Segment[], first: number, last: number, count: number, treatment: Treatment, tokens: number): void {
  if (count === 0) return
  const previous = segments.at(-1)
  if (previous && previous.treatment === treatment) {
    previous.last_ordinal = last
    previous.parts += count
    previous.tokens += tokens
    return
  }
  segments.push({ first_ordinal: first, last_ordinal: last, parts: count, treatment, tokens })
}
