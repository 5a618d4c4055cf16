import { MAX_BLOCK_TOKENS } from './compaction-sizes.ts'
import type { PackingHistory } from './packing-history.ts'

/** The block size when none is given: what a 128k model's budget cuts (src/domain/context/compaction-sizes.ts). */
export const BLOCK_TOKENS = MAX_BLOCK_TOKENS

/** A sealed block: history entries [start, end), ordinals firstOrdinal..lastOrdinal. */
export type Block = { start: number; end: number; firstOrdinal: number; lastOrdinal: number; parts: number; tokens: number }

export const blockKey = (block: Pick<Block, 'firstOrdinal' | 'lastOrdinal'>) => `${block.firstOrdinal}-${block.lastOrdinal}`

/** How blocks are cut: from the first entry after the anchors, to a size, along the ranges already summarised. */
export type BlockCut = {
  /** The first history entry after the anchors: anchors are in no block (decisions §5.2, never compacted). */
  from: number
  blockTokens: number
  /** The last ordinal of the stored block summary that begins at this ordinal, if any. */
  summarisedUntil?: (firstOrdinal: number) => number | undefined
}

/**
 * The sealed blocks of one chat's history, extended as the history grows. A block ends before
 * entry i only when i may begin a kept range (no tool call and its result, nor reasoning and the call
 * it led to, on both sides) and no call before i is still waiting for its result, and only at or
 * before `limit`: the first entry of the current exchange, so every entry a block holds belongs to a
 * run that has settled. What decides a boundary is then final, so sealed blocks never change.
 *
 * A block that begins where a stored summary begins ends where that summary ends, and a block cut by
 * size ends where a stored summary begins: a chat whose window changed (another model, another
 * budget), whose actor was rebuilt or whose summary was erased with a part cuts the blocks it
 * already paid to summarise, and sizes the rest to the window in force.
 */
export class BlockIndex {
  readonly blocks: Block[] = []
  private cutFrom = 0
  private cutTokens = BLOCK_TOKENS

  /** Seals the blocks that end at or before `limit`; returns the sealed list. */
  extend(history: PackingHistory, limit: number, cut: BlockCut = { from: 0, blockTokens: BLOCK_TOKENS }): readonly Block[] {
    if (cut.from !== this.cutFrom || cut.blockTokens !== this.cutTokens) {
      this.blocks.length = 0
      this.cutFrom = cut.from
      this.cutTokens = cut.blockTokens
    }
    const entries = history.entries
    const stop = Math.min(limit, entries.length)
    let blockStart = this.blocks.at(-1)?.end ?? cut.from
    if (blockStart >= stop) return this.blocks
    let tokens = 0
    let until = blockStart < entries.length ? cut.summarisedUntil?.(entries[blockStart]!.ordinal) : undefined
    const open = new Set<string>()
    for (let i = blockStart; i <= stop; i++) {
      // At the end of the history the next entry is a new run's input, which may begin a range.
      const mayBegin = i === entries.length || history.canStart[i] === true
      const last = i > blockStart ? entries[i - 1]!.ordinal : -1
      // Along a stored summary's range while it lasts; by size past it (or when it no longer fits the
      // history), and never past where another stored summary begins (after an erasure removed the
      // summary before it, docs/decisions/056-erasing-items.md), so that one is still used.
      const full =
        until !== undefined && last <= until
          ? last === until
          : tokens >= cut.blockTokens || (i > blockStart && i < entries.length && cut.summarisedUntil?.(entries[i]!.ordinal) !== undefined)
      if (i > blockStart && full && mayBegin && open.size === 0) {
        this.blocks.push({ start: blockStart, end: i, firstOrdinal: entries[blockStart]!.ordinal, lastOrdinal: last, parts: i - blockStart, tokens })
        blockStart = i
        tokens = 0
        until = i < entries.length ? cut.summarisedUntil?.(entries[i]!.ordinal) : undefined
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
