import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { usageWindow } from '../../../../domain/usage-window.ts'
import type { UsageDimension, UsageReportRow } from '../../../../store/usage-report.ts'
import type { AppDeps } from '../../../app-deps.ts'
import { orgOf } from '../../../plugins/auth.ts'
import { ApiKeySecurity, errors } from '../../../schemas/common.ts'
import { UsageGroup, UsageQuery, UsageReport } from '../../../schemas/usage.ts'

type EntryType = Extract<UsageGroup, { dimension: 'entry_type' }>['entry_type']

function groupOf(
  dimension: UsageDimension,
  keys: UsageReportRow['keys'],
  org: { id: string; name: string; slug: string },
): UsageGroup {
  const key = (name: string) => keys[name] ?? null
  switch (dimension) {
    case 'model':
      return { dimension, model_id: key('model_id'), model_name: key('model_name') }
    case 'namespace':
      return { dimension, namespace: key('namespace') }
    case 'api_key':
      return { dimension, api_key_id: key('api_key_id') }
    case 'entry_type':
      return { dimension, entry_type: key('entry_type') as EntryType }
    case 'organisation':
      return { dimension, organisation_id: org.id, name: org.name, slug: org.slug }
    case 'run':
      return {
        dimension,
        entry_type: key('entry_type') as EntryType,
        run_id: key('run_id'),
        api_key_id: key('api_key_id'),
        model_name: key('model_name'),
        namespace: key('namespace'),
        last_occurred_at: key('last_occurred_at'),
      }
    default: {
      const unknown: never = dimension
      throw new Error(`unknown usage dimension ${String(unknown)}`)
    }
  }
}

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
        const { rows, cached } = deps.store.usage.report({ orgId, ...window, bin, groupBy, namespace })
        const org = deps.store.organisations.get(orgId)!
        return {
          rows: rows.map(({ keys, bucket, ...totals }) => ({
            ...totals,
            bucket,
            group: groupBy === null ? null : groupOf(groupBy, keys, org),
          })),
          window,
          cached,
          bin,
          group_by: groupBy,
          namespace,
        }
      },
    )
  }
