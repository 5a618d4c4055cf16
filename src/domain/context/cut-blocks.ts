import type { PackingHistory } from './packing-history.ts'

/**
 * A block closes at the first boundary after it holds this many estimated tokens. A constant, so
 * boundaries depend on the ledger alone (docs/guide/context.md): every turn, every node, and a rebuilt actor
 * cut the same blocks, and a block's summary is made once.
 */
export const BLOCK_TOKENS = 1024

/** A sealed block: history entries [start, end), ordinals firstOrdinal..lastOrdinal. */
export type Block = { start: number; end: number; firstOrdinal: number; lastOrdinal: number; parts: number; tokens: number }

export const blockKey = (block: Pick<Block, 'firstOrdinal' | 'lastOrdinal'>) => `${block.firstOrdinal}-${block.lastOrdinal}`

/**
 * The sealed blocks of one chat's history, extended as the history grows. A block ends before
 * entry i only when i may begin a kept range (no tool call and its result, nor reasoning and the call
 * it led to, on both sides) and no call before i is still waiting for its result, and only at or
 * before `limit`: the first entry of the current exchange, so every entry a block holds belongs to a
 * run that has settled. What decides a boundary is then final, so sealed blocks never change.
 */
export class BlockIndex {
  readonly blocks: Block[] = []

  /** Seals the blocks that end at or before `limit`; returns the sealed list. */
  extend(history: PackingHistory, limit: number): readonly Block[] {
    const entries = history.entries
    const stop = Math.min(limit, entries.length)
    let blockStart = this.blocks.at(-1)?.end ?? 0
    let tokens = 0
    const open = new Set<string>()
    for (let i = blockStart; i <= stop; i++) {
      // At the end of the history the next entry is a new run's input, which may begin a range.
      const mayBegin = i === entries.length || history.canStart[i] === true
      if (i > blockStart && tokens >= BLOCK_TOKENS && mayBegin && open.size === 0) {
        this.blocks.push({ start: blockStart, end: i, firstOrdinal: entries[blockStart]!.ordinal, lastOrdinal: entries[i - 1]!.ordinal, parts: i - blockStart, tokens })
        blockStart = i
        tokens = 0
      }
      if (i === stop) break
      const entry = entries[i]!
      tokens += entry.tokens
      if (entry.toolUseId !== null && entry.kind === 'tool_call') open.add(entry.toolUseId)
      else if (entry.toolUseId !== null && entry.kind === 'tool_result') open.delete(entry.toolUseId)
    }
    return this.blocks
  }

  /** Forgets the blocks that reach entry `index` or beyond (the history was cut back there). */
  truncate(index: number): void {
    while (this.blocks.length > 0 && this.blocks.at(-1)!.end > index) this.blocks.pop()
  }
}
