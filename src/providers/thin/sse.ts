import { createParser, type EventSourceMessage } from 'eventsource-parser'

/**
 * A vendor's event stream as its events, bytes in: eventsource-parser (the parser the AI SDK's
 * EventSourceParserStream wraps) fed directly, with no web streams between the socket and the
 * parser. As the SDK's stream does, an event left without its closing blank line when the body ends
 * is dropped, and a `[DONE]` data line is not an event.
 */
export type SseDecoder = {
  /** The events these bytes complete, in order. */
  push(bytes: Uint8Array): EventSourceMessage[]
}

export function createSseDecoder(): SseDecoder {
  const decoder = new TextDecoder()
  let events: EventSourceMessage[] = []
  const parser = createParser({
    onEvent: (event) => {
      if (event.data !== '[DONE]') events.push(event)
    },
  })
  return {
    push(bytes) {
      parser.feed(decoder.decode(bytes, { stream: true }))
      const done = events
      events = []
      return done
    },
  }
}
