import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { NotFoundError } from '../../../../domain/errors.ts'
import { unitsToMoney } from '../../../../domain/money.ts'
import { contextTokens, type Usage } from '../../../../domain/pricing/usage.ts'
import type { RunRow } from '../../../../store/runs.ts'
import type { AppDeps } from '../../../app-deps.ts'
import { orgOf } from '../../../plugins/auth.ts'
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
  (deps: AppDeps): FastifyPluginAsyncTypebox =>
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
