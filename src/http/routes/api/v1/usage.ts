import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { usageWindow } from '../../../../domain/usage-window.ts'
import type { AppDeps } from '../../../app-deps.ts'
import { orgOf } from '../../../plugins/auth.ts'
import { ApiKeySecurity, errors } from '../../../schemas/common.ts'
import { UsageQuery, UsageReport } from '../../../schemas/usage.ts'
import { usageReportBody } from '../../../usage-report-body.ts'

export const usageRoutes =
  (deps: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.get(
      '/api/v1/usage',
      {
        schema: {
          operationId: 'getUsage',
          tags: ['usage'],
          summary: 'Token usage and model-call spend over a window, optionally binned and grouped',
          security: ApiKeySecurity,
          querystring: UsageQuery,
          response: { 200: Type.Ref(UsageReport), ...errors(401, 422, 502, 503) },
        },
      },
      async (request) => {
        const q = request.query
        const orgId = orgOf(request)
        const window = usageWindow(q.range, deps.now())
        const bin = q.bin ?? null
        const groupBy = q.group_by ?? null
        const namespace = q.namespace ?? null
        return usageReportBody(deps.store, deps.store.organisations.get(orgId)!, { window, bin, groupBy, namespace })
      },
    )
  }
