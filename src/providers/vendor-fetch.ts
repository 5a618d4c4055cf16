import { Agent, fetch as undiciFetch } from 'undici'
import { parseRetryAfter } from './parse-retry-after.ts'
import { currentVendorCall, type VendorCallRecord } from './vendor-call-record.ts'
import type { VendorCallLimits } from './vendor-call-limits.ts'

/** A vendor call that went quiet past one of its deadlines. */
export class VendorTimeoutError extends Error {
  override name = 'VendorTimeoutError'
  readonly phase: 'first_byte' | 'idle'
  readonly ms: number
  constructor(phase: 'first_byte' | 'idle', ms: number, attempts = 1) {
    super(
      phase === 'first_byte'
        ? `the vendor sent nothing within ${ms} ms${attempts > 1 ? ` (${attempts} attempts)` : ''}`
        : `the vendor's stream was silent for ${ms} ms`,
    )
    this.phase = phase
    this.ms = ms
  }
}

/** A 2xx that is not an event stream: a proxy's page or a non-streaming answer, never a whole answer. */
export class NotAStreamError extends Error {
  override name = 'NotAStreamError'
  constructor(contentType: string | null) {
    super(`the vendor answered with ${contentType ?? 'no content type'} instead of an event stream`)
  }
}

type Fetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>

/** The vendor fetch: a fetch that also counts its requests and waits into the record of the call it serves, when given one. */
export type VendorFetch = (input: string | URL | Request, init?: RequestInit, record?: VendorCallRecord) => Promise<Response>

export type VendorFetchDeps = {
  fetch: Fetch
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>
  random: () => number
  now: () => number
}

// Statuses a vendor uses for "not now": timeouts, rate limits, overload (Anthropic's 529) and 5xx.
const isRetryableStatus = (status: number) => status === 408 || status === 429 || status >= 500

const isEventStream = (response: Response) => /^text\/event-stream\b/i.test(response.headers.get('content-type') ?? '')

/** Waits `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const onAbort = () => {
      clearTimeout(timer)
      reject(signal!.reason)
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

/** The real network: undici with the connect timeout; its own header and body timeouts stay behind ours. */
export function networkFetch(limits: VendorCallLimits): Fetch {
  const agent = new Agent({
    connect: { timeout: limits.connectTimeoutMs },
    headersTimeout: limits.firstByteTimeoutMs + 1_000,
    bodyTimeout: limits.idleTimeoutMs + 1_000,
  })
  return (input, init) => undiciFetch(input as string, { ...(init as object), dispatcher: agent }) as unknown as Promise<Response>
}

/**
 * The fetch every vendor SDK is given (decision 015). Before the vendor's first byte it retries
 * connection failures, 408, 429 (waiting what `Retry-After` asks) and 5xx with exponential backoff
 * and jitter, all within the first-byte deadline; it returns only once the stream's first bytes
 * have arrived, so the run's stream opens on a live answer. After that a silence longer than the
 * idle timeout errors the stream, which the run reports as an SSE `error`.
 */
