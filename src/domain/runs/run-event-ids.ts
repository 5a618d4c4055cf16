/**
 * The `id:` of a run's frames (docs/decisions/038-resumable-run-streams.md): `<run_id>:<seq>`.
 *
 * `seq` is a position that is computed the same way live (by the run's channel) and from the
 * ledger (by a rebuilt stream), so that an id the client got live says where to go on in a rebuilt
 * stream:
 * - the opening frames (everything before the first `block_start`: `run`, `config_warnings`,
 *   `translation_warnings`, `compacting`) are 1, 2, 3, ...;
 * - content block b (0-based) owns the span [(b+1)·SPAN, (b+2)·SPAN): its `block_start` is at
 *   (b+1)·SPAN, a `delta` is at (b+1)·SPAN + the block's text length (UTF-16 units) up to the end
 *   of that delta, its `block_stop` is at (b+2)·SPAN − 1;
 * - the terminal frame (`done` or `error`) after n blocks is at (n+2)·SPAN − 1: where the
 *   `block_stop` of a block n would be, so it comes after anything a client saw of a block that a
 *   crash kept out of the ledger (a block's `block_stop` goes out only once it is persisted).
 * So a position inside a block is a character offset in the persisted part, and the positions of
 * later frames never depend on a block's length.
 */
export const BLOCK_SPAN = 10_000_000_000

export type FrameKind = 'opening' | 'block_start' | 'delta' | 'block_stop' | 'terminal' | 'other'

export function frameKindOf(event: string): FrameKind {
  switch (event) {
    case 'block_start':
    case 'delta':
    case 'block_stop':
      return event
    case 'done':
    case 'error':
      return 'terminal'
    default:
      return 'other'
  }
}

/** A frame with its position; a delta also carries where its text starts. */
export type Sequenced<F extends { event: string; data: unknown }> = F & { seq: number; start?: number }

/** The numbering state of a stream: the position of the last frame and the current block. */
export type Numbering = { last: number; blocks: number; blockStart: number | null; offset: number }

export const initialNumbering = (): Numbering => ({ last: 0, blocks: 0, blockStart: null, offset: 0 })

/** The next frame's position (and, for a delta, where its text starts), and the numbering after it. */
export function number(state: Numbering, event: string, data: unknown): { seq: number; start?: number; next: Numbering } {
  switch (frameKindOf(event)) {
    case 'block_start': {
      const seq = (state.blocks + 1) * BLOCK_SPAN
      return { seq, next: { last: seq, blocks: state.blocks + 1, blockStart: seq, offset: 0 } }
    }
    case 'delta': {
      const length = String((data as { text?: unknown }).text ?? '').length
      const base = state.blockStart ?? (state.blocks + 1) * BLOCK_SPAN
      const start = base + state.offset
      const seq = start + length
      return { seq, start, next: { ...state, last: seq, blockStart: base, offset: state.offset + length } }
    }
    case 'block_stop': {
      const seq = (state.blocks + 1) * BLOCK_SPAN - 1
      return { seq, next: { ...state, last: seq, blockStart: null, offset: 0 } }
    }
    case 'terminal': {
      const seq = (state.blocks + 2) * BLOCK_SPAN - 1
      return { seq, next: { ...state, last: seq } }
    }
    default: {
      const seq = state.last + 1
      return { seq, next: { ...state, last: seq } }
    }
  }
}

export function numberFrames<F extends { event: string; data: unknown }>(frames: readonly F[]): Sequenced<F>[] {
  let state = initialNumbering()
  return frames.map((frame) => {
    const { seq, start, next } = number(state, frame.event, frame.data)
    state = next
    return start === undefined ? { ...frame, seq } : { ...frame, seq, start }
  })
}

export const formatEventId = (runId: string, seq: number) => `${runId}:${seq}`

/** An event id of this run: its position, or why it is not one. */
export function parseEventId(runId: string, id: string): { ok: true; seq: number } | { ok: false; reason: string } {
  const colon = id.lastIndexOf(':')
  if (colon <= 0) return { ok: false, reason: 'an event id is <run_id>:<sequence number>' }
  if (id.slice(0, colon) !== runId) return { ok: false, reason: 'the event id is of another run' }
  const digits = id.slice(colon + 1)
  if (!/^(0|[1-9][0-9]{0,15})$/.test(digits) || !Number.isSafeInteger(Number(digits))) {
    return { ok: false, reason: 'the sequence number of an event id is a non-negative integer' }
  }
  return { ok: true, seq: Number(digits) }
}

/**
 * The frame as a reader that has seen everything up to `after` gets it: null when it saw it all,
 * the rest of its text for a delta it saw part of (a rebuilt block's one delta, from the offset the
 * client has).
 */
export function frameAfter<F extends { event: string; data: unknown }>(frame: Sequenced<F>, after: number): Sequenced<F> | null {
  if (frame.seq <= after) return null
  if (frame.start === undefined || frame.start >= after) return frame
  const data = frame.data as { kind: string; text: string }
  return { ...frame, data: { ...data, text: data.text.slice(after - frame.start) }, start: after }
}
