import type { Block } from './cut-blocks.ts'

/** A block to summarise, with the ordinals of its packable parts (others in its range are not sent). */
export type BlockToSummarise = Block & { ordinals: number[] }
