import type { Block } from './cut-blocks.ts'

/**
 * One compaction run's work (docs/guide/context.md): a block, whose packable parts are `ordinals`
 * (others in its range are not sent), or a merge of the stored summaries of `of` (oldest first)
 * into one summary of their whole range (decisions §5.3). `maxTokens` is what the run may write.
 */
export type BlockToSummarise = (Block & { kind: 'block'; ordinals: number[] } | Block & { kind: 'merge'; of: Block[] }) & { maxTokens: number }
