/** A compact, exact record of which ledger ordinals a context packed. */
export type PackedOrdinals = { count: number; first: number | null; last: number | null; skipped: number[] }

/** `packed` and `all` are ascending ordinals of one chat; skipped = those of `all` inside the span but not packed. */
export function describePackedOrdinals(packed: number[], all: number[]): PackedOrdinals {
  const first = packed[0] ?? null
  const last = packed.at(-1) ?? null
  if (first === null || last === null) return { count: 0, first: null, last: null, skipped: [] }
  const chosen = new Set(packed)
  return { count: packed.length, first, last, skipped: all.filter((o) => o >= first && o <= last && !chosen.has(o)) }
}
