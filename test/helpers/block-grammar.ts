import { expect } from 'vitest'

type Frame = { event: string; data: any }

/** The delta kind each block kind streams. */
export const DELTA_KIND: Record<string, string> = { text: 'text', reasoning: 'reasoning', refusal: 'refusal', tool_call: 'tool_input' }

/**
 * A stream's frames after its opening ones and before its terminal frame, as spec §6 orders them:
 * the vendor package's own translation_warnings before content starts (decision 017), then blocks
 * one at a time (block_start, its deltas of the block's kind, block_stop). `trace` is the stream's
 * events, for the messages. Gives the kind of the block left open at the end (null: none).
 */
export function expectBlocksOneAtATime(frames: readonly Frame[], trace: string): string | null {
  let open: string | null = null
  let started = false
  for (const f of frames) {
    if (f.event === 'translation_warnings') {
      expect(started, `translation_warnings after content started: ${trace}`).toBe(false)
    } else if (f.event === 'block_start') {
      started = true
      expect(open, `block_start inside an open ${open} block: ${trace}`).toBeNull()
      open = f.data.kind
    } else if (f.event === 'delta') {
      expect(open, `delta outside a block: ${trace}`).not.toBeNull()
      expect(f.data.kind, trace).toBe(DELTA_KIND[open!])
      expect(typeof f.data.text).toBe('string')
    } else if (f.event === 'block_stop') {
      expect(open, `block_stop without a block: ${trace}`).not.toBeNull()
      open = null
    } else {
      throw new Error(`unexpected ${f.event} frame inside the stream: ${trace}`)
    }
  }
  return open
}

/** The kinds of the blocks the frames started, in order. */
export const blockKinds = (frames: readonly Frame[]) => frames.filter((f) => f.event === 'block_start').map((f) => f.data.kind as string)
