import type { Client } from 'openapi-fetch'
import { ParleyApiError, TurnAlreadyAccepted } from './parley-error.ts'
import { readTurnEvents } from './read-events.ts'
import type { components, paths } from './schema.ts'
import type { TurnEvent } from './turn-events.ts'

/** A turn as `submit` sends it: streamed (`stream` is `answer`'s business). */
export type TurnRequest = Omit<components['schemas']['CreateResponseRequest'], 'stream'>

/** A turn answered with `stream: false` (docs/guide/turn-options.md): its stream's frames, folded, once the run is settled. */
export type TurnAnswer = components['schemas']['TurnAnswer']

/** A retry (docs/guide/runs.md): the failed run, the model and any request-level tools again; no input. */
export type RetryRequest = Omit<TurnRequest, 'input' | 'retry_of'> & { retry_of: string }

export type TurnOptions = {
  signal?: AbortSignal
  /**
   * How many times a stream whose connection dropped before its last event (`done` or `error`) is
   * resumed by itself: reconnected to GET /api/v1/runs/{run_id}/events after the last event id it
   * had (docs/guide/turn-stream.md). Each frame is yielded once, in order. 0 (the default): a
   * dropped connection ends the iteration (an error thrown by fetch, or the stream just ending).
   */
  resume?: number
}

export type ResumeOptions = TurnOptions & {
  /**
   * The `x-parley-txid` of the turn's answer (its head): a replica that has not yet got the run
   * waits for it (decision 029) instead of answering 404. A turn that resumes by itself sends it.
   */
  txid?: string
}

/**
 * A run's events, read once, as they arrive. Leaving the loop early drops the connection; the run
 * goes on and settles (docs/guide/turn-stream.md).
 */
export type RunStream = AsyncIterable<TurnEvent> & {
  /** The server's id of the request, for its logs. */
  requestId: string | null
}

/** A turn the server accepted: its stream, and the key it was sent with. */
export type Turn = RunStream & {
  /** The key the turn was sent with: the one to send again if the answer is ever in doubt. */
  idempotencyKey: string | null
}

export type ResendPolicy = {
  /** How many times a turn whose answer was lost is sent again, with the same key. */
  attempts: number
  /** How often a run still in progress is read while waiting to send again. */
  pollMs: number
}

export const DEFAULT_RESEND: ResendPolicy = { attempts: 2, pollMs: 250 }

const TURN_PATH = '/api/v1/chats/{chat_id}/responses'
const EVENTS_PATH = '/api/v1/runs/{run_id}/events'

/** An event id's sequence number (`<run_id>:<seq>`): ids grow along a run's stream. */
const seqOf = (id: string) => Number(id.slice(id.lastIndexOf(':') + 1))
const runOfId = (id: string) => id.slice(0, id.lastIndexOf(':'))
/** The `unavailable` error a server writes as it shuts down: it has no id and ends the connection, not the run (decision 038). */
const endsConnectionOnly = (event: TurnEvent) => event.event === 'error' && event.id === undefined && event.data.code === 'unavailable'

