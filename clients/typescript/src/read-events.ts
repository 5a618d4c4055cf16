import { EventSourceParserStream } from 'eventsource-parser/stream'
import { isTurnEventName, type TurnEvent } from './turn-events.ts'

/**
 * The typed events of a turn's (or a run's, GET /api/v1/runs/{run_id}/events) `text/event-stream`
 * body, in arrival order, each with its `id` when the frame has one. Heartbeat comments are
 * skipped by the parser; an event name this client does not know is skipped too, so a server that
 * adds events does not break older clients. The stream ends after `done` or `error`.
 */
export async function* readTurnEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<TurnEvent, void, undefined> {
  // TypeScript's DOM types give TextDecoderStream a BufferSource writable side, which a byte stream is.
  const decoder = new TextDecoderStream() as TransformStream<Uint8Array, string>
  const reader = body
    .pipeThrough(decoder)
    .pipeThrough(new EventSourceParserStream({ onError: 'terminate' }))
    .getReader()
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) return
      const name = value.event ?? 'message'
      if (!isTurnEventName(name)) continue
      // The server writes each payload with JSON.stringify; the union's tag is the event name.
      const event = { event: name, data: JSON.parse(value.data) } as TurnEvent
      if (value.id !== undefined && value.id !== '') event.id = value.id
      yield event
      if (event.event === 'done' || event.event === 'error') return
    }
  } finally {
    // Leaving early (break, throw, return) drops the connection; the run goes on (docs/guide/turn-stream.md).
    await reader.cancel().catch(() => {})
  }
}
