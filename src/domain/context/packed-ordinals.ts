/** A compact, exact record of which ledger ordinals a context packed. */
export type PackedOrdinals = { count: number; first: number | null; last: number | null; skipped: number[] }

/**
 * A context of `count` parts from ordinal `first` to `last`; `leftOut` are the chat's ordinals that
 * packing passed over, ascending. skipped = those of `leftOut` inside the packed span.
 */
export function describePackedOrdinals(count: number, first: number | null, last: number | null, leftOut: readonly number[]): PackedOrdinals {
  if (count === 0 || first === null || last === null) return { count: 0, first: null, last: null, skipped: [] }
  return { count, first, last, skipped: leftOut.filter((o) => o >= first && o <= last) }
}
