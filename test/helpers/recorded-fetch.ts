import type { ReplayResponse } from '../e2e/vendor-fixtures/index.ts'

/**
 * A test double for `fetch`: it answers the provider package's request with recorded vendor bytes
 * (test/e2e/vendor-fixtures), in process, with no socket. Each call takes the next queued answer,
 * first in first out; a call with none queued fails the test. Every request is kept as the package
 * built it (URL, method, headers, parsed JSON body), so a test can read the request shape.
 *
 * A stream's events are handed over one read at a time, every other event split in two (as the
 * loopback replay server writes them), so the package parses a stream that arrives in pieces.
 */

export type RecordedFetchRequest = {
  url: string
  method: string
  /** Header names lower-cased. */
  headers: Record<string, string>
  /** The JSON body, parsed; undefined when there was none or it was not JSON. */
  body: any
}

export type RecordedFetch = {
  fetch: (input: string | URL | Request, init?: RequestInit) => Promise<Response>
  /** Queues the answers to the next calls, in order. */
  answer: (...responses: ReplayResponse[]) => void
  requests: RecordedFetchRequest[]
  /** How many queued answers no call has taken yet. */
  readonly unanswered: number
}

export function createRecordedFetch(): RecordedFetch {
  const queue: ReplayResponse[] = []
  const requests: RecordedFetchRequest[] = []
  const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url
    const headers: Record<string, string> = {}
    new Headers(init?.headers).forEach((value, name) => (headers[name] = value))
    const text = typeof init?.body === 'string' ? init.body : init?.body instanceof Uint8Array ? new TextDecoder().decode(init.body) : undefined
    let body: unknown
    try {
      body = text === undefined ? undefined : JSON.parse(text)
    } catch {
      body = undefined
    }
    requests.push({ url, method: init?.method ?? 'GET', headers, body })
    const response = queue.shift()
    if (!response) throw new Error(`recorded fetch: no answer queued for ${init?.method ?? 'GET'} ${url}`)
    return responseOf(response, init?.signal ?? undefined)
  }
  return {
    fetch,
    answer: (...responses) => void queue.push(...responses),
    requests,
    get unanswered() {
      return queue.length
    },
  }
}

/** The recorded answer as a fetch Response. */
function responseOf(response: ReplayResponse, signal: AbortSignal | undefined): Promise<Response> {
  switch (response.kind) {
    case 'json':
      return Promise.resolve(new Response(JSON.stringify(response.body), { status: response.status, headers: response.headers }))
    case 'hang':
      // No answer until the caller gives up.
      return new Promise((_, reject) => {
        if (signal?.aborted) reject(signal.reason)
        signal?.addEventListener('abort', () => reject(signal.reason), { once: true })
      })
    case 'stream':
      return Promise.resolve(new Response(streamOf(response.events, response.end ?? 'close', signal), { status: 200, headers: response.headers }))
    default: {
      const unknown: never = response
      throw new Error(`unknown recorded answer ${JSON.stringify(unknown)}`)
    }
  }
}

function streamOf(events: readonly string[], end: 'close' | 'hang' | 'destroy', signal: AbortSignal | undefined): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder()
  const reads = events.flatMap((event, i) => (i % 2 === 1 && event.length > 16 ? [event.slice(0, event.length >> 1), event.slice(event.length >> 1)] : [event]))
  let next = 0
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (next < reads.length) {
        controller.enqueue(encoder.encode(reads[next++]!))
        return
      }
      switch (end) {
        case 'close':
          controller.close()
          return
        case 'destroy':
          // The connection drops once the bytes before it are read, as undici reports it.
          controller.error(new TypeError('terminated'))
          return
        case 'hang':
          // Silent with the connection open, until the caller aborts.
          return new Promise<void>((resolve) => {
            const stop = () => {
              controller.error(signal?.reason ?? new Error('aborted'))
              resolve()
            }
            if (signal?.aborted) stop()
            else signal?.addEventListener('abort', stop, { once: true })
          })
        default: {
          const unknown: never = end
          throw new Error(`unknown stream end ${String(unknown)}`)
        }
      }
    },
  })
}