export function turnsOf(api: Client<paths>, resend: ResendPolicy) {
  const sleep = (ms: number, signal?: AbortSignal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason)
      const timer = setTimeout(resolve, ms)
      signal?.addEventListener(
        'abort',
        () => {
          clearTimeout(timer)
          reject(signal.reason)
        },
        { once: true },
      )
    })

  /** Waits until `runId` is no longer running, so a turn sent again is judged on its key, not refused as `run_in_progress`. */
  async function untilSettled(runId: string, signal?: AbortSignal): Promise<void> {
    for (;;) {
      const { data, error, response } = await api.GET('/api/v1/runs/{run_id}', { params: { path: { run_id: runId } }, signal })
      if (error !== undefined) throw ParleyApiError.fromResponse(response, error)
      if (data.status !== 'running') return
      await sleep(resend.pollMs, signal)
    }
  }

  /**
   * Sends a turn and returns its stream once the server accepted it; a refusal (any 4xx/5xx before
   * the stream opened, docs/guide/turn-stream.md) throws a ParleyApiError.
   *
   * Every turn carries an idempotency key: the request's, or a new random one (`null` sends none).
   * When the connection breaks before the answer arrives, the submission is uncertain: it is sent
   * again with the same key, never a new one. If the first one was accepted, the server
   * answers 409 `idempotency_key_reused` naming its run, which throws TurnAlreadyAccepted; while
   * that run is still going the answer would be `run_in_progress`, so the client waits for the run
   * to end before asking again.
   */
  async function submit(chatId: string, request: TurnRequest, options: TurnOptions = {}): Promise<Turn> {
    const { stream: _stream, ...streamed } = request as TurnRequest & { stream?: unknown }
    const body: TurnRequest = { ...streamed, idempotency_key: request.idempotency_key === undefined ? crypto.randomUUID() : request.idempotency_key }
    const { signal } = options
    let resent = 0
    for (;;) {
      let answer
      try {
        answer = await api.POST(TURN_PATH, { params: { path: { chat_id: chatId } }, body, parseAs: 'stream', signal })
      } catch (error) {
        // fetch rejects with a TypeError when the connection fails; an abort is a DOMException and is final.
        const lost = error instanceof TypeError && signal?.aborted !== true
        if (!lost || body.idempotency_key === null || resent >= resend.attempts) throw error
        resent++
        continue
      }
      const { data, error, response } = answer
      if (data) {
        const txid = response.headers.get('x-parley-txid')
        return {
          idempotencyKey: body.idempotency_key ?? null,
          requestId: response.headers.get('x-request-id'),
          [Symbol.asyncIterator]: () => resuming(data, { ...options, runId: null, lastEventId: null, txid }),
        }
      }
      const refusal = ParleyApiError.fromResponse(response, error)
      if (resent > 0 && refusal.runId !== null) {
        if (refusal.code === 'idempotency_key_reused') throw new TurnAlreadyAccepted(refusal, refusal.runId)
        if (refusal.code === 'run_in_progress') {
          await untilSettled(refusal.runId, signal)
          continue
        }
      }
      throw refusal
    }
  }

  /**
   * Opens GET /api/v1/runs/{run_id}/events after `lastEventId` (from the start without it). A
   * refusal throws a ParleyApiError; a connection that fails rejects with fetch's TypeError.
   */
  async function openEvents(runId: string, lastEventId: string | null, txid: string | null, signal?: AbortSignal) {
    const header = { ...(lastEventId === null ? {} : { 'last-event-id': lastEventId }), ...(txid === null ? {} : { 'x-parley-txid': txid }) }
    const { data, error, response } = await api.GET(EVENTS_PATH, { params: { path: { run_id: runId }, header }, parseAs: 'stream', signal })
    if (data) return { body: data, requestId: response.headers.get('x-request-id') }
    throw ParleyApiError.fromResponse(response, error)
  }

  /**
   * The events of a stream that may be resumed `options.resume` times: each frame once (a frame at
   * or before the last id had is skipped), in order. A connection that drops (fetch's TypeError, the
   * body ending before `done`/`error`, or the server's id-less `unavailable` as it shuts down) is
   * reopened after the last id, after `resend.pollMs`; so is a 503 on reopening (a replica behind).
   * Once the resumes are spent, the last drop is what the caller gets, as without resuming.
   */
  async function* resuming(
    first: ReadableStream<Uint8Array>,
    from: { runId: string | null; lastEventId: string | null; txid: string | null } & TurnOptions,
  ): AsyncGenerator<TurnEvent, void, undefined> {
    let body: ReadableStream<Uint8Array> | null = first
    let { runId, lastEventId } = from
    let left = from.resume ?? 0
    for (;;) {
      // How this connection ended short of the run's last event: nothing (the body just ended), an error, or the server's shutdown event.
      let dropped: { error: unknown } | { event: TurnEvent } | null = null
      if (body !== null) {
        try {
          for await (const event of readTurnEvents(body)) {
            if (event.id !== undefined) {
              if (lastEventId !== null && seqOf(event.id) <= seqOf(lastEventId)) continue
              lastEventId = event.id
              runId ??= runOfId(event.id)
            }
            if (event.event === 'run') runId = event.data.run_id
            if (endsConnectionOnly(event)) {
              dropped = { event }
              break
            }
            yield event
            if (event.event === 'done' || event.event === 'error') return
          }
        } catch (error) {
          if (from.signal?.aborted === true || !(error instanceof TypeError)) throw error
          dropped = { error }
        }
      }
      if (left === 0 || runId === null) {
        if (dropped !== null && 'event' in dropped) yield dropped.event
        if (dropped !== null && 'error' in dropped) throw dropped.error
        return
      }
      left--
      await sleep(resend.pollMs, from.signal)
      try {
        body = (await openEvents(runId, lastEventId, from.txid, from.signal)).body
      } catch (error) {
        const transient = (error instanceof TypeError && from.signal?.aborted !== true) || (error instanceof ParleyApiError && error.status === 503)
        if (!transient) throw error
        body = null
        // Nothing was read: a later failure to reopen is reported as this one.
        if (left === 0) throw error
      }
    }
  }

  /**
   * Reads a run's events (GET /api/v1/runs/{run_id}/events), in the turn stream's grammar and with
   * its ids: after `lastEventId` (the `id` of the last event you had), or from the start without
   * it. Live while the run runs on the node that answers; rebuilt from the ledger once it has ended
   * (a block's text then comes as one delta, from the offset you had). With `options.resume`, a
   * dropped connection is resumed by itself as a turn's is. A refusal throws a ParleyApiError (404
   * for a run that is not the organisation's, 422 for an id of another run).
   */
  async function resume(runId: string, lastEventId?: string | null, options: ResumeOptions = {}): Promise<RunStream> {
    const opened = await openEvents(runId, lastEventId ?? null, options.txid ?? null, options.signal)
    return {
      requestId: opened.requestId,
      [Symbol.asyncIterator]: () => resuming(opened.body, { ...options, runId, lastEventId: lastEventId ?? null, txid: options.txid ?? null }),
    }
  }

  /**
   * Retries the chat's latest failed run (docs/guide/runs.md): `input: []`, `retry_of` naming it,
   * and a new idempotency key, since the failed submission's key already names the failed run.
   */
  function retry(chatId: string, request: RetryRequest, options: TurnOptions = {}): Promise<Turn> {
    return submit(chatId, { ...request, input: [], idempotency_key: request.idempotency_key ?? crypto.randomUUID() }, options)
  }

  /**
   * Sends a turn with `stream: false` and returns its answer once the run is settled: the blocks the
   * stream would have carried, and `done` or `error` (docs/guide/turn-options.md). A refusal throws a
   * ParleyApiError. Sent once: a connection lost before the answer leaves the turn's fate to read
   * with its idempotency key (a new random one unless the request has one, `null` for none).
   */
  async function answer(chatId: string, request: TurnRequest, options: { signal?: AbortSignal } = {}): Promise<TurnAnswer & { idempotencyKey: string | null }> {
    const idempotencyKey = request.idempotency_key === undefined ? crypto.randomUUID() : request.idempotency_key
    const { data, error, response } = await api.POST(TURN_PATH, {
      params: { path: { chat_id: chatId } },
      body: { ...request, stream: false, idempotency_key: idempotencyKey },
      signal: options.signal,
    })
    if (data === undefined) throw ParleyApiError.fromResponse(response, error)
    return { ...(data as TurnAnswer), idempotencyKey }
  }

  return { submit, retry, resume, answer }
}