export function createVendorFetch(limits: VendorCallLimits, deps: VendorFetchDeps): VendorFetch {
  const backoff = (retry: number) => {
    const ceiling = limits.retryBaseMs * 2 ** retry
    return Math.round(ceiling / 2 + deps.random() * (ceiling / 2))
  }

  return async (input, init, given) => {
    const caller = init?.signal ?? undefined
    // The call's record: bound by the model that serves the call (./language-models.ts), or the one being started now.
    const record = given ?? currentVendorCall()
    const deadline = deps.now() + limits.firstByteTimeoutMs
    for (let attempt = 0; ; attempt++) {
      const attemptController = new AbortController()
      const forwardAbort = () => attemptController.abort(caller!.reason)
      caller?.addEventListener('abort', forwardAbort, { once: true })
      // Made when the deadline passes, not on every attempt: an Error captures its stack (issue 34's profile).
      let timeout: VendorTimeoutError | null = null
      const timer = setTimeout(() => {
        timeout = new VendorTimeoutError('first_byte', limits.firstByteTimeoutMs, attempt + 1)
        attemptController.abort(timeout)
      }, Math.max(0, deadline - deps.now()))
      const release = () => {
        clearTimeout(timer)
        caller?.removeEventListener('abort', forwardAbort)
      }
      const canRetryAfter = (waitMs: number) => attempt < limits.maxRetries && deps.now() + waitMs < deadline
      if (record) record.requests += 1

      let waitMs: number
      try {
        const response = await deps.fetch(input, { ...init, signal: attemptController.signal })
        if (!response.ok) {
          waitMs = parseRetryAfter(response.headers, deps.now()) ?? backoff(attempt)
          if (!isRetryableStatus(response.status) || !canRetryAfter(waitMs)) {
            // The SDK reads the vendor's error body into its error; the timer no longer applies.
            release()
            return response
          }
          await response.body?.cancel().catch(() => undefined)
        } else if (!isEventStream(response)) {
          await response.body?.cancel().catch(() => undefined)
          throw new NotAStreamError(response.headers.get('content-type'))
        } else {
          const reader = response.body!.getReader()
          const first = await reader.read()
          if (!first.done) {
            clearTimeout(timer)
            return new Response(idleBounded(first.value, reader, limits.idleTimeoutMs, attemptController, release), {
              status: response.status,
              statusText: response.statusText,
              headers: response.headers,
            })
          }
          // An empty 200 stream sent nothing: as good as a dropped connection.
          waitMs = backoff(attempt)
          if (!canRetryAfter(waitMs)) throw new Error('the vendor closed its stream without sending anything')
        }
      } catch (error) {
        release()
        if (caller?.aborted) throw caller.reason ?? error
        if (timeout !== null && attemptController.signal.reason === timeout) throw timeout
        if (error instanceof NotAStreamError || !isConnectionFailure(error)) throw error
        waitMs = backoff(attempt)
        if (!canRetryAfter(waitMs)) throw error
      }
      release()
      if (record) record.retryWaitMs += waitMs
      await deps.sleep(waitMs, caller)
    }
  }
}

/**
 * The rest of a stream after its first chunk, erroring (and dropping the connection) after a silence of
 * `idleMs` while a chunk is awaited. One timer for the whole stream, re-armed as chunks come, rather
 * than a timer and a race per chunk (issue 34's profile): a silence is timed only while the reader
 * waits, so a slow consumer is never taken for a silent vendor.
 */
function idleBounded(
  first: Uint8Array,
  reader: ReadableStreamDefaultReader<Uint8Array>,
  idleMs: number,
  connection: AbortController,
  release: () => void,
): ReadableStream<Uint8Array> {
  let waiting = false
  let silence: VendorTimeoutError | null = null
  let timer: NodeJS.Timeout | null = null
  const onSilence = () => {
    // Not waiting (the consumer has not asked for more): not the vendor's silence; look again later.
    if (!waiting) return timer?.refresh()
    silence = new VendorTimeoutError('idle', idleMs)
    connection.abort(silence)
    void reader.cancel(silence).catch(() => undefined)
  }
  const stop = () => {
    if (timer) clearTimeout(timer)
    timer = null
  }
  return new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(first)
    },
    async pull(controller) {
      if (timer) timer.refresh()
      else {
        timer = setTimeout(onSilence, idleMs)
        // The socket being read keeps the process alive while it matters; a stream left unread must not.
        timer.unref()
      }
      waiting = true
      try {
        const next = await reader.read()
        waiting = false
        if (silence) throw silence
        if (next.done) {
          stop()
          release()
          controller.close()
        } else controller.enqueue(next.value)
      } catch (error) {
        waiting = false
        stop()
        release()
        controller.error(silence ?? error)
      }
    },
    cancel(reason) {
      stop()
      release()
      connection.abort(reason)
      return reader.cancel(reason).catch(() => undefined)
    },
  })
}

/** A request that never got an answer: refused, reset, timed out connecting, or cut before the first byte. */
function isConnectionFailure(error: unknown): boolean {
  if (error instanceof TypeError) return true // undici's "fetch failed", with the socket error as its cause
  const code = (error as { code?: unknown; cause?: { code?: unknown } } | null)?.code ?? (error as { cause?: { code?: unknown } } | null)?.cause?.code
  return typeof code === 'string' && (code.startsWith('UND_ERR') || code.startsWith('E'))
}
