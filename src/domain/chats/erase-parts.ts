import type { PartBody } from '../parts.ts'

/** A ledger part as an erasure reads it. */
export type ErasablePart = { ordinal: number; body: PartBody }

/**
 * What erasing a part erases (docs/decisions/056-erasing-items.md): the part itself, and when it is
 * a tool call or a tool call's result, every other part of that exchange, the call and all its
 * results. No vendor takes a result without its call, nor a settled call without its result:
 * packing keeps the two together (docs/guide/tool-calls.md), and so does erasing. `exchange` is the
 * chat's parts with the same tool_use_id; the ordinals come back oldest first, without repeats.
 */
export function partsToErase(target: ErasablePart, exchange: readonly ErasablePart[]): number[] {
  const toolUseId = target.body.type === 'tool_call' || target.body.type === 'tool_result' ? target.body.tool_use_id : null
  const paired = toolUseId === null ? [] : exchange.filter((p) => (p.body.type === 'tool_call' || p.body.type === 'tool_result') && p.body.tool_use_id === toolUseId)
  return [...new Set([target.ordinal, ...paired.map((p) => p.ordinal)])].sort((a, b) => a - b)
}
