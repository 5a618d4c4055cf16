import type { UsageBin, UsageDimension, UsageReportRow } from '../store/usage-report.ts'
import type { Store } from '../store/index.ts'
import type { Organisation } from '../store/organisations.ts'
import type { UsageGroup } from './schemas/usage.ts'

type EntryType = Extract<UsageGroup, { dimension: 'entry_type' }>['entry_type']

export type UsageReportRequest = {
  window: { from: string; to: string }
  bin: UsageBin | null
  groupBy: UsageDimension | null
  namespace: string | null
}

function groupOf(dimension: UsageDimension, keys: UsageReportRow['keys'], org: Organisation): UsageGroup {
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

/**
 * The usage report of one organisation over a window (GET /api/v1/usage): the route resolves the
 * window from its range preset, the admin `usage` command from --from and --to; both print this.
 */
export function usageReportBody(store: Store, org: Organisation, q: UsageReportRequest) {
  const { rows, cached } = store.usage.report({ orgId: org.id, ...q.window, bin: q.bin, groupBy: q.groupBy, namespace: q.namespace })
  return {
    rows: rows.map(({ keys, bucket, ...totals }) => ({
      ...totals,
      bucket,
      group: q.groupBy === null ? null : groupOf(q.groupBy, keys, org),
    })),
    window: q.window,
    cached,
    bin: q.bin,
    group_by: q.groupBy,
    namespace: q.namespace,
  }
}
