import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { NotFoundError, ValidationError } from '../../../../domain/errors.ts'
import { parseEventId } from '../../../../domain/runs/run-event-ids.ts'
import { ledgerFrameSources } from '../../../sse/ledger-frames.ts'
import { endOpenStreams, writeRunFrames, type OpenStreams } from '../../../sse/write-run-stream.ts'
import { RUN_EVENT_ORDER, RUN_EVENT_SCHEMAS, RunEventPayload } from '../../../schemas/events.ts'
import { unitsToMoney } from '../../../../domain/money.ts'
import { contextTokens, type Usage } from '../../../../domain/pricing/usage.ts'
import type { RunRow } from '../../../../store/runs.ts'
import type { AppDeps } from '../../../app-deps.ts'
import { keyOf, orgOf } from '../../../plugins/auth.ts'
import type { EventReaders } from '../../../sse/event-readers.ts'
import type { FastifyReply } from 'fastify'
import { ApiKeySecurity, errors } from '../../../schemas/common.ts'
import { RunInspection, RunParams } from '../../../schemas/responses.ts'

type ManifestEstimate = { estimated_input_tokens?: number; token_estimate?: { correction: number; corrected: number } }

/** The run's estimate of its input (its manifest's) against the vendor's count (its usage). */
function tokenEstimateOf(manifest: ManifestEstimate, usage: Usage | null) {
  if (typeof manifest.estimated_input_tokens !== 'number') return null
  const estimated = manifest.estimated_input_tokens
  // A compaction run's prompt is not corrected: its estimate is what it was sent as.
  const { correction, corrected } = manifest.token_estimate ?? { correction: 1, corrected: estimated }
  return { estimated, correction, corrected, reported: usage === null ? null : contextTokens(usage) }
}

export function toRunInspection(run: RunRow, now: Date) {
  const usage = run.usage === null ? null : (JSON.parse(run.usage) as Usage)
  const manifest = JSON.parse(run.manifest) as Record<string, unknown> & ManifestEstimate
  return {
    id: run.id,
    chat_id: run.chat_id,
    model: run.model_name,
    namespace: run.namespace,
    origin: run.origin,
    status: run.status,
    // The durable status is the row; liveness is whether a node still holds the run's lease.
    is_live: run.status === 'running' && run.lease_expires_at !== null && run.lease_expires_at > now.toISOString(),
    created_at: run.created_at,
    completed_at: run.completed_at,
    settled_at: run.settled_at,
    cost: run.cost_units === null ? null : unitsToMoney(BigInt(run.cost_units)),
    error: run.error,
    latency_ms: run.latency_ms === null ? null : Number(run.latency_ms),
    provider_request_id: run.provider_request_id,
    usage,
    manifest,
    token_estimate: tokenEstimateOf(manifest, usage),
  }
}

