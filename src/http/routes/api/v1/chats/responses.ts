import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { Type } from '@sinclair/typebox'
import { TurnCapacityError, TurnOverloadError } from '../../../../../domain/errors.ts'
import type { TurnRequest } from '../../../../../domain/turns/submission.ts'
import type { AppDeps } from '../../../../app-deps.ts'
import { orgOf } from '../../../../plugins/auth.ts'
import { submitTurn } from '../../../../submit-turn.ts'
import type { BodyWork } from '../../../../body-work/body-work.ts'
import type { LoopDelay } from '../../../../loop-delay.ts'
import { endOpenStreams, writeRunFrames, type OpenStreams } from '../../../../sse/write-run-stream.ts'
import { framesOf, settledOf } from '../../../../../actors/run-channel.ts'
import { collectTurnAnswer } from '../../../../../domain/runs/turn-answer.ts'
import { ChatParams } from '../../../../schemas/chats.ts'
import { ApiKeySecurity, errors, TurnUnprocessableError } from '../../../../schemas/common.ts'
import { RUN_EVENT_ORDER, RUN_EVENT_SCHEMAS, RunEventPayload, TurnAnswer } from '../../../../schemas/events.ts'
import { CreateResponseRequest } from '../../../../schemas/responses.ts'
import { findChat } from './index.ts'

/** Turn bodies may carry attachments: up to 32 MiB, base64 overhead included (docs/guide/errors.md). */
export const TURN_BODY_LIMIT = 32 * 1024 * 1024

const TURN_DESCRIPTION = [
  'Appends the input to the chat and runs the model on the packed context; the answer streams back as server-sent events.',
  'A failure before the stream opens is an HTTP error in JSON (the run is then readable as failed); after it opens, a failure is the `error` event.',
  'Closing the connection does not cancel the run: it finishes, persists and settles; resume its stream with `GET /api/v1/runs/{run_id}/events` and the last event id you had, or read `GET /api/v1/runs/{run_id}` and the history.',
  'Send an `idempotency_key` to make a submission safe to repeat: a reused key answers 409 naming the first run (its events are at `GET /api/v1/runs/{run_id}/events`).',
  'To retry a failed run, send `input: []`, `retry_of` (the latest failed customer run of the chat), the model, any request-level tools, and a new idempotency key.',
  'Answer the calls in `done.pending_tool_calls` with `tool_result` parts in the next turn; calls left unanswered are closed as `abandoned`.',
].join(' ')

/**
 * When this node takes no more turns: past a fixed number at once, and when it is overloaded.
 * See docs/decisions/033-running-run-caps.md.
 */
export type TurnAdmissionLimits = {
  /** MAX_CONCURRENT_TURNS: past it, 503 `concurrent_turns`. */
  maxConcurrentTurns: number
  /**
   * SHED_LOOP_DELAY_MS: while at least `shedFromTurns` turns are in flight and the event loop runs
   * this much late, 503 `overloaded`. A late loop takes new connections in slowly (one per turn of
   * the loop), so refusing early keeps a new client's answer within about two seconds.
   */
  shedLoopDelayMs: number
  /** SHED_FROM_TURNS: below this many turns in flight, a late loop is not this node's turns' doing. */
  shedFromTurns: number
}

/** Whether one more turn may start now, or the refusal it gets: a pure rule over the node's load. */
export function turnRefusal(inFlight: number, loopDelayMs: number, limits: TurnAdmissionLimits): TurnCapacityError | TurnOverloadError | null {
  if (inFlight >= limits.maxConcurrentTurns) return new TurnCapacityError(limits.maxConcurrentTurns)
  if (inFlight >= limits.shedFromTurns && loopDelayMs > limits.shedLoopDelayMs) return new TurnOverloadError(loopDelayMs)
  return null
}

/**
 * The turns this node serves at once: a turn holds its place from its arrival (after the key is
 * checked, before its body is read) until its answer ends, whichever way: an error before the
 * stream, the stream's `done` or `error`, or the client hanging up. A refused turn answers 503 with
 * Retry-After at once, nothing read or written.
 */
export function turnSlots(limits: TurnAdmissionLimits, loop: Pick<LoopDelay, 'ms'>) {
  let inFlight = 0
  /** A place taken, or the refusal thrown; the function returned gives it back (once, however often called). */
  const acquire = (): (() => void) => {
    const refusal = turnRefusal(inFlight, loop.ms, limits)
    if (refusal) throw refusal
    inFlight++
    let held = true
    return () => {
      if (!held) return
      held = false
      inFlight--
    }
  }
  return {
    get inFlight() {
      return inFlight
    },
    /** For a turn no HTTP reply carries (the WebSocket mode's): its place is given back by the caller. */
    acquire,
    /** onRequest hook of the turn route. */
    async take(_request: FastifyRequest, reply: FastifyReply): Promise<void> {
      const release = acquire()
      // 'finish': the whole answer is handed over; 'close': that, or the connection went first.
      reply.raw.once('finish', release)
      reply.raw.once('close', release)
    },
  }
}

export type TurnSlots = ReturnType<typeof turnSlots>
/** The node's one count of turns in flight is shared by every route that starts one (native and facade). */
export type TurnRouteOptions = { slots: TurnSlots; bodyWork: Pick<BodyWork, 'decodeAttachment'> }

export const responseRoutes =
  (deps: AppDeps, options: TurnRouteOptions): FastifyPluginAsyncTypebox =>
  async (app) => {
    const streams: OpenStreams = new Set()
    app.addHook('preClose', () => endOpenStreams(streams))
    const { slots } = options

    app.post(
      '/api/v1/chats/:chat_id/responses',
      {
        bodyLimit: TURN_BODY_LIMIT,
        // After the key (the keyed scope's hook), before the body is read: a full node spends nothing on it.
        onRequest: slots.take,
        schema: {
          operationId: 'createResponse',
          tags: ['chats'],
          summary: 'Submit a turn (or a retry) and stream the answer as server-sent events',
          description: TURN_DESCRIPTION,
          security: ApiKeySecurity,
          params: ChatParams,
          body: Type.Ref(CreateResponseRequest),
          response: {
            200: {
              description: `The turn's events as \`text/event-stream\`. ${RUN_EVENT_ORDER}`,
              content: {
                'text/event-stream': { schema: Type.Ref(RunEventPayload), 'x-sse-events': RUN_EVENT_SCHEMAS },
                'application/json': { schema: Type.Ref(TurnAnswer) },
              },
            },
            ...errors(400, 401, 402, 404, 409, 413, 500, 502, 503),
            422: Type.Ref(TurnUnprocessableError),
          },
        },
      },
      async (request, reply) => {
        const orgId = orgOf(request)
        const chat = findChat(deps, orgId, request.params.chat_id)
        const body = request.body as TurnRequest
        const { runId, events } = await submitTurn(deps, options.bodyWork, { orgId, apiKeyId: request.identity?.keyId ?? null }, chat, body)
        if (body.stream === false) {
          // One JSON document once the run is settled: the frames its stream would have sent, folded.
          await settledOf(events)
          return reply.code(200).type('application/json').send(collectTurnAnswer(framesOf(events).map((f) => ({ event: f.event, data: f.data }))))
        }
        writeRunFrames(reply, runId, events, 0, streams, deps.position)
        return reply
      },
    )
  }
