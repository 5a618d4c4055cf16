import type { Client } from 'openapi-fetch'
import { ParleyApiError, TurnAlreadyAccepted } from './parley-error.ts'
import { readTurnEvents } from './read-events.ts'
import type { components, paths } from './schema.ts'
import type { TurnEvent } from './turn-events.ts'

export type TurnRequest = components['schemas']['CreateResponseRequest']

/** A retry (docs/guide/runs.md): the failed run, the model and any request-level tools again; no input. */
export type RetryRequest = Omit<TurnRequest, 'input' | 'retry_of'> & { retry_of: string }

export type TurnOptions = { signal?: AbortSignal }

/**
 * A turn the server accepted: its events, read once, as they arrive. Leaving the loop early drops
 * the connection; the run goes on and settles (docs/guide/turn-stream.md).
 */
export type Turn = AsyncIterable<TurnEvent> & {
  /** The key the turn was sent with: the one to send again if the answer is ever in doubt. */
  idempotencyKey: string | null
  /** The server's id of the request, for its logs. */
  requestId: string | null
}

export type ResendPolicy = {
  /** How many times a turn whose answer was lost is sent again, with the same key. */
  attempts: number
  /** How often a run still in progress is read while waiting to send again. */
  pollMs: number
}

export const DEFAULT_RESEND: ResendPolicy = { attempts: 2, pollMs: 250 }

const TURN_PATH = '/api/v1/chats/{chat_id}/responses'

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
    const body: TurnRequest = { ...request, idempotency_key: request.idempotency_key === undefined ? crypto.randomUUID() : request.idempotency_key }
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
        return {
          idempotencyKey: body.idempotency_key ?? null,
          requestId: response.headers.get('x-request-id'),
          [Symbol.asyncIterator]: () => readTurnEvents(data),
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
   * Retries the chat's latest failed run (docs/guide/runs.md): `input: []`, `retry_of` naming it,
   * and a new idempotency key, since the failed submission's key already names the failed run.
   */
  function retry(chatId: string, request: RetryRequest, options: TurnOptions = {}): Promise<Turn> {
    return submit(chatId, { ...request, input: [], idempotency_key: request.idempotency_key ?? crypto.randomUUID() }, options)
  }

  return { submit, retry }
}
