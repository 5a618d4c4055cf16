import type { DomainError } from '../domain/errors.ts'
import { initialNumbering, number, type Numbering, type Sequenced } from '../domain/runs/run-event-ids.ts'

/** A frame of the run's stream, with its position (its SSE id is `<run_id>:<seq>`, decision 038). */
export type RunFrame = Sequenced<{ event: string; data: unknown }>
/** The frames every turn's stream opens with, in this order (docs/guide/turn-stream.md). */
export function openingFrames(o: {
  chatId: string
  runId: string
  closedToolCalls: readonly string[]
  configWarnings: readonly unknown[]
  translationWarnings: readonly unknown[]
}): { event: string; data: unknown }[] {
  return [
    { event: 'run', data: { chat_id: o.chatId, run_id: o.runId, closed_tool_calls: o.closedToolCalls } },
    { event: 'config_warnings', data: { warnings: o.configWarnings } },
    { event: 'translation_warnings', data: { warnings: o.translationWarnings } },
  ]
}

export type RunOpening = { ok: true } | { ok: false; error: DomainError }

/**
 * The fan-out of one run's events. Frames are kept once per run, for as long as the run's channel
 * lives, so a subscriber that arrives late (the HTTP route subscribes after admission, a resuming
 * reader joins mid-run) still sees every frame, in order. Readers hold only a cursor into them
 * (`at`, `size`, `wake`): the memory is the run's frames whatever the number of readers. Nobody
 * listening changes nothing: a dropped connection does not stop the run.
 */
export class RunChannel {
  private readonly frames: RunFrame[] = []
  private readonly listeners = new Set<(frame: RunFrame) => void>()
  private readonly wakers = new Set<() => void>()
  private numbering: Numbering = initialNumbering()
  private begun = false
  private resolveOpening!: (opening: RunOpening) => void
  private resolveSettled!: () => void
  private ended = false
  private isOpen = false
  /** Resolves when the provider stream opened, or failed before its first byte. */
  readonly opening = new Promise<RunOpening>((resolve) => (this.resolveOpening = resolve))
  /** Resolves once the run is settled (its status and charge are written). */
  readonly settled = new Promise<void>((resolve) => (this.resolveSettled = resolve))

  /** `opening`: the stream's first frames (`run`, `config_warnings`, `translation_warnings`). */
  constructor(readonly runId: string, opening?: readonly { event: string; data: unknown }[]) {
    if (opening) this.begin(opening)
  }

  /**
   * Puts the opening frames first, once (a channel made without them gets them from the route):
   * frames pushed before are numbered again after them.
   */
  begin(opening: readonly { event: string; data: unknown }[]): void {
    if (this.begun) return
    this.begun = true
    const later = this.frames.splice(0)
    this.numbering = initialNumbering()
    for (const frame of [...opening, ...later]) this.append(frame.event, frame.data)
  }

  private append(event: string, data: unknown): RunFrame {
    const { seq, start, next } = number(this.numbering, event, data)
    this.numbering = next
    const frame: RunFrame = start === undefined ? { event, data, seq } : { event, data, seq, start }
    this.frames.push(frame)
    return frame
  }

  /** The frame at a reader's cursor, if it has come. */
  at(index: number): RunFrame | undefined {
    return this.frames[index]
  }

  get size(): number {
    return this.frames.length
  }

  get hasEnded(): boolean {
    return this.ended
  }

  /** Calls `wake` after each new frame and at the end, until the returned function is called. */
  wake(wake: () => void): () => void {
    this.wakers.add(wake)
    return () => this.wakers.delete(wake)
  }

  open(): void {
    this.isOpen = true
    this.resolveOpening({ ok: true })
  }

  /** Whether the stream opened: its failures are `error` frames from then on, never an HTTP status. */
  get opened(): boolean {
    return this.isOpen
  }

  failBeforeStream(error: DomainError): void {
    this.resolveOpening({ ok: false, error })
  }

  push(event: string, data: unknown): void {
    if (this.ended) return
    const frame = this.append(event, data)
    for (const listener of this.listeners) listener(frame)
    for (const wake of this.wakers) wake()
  }

  /** Terminal frame (`done` or `error`): delivered, then the channel ends. */
  end(event: 'done' | 'error', data: unknown): void {
    this.push(event, data)
    this.ended = true
    this.listeners.clear()
    for (const wake of this.wakers) wake()
    this.wakers.clear()
  }

  markSettled(): void {
    this.resolveSettled()
  }

  /** Replays the frames so far, then follows live ones; returns the unsubscribe function. */
  subscribe(listener: (frame: RunFrame) => void): () => void {
    for (const frame of this.frames) listener(frame)
    if (!this.ended) this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }
}