export const runRoutes =
  (deps: AppDeps, options: { readers: EventReaders }): FastifyPluginAsyncTypebox =>
  async (app) => {
    /** One lookup for both routes: another organisation's run is a missing run. */
    const findRun = (orgId: string, runId: string) => {
      const run = deps.store.runs.get(orgId, runId)
      if (!run) throw new NotFoundError(`run ${runId} not found`)
      return run
    }

    app.get(
      '/api/v1/runs/:run_id',
      {
        schema: {
          operationId: 'getRun',
          tags: ['runs'],
          summary: 'Inspect a run: status, usage, cost and the manifest of what it was given',
          security: ApiKeySecurity,
          params: RunParams,
          response: { 200: Type.Ref(RunInspection), ...errors(400, 401, 404, 422, 500, 503) },
        },
      },
      async (request) => toRunInspection(findRun(orgOf(request), request.params.run_id), deps.now()),
    )

    const streams: OpenStreams = new Set()
    app.addHook('preClose', () => endOpenStreams(streams))
    const rebuilt = ledgerFrameSources()
    // A place taken for a reader until its response ends; a refusal closes the connection, so a
    // refused client's idle socket holds no descriptor either.
    const holdReader = (reply: FastifyReply, admit: () => () => void): void => {
      try {
        reply.raw.once('close', admit())
      } catch (error) {
        reply.header('connection', 'close')
        throw error
      }
    }

    app.get(
      '/api/v1/runs/:run_id/events',
      {
        schema: {
          operationId: 'getRunEvents',
          tags: ['runs'],
          summary: "Read a run's stream of events from the start, or resume it after the last event id you had",
          description:
            "The run's frames, in the turn stream's grammar and with the same ids (`<run_id>:<sequence number>`), from the start or after " +
            'the `Last-Event-ID` header or the `after` parameter (`after` wins when both are sent). While the run runs on the node that ' +
            'streams it, the frames come live; once it has ended (or from another node, or after a restart) they are rebuilt from the ' +
            "ledger: a block's text then comes in one delta, from the offset you had. A run interrupted by a restart ends with its `error` " +
            'event. Readers are bounded on each node: per run and per API key (429 `rate_limited`), and in all (503 `unavailable`), ' +
            'each refusal with Retry-After and the connection closed. See docs/guide/turn-stream.md, docs/decisions/038-resumable-run-streams.md ' +
            'and docs/decisions/062-bounded-event-readers.md.',
          security: ApiKeySecurity,
          params: RunParams,
          querystring: Type.Object({
            after: Type.Optional(Type.String({ maxLength: 200, description: 'An event id of this run: the frames after it are sent.' })),
          }),
          headers: Type.Object({
            'last-event-id': Type.Optional(Type.String({ maxLength: 200, description: 'An event id of this run, as an EventSource sends it on reconnecting.' })),
          }),
          response: {
            200: {
              description: `The run's events as \`text/event-stream\`, each with its \`id:\`. ${RUN_EVENT_ORDER}`,
              content: { 'text/event-stream': { schema: Type.Ref(RunEventPayload), 'x-sse-events': RUN_EVENT_SCHEMAS } },
            },
            ...errors(400, 401, 404, 422, 429, 500, 503),
          },
        },
      },
      async (request, reply) => {
        const orgId = orgOf(request)
        // Bounded before anything is read (decision 062): the node's and the key's room, then the run's once it is the caller's.
        holdReader(reply, () => options.readers.admitKey(keyOf(request)))
        const run = findRun(orgId, request.params.run_id)
        holdReader(reply, () => options.readers.admitRun(run.id))
        const fromQuery = request.query.after !== undefined
        const given = fromQuery ? request.query.after : request.headers['last-event-id']
        let after = 0
        if (given !== undefined && given !== '') {
          const parsed = parseEventId(run.id, given)
          if (!parsed.ok) {
            throw new ValidationError([
              { in: fromQuery ? 'query' : 'header', pointer: fromQuery ? '/after' : '/last-event-id', message: `${parsed.reason}: "${given}" is not an event id of run ${run.id}` },
            ])
          }
          after = parsed.seq
        }
        // Live from the run's channel where it runs here; from this node's ledger copy otherwise (decision 038).
        const channel = run.status === 'running' ? deps.host.channelOf(run.chat_id, run.id) : null
        if (channel) {
          writeRunFrames(reply, run.id, channel, after, streams)
          return reply
        }
        // Readers of the same run share one rebuilt copy of its frames.
        const shared = rebuilt.acquire(run.id, () => {
          const row = deps.store.runs.get(orgId, run.id)
          return row ? { run: row, parts: deps.store.parts.ofRun(run.id) } : null
        })
        reply.raw.once('close', shared.release)
        writeRunFrames(reply, run.id, shared.source, after, streams)
        return reply
      },
    )

    app.post(
      '/api/v1/runs/:run_id/cancel',
      {
        schema: {
          operationId: 'cancelRun',
          tags: ['runs'],
          summary: 'Stop a running run; its output so far is kept. A finished run is returned unchanged.',
          security: ApiKeySecurity,
          params: RunParams,
          response: { 200: Type.Ref(RunInspection), ...errors(400, 401, 404, 422, 500, 503) },
        },
      },
      async (request) => {
        const orgId = orgOf(request)
        const run = findRun(orgId, request.params.run_id)
        if (run.status === 'running') await deps.host.cancel(run.chat_id, run.id)
        return toRunInspection(findRun(orgId, run.id), deps.now())
      },
    )
  }
