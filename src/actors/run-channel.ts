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

/**
 * What happens to one submission, in order: the one contract between the HTTP layer and the actors
 * (issue 25). `admitted` or `rejected` (the chat machine's decision), then for an admitted run
 * `opened` (its stream is the customer's from here) or `failed_before_stream` (answered with an
 * HTTP error instead), the stream's `frame`s up to the terminal `done` or `error`, and `settled`
 * once its status and charge are committed.
 */
export type RunEvent =
  | { type: 'admitted'; runId: string }
  | { type: 'rejected'; error: unknown }
  | { type: 'opened' }
  | { type: 'failed_before_stream'; error: DomainError }
  | { type: 'frame'; frame: RunFrame }
  | { type: 'settled' }

/**
 * A log of RunEvents read with cursors: a reader keeps its index and is woken when more come.
 * The rebuilt stream of an ended run (src/http/sse/ledger-frames.ts) is one too.
 */
export type RunEventSource = {
  at(index: number): RunEvent | undefined
  readonly size: number
  /** The terminal frame is in: no frame will follow (lifecycle events still may). */
  readonly hasEnded: boolean
  /** Calls `wake` after each new event, until the returned function is called. */
  wake(wake: () => void): () => void
}

/**
 * One submission's events, kept once for as long as the log lives, so a reader that comes late (the
 * HTTP route once admission is decided, a resuming reader mid-run) still reads every event, in order.
 * Readers hold only a cursor (`at`, `size`, `wake`): the memory is the run's events whatever the
 * number of readers. Nobody reading changes nothing: a dropped connection does not stop the run.
 */
export class RunChannel implements RunEventSource {
  private readonly events: RunEvent[] = []
  private readonly wakers = new Set<() => void>()
  private numbering: Numbering = initialNumbering()
  private admittedAs: string | null = null
  private ended = false
  private isOpen = false

  at(index: number): RunEvent | undefined {
    return this.events[index]
  }

  get size(): number {
    return this.events.length
  }

  get hasEnded(): boolean {
    return this.ended
  }

  /** The admitted run's id; null before admission (and for a rejected submission). */
  get runId(): string | null {
    return this.admittedAs
  }

  wake(wake: () => void): () => void {
    this.wakers.add(wake)
    return () => this.wakers.delete(wake)
  }

  private append(event: RunEvent): void {
    this.events.push(event)
    for (const wake of this.wakers) wake()
  }

  /** The chat machine admitted the submission as `runId`: its stream's opening frames come first (ids 1-3, decision 038). */
  admit(runId: string, opening: readonly { event: string; data: unknown }[]): void {
    if (this.admittedAs !== null) return
    this.admittedAs = runId
    this.append({ type: 'admitted', runId })
    for (const frame of opening) this.push(frame.event, frame.data)
  }

  reject(error: unknown): void {
    this.append({ type: 'rejected', error })
  }

  open(): void {
    if (this.isOpen) return
    this.isOpen = true
    this.append({ type: 'opened' })
  }

  /** Whether the stream opened: its failures are `error` frames from then on, never an HTTP status. */
  get opened(): boolean {
    return this.isOpen
  }

  failBeforeStream(error: DomainError): void {
    this.append({ type: 'failed_before_stream', error })
  }

  push(event: string, data: unknown): void {
    if (this.ended) return
    const { seq, start, next } = number(this.numbering, event, data)
    this.numbering = next
    this.append({ type: 'frame', frame: start === undefined ? { event, data, seq } : { event, data, seq, start } })
  }

  /** Terminal frame (`done` or `error`): delivered, then no frame follows. */
  end(event: 'done' | 'error', data: unknown): void {
    if (this.ended) return
    this.push(event, data)
    this.ended = true
    for (const wake of this.wakers) wake()
  }

  markSettled(): void {
    this.append({ type: 'settled' })
  }
}

/**
 * The first event from `from` on that `matches`, now or when it comes: how a reader waits for a
 * point of the log (admission decided, the stream opened, the run settled) with the same cursor
 * and wake every reader uses.
 */
export function nextEvent<T extends RunEvent['type']>(
  source: RunEventSource,
  types: readonly T[],
  from = 0,
): Promise<{ event: Extract<RunEvent, { type: T }>; index: number }> {
  const find = (start: number) => {
    for (let i = start; i < source.size; i++) {
      const event = source.at(i)!
      if ((types as readonly string[]).includes(event.type)) return { event: event as Extract<RunEvent, { type: T }>, index: i }
    }
    return null
  }
  const found = find(from)
  if (found) return Promise.resolve(found)
  return new Promise((resolve) => {
    let cursor = source.size
    const stop = source.wake(() => {
      const hit = find(cursor)
      cursor = source.size
      if (!hit) return
      stop()
      resolve(hit)
    })
  })
}

/** Resolves once the log says the run is settled. */
export const settledOf = (source: RunEventSource): Promise<void> => nextEvent(source, ['settled']).then(() => undefined)

/** The admitted run's id, or the rejection's error thrown. */
export async function admissionOf(source: RunEventSource): Promise<string> {
  const { event } = await nextEvent(source, ['admitted', 'rejected'])
  if (event.type === 'rejected') throw event.error
  return event.runId
}

/** The frames in the log so far, in order (for a reader that looks once, as the inspector and tests do). */
export function framesOf(source: RunEventSource): RunFrame[] {
  const frames: RunFrame[] = []
  for (let i = 0; i < source.size; i++) {
    const event = source.at(i)!
    if (event.type === 'frame') frames.push(event.frame)
  }
  return frames
}
