import type { DomainError } from '../domain/errors.ts'

export type RunFrame = { event: string; data: unknown }
export type RunOpening = { ok: true } | { ok: false; error: DomainError }

/**
 * The fan-out of one run's events. Frames are kept until the run ends so a subscriber that arrives
 * late (the HTTP route subscribes after admission) still sees every frame, in order. Nobody
 * listening changes nothing: a dropped connection does not stop the run.
 */
export class RunChannel {
  private readonly frames: RunFrame[] = []
  private readonly listeners = new Set<(frame: RunFrame) => void>()
  private resolveOpening!: (opening: RunOpening) => void
  private resolveSettled!: () => void
  private ended = false
  private isOpen = false
  /** Resolves when the provider stream opened, or failed before its first byte. */
  readonly opening = new Promise<RunOpening>((resolve) => (this.resolveOpening = resolve))
  /** Resolves once the run is settled (its status and charge are written). */
  readonly settled = new Promise<void>((resolve) => (this.resolveSettled = resolve))

  constructor(readonly runId: string) {}

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
    const frame = { event, data }
    this.frames.push(frame)
    for (const listener of this.listeners) listener(frame)
  }

  /** Terminal frame (`done` or `error`): delivered, then the channel ends. */
  end(event: 'done' | 'error', data: unknown): void {
    this.push(event, data)
    this.ended = true
    this.listeners.clear()
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
