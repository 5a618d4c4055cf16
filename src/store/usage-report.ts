import { descendantRange } from '../domain/namespace.ts'
import { unitsToMoney } from '../domain/money.ts'
import type { Db } from './database.ts'

export const USAGE_DIMENSIONS = ['model', 'namespace', 'api_key', 'entry_type', 'organisation', 'run'] as const
export type UsageDimension = (typeof USAGE_DIMENSIONS)[number]
export type UsageBin = 'hour' | 'day'

export type UsageQuery = {
  orgId: string
  from: string
  to: string
  bin: UsageBin | null
  groupBy: UsageDimension | null
  namespace: string | null
}

export type UsageTotals = {
  runs: number
  input_tokens: number
  output_tokens: number
  reasoning_tokens: number
  cache_read_tokens: number
  cache_write_tokens: number
  cost: string
}

/** A report row: totals, its bucket start (when binned) and the raw group columns (when grouped). */
export type UsageReportRow = UsageTotals & { bucket: string | null; keys: Record<string, string | null> }

type Raw = Omit<UsageTotals, 'cost'> & { cost_units: bigint; bucket: string | null } & Record<string, unknown>

const TOTALS = `sum(runs) AS runs, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
  sum(reasoning_tokens) AS reasoning_tokens, sum(cache_read_tokens) AS cache_read_tokens,
  sum(cache_write_tokens) AS cache_write_tokens, sum(cost_units) AS cost_units`

/** Group columns of the hourly roll-up per dimension ('' in the roll-up stands for null). */
const ROLLUP_GROUPS: Record<Exclude<UsageDimension, 'run'>, string[]> = {
  model: ['model_id', 'model_name'],
  namespace: ['namespace'],
  api_key: ['api_key_id'],
  entry_type: ['entry_type'],
  organisation: [],
}

const IN_NAMESPACE = `(@ns IS NULL OR namespace = @ns OR (namespace >= @ns_from AND namespace < @ns_to))`

function bucketOf(column: string, bin: UsageBin | null): string {
  if (bin === 'hour') return `substr(${column}, 1, 13) || ':00:00.000Z'`
  if (bin === 'day') return `substr(${column}, 1, 10) || 'T00:00:00.000Z'`
  return 'NULL'
}

function rollupSql(bin: UsageBin | null, dimension: Exclude<UsageDimension, 'run'> | null): string {
  const groups = dimension ? ROLLUP_GROUPS[dimension] : []
  const groupBy = ['bucket', ...groups]
  return `SELECT ${bucketOf('hour', bin)} AS bucket, ${[...groups.map((g) => `${g},`)].join(' ')} ${TOTALS}
    FROM usage_hourly WHERE org_id = @org AND hour >= @from AND hour < @to AND ${IN_NAMESPACE}
    ${bin || groups.length ? `GROUP BY ${groupBy.join(', ')} ORDER BY ${groupBy.join(', ')}` : ''}`
}

// Per-run lines come from the entries themselves; a credit is a line of its own.
function runSql(bin: UsageBin | null): string {
  return `SELECT ${bucketOf('occurred_at', bin)} AS bucket, entry_type, run_id, api_key_id, model_name, namespace,
      max(occurred_at) AS last_occurred_at, count(DISTINCT run_id) AS runs,
      sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens, sum(reasoning_tokens) AS reasoning_tokens,
      sum(cache_read_tokens) AS cache_read_tokens, sum(cache_write_tokens) AS cache_write_tokens,
      sum(CASE WHEN entry_type IN ('usage', 'compaction') THEN -amount_units ELSE 0 END) AS cost_units
    FROM balance_entries WHERE org_id = @org AND occurred_at >= @from AND occurred_at < @to AND ${IN_NAMESPACE}
    GROUP BY bucket, entry_type, coalesce(run_id, id) ORDER BY bucket, last_occurred_at DESC`
}

const RUN_KEYS = ['entry_type', 'run_id', 'api_key_id', 'model_name', 'namespace', 'last_occurred_at']

export function createUsageReportStore(db: Db) {
  const prepared = new Map<string, ReturnType<Db['prepare']>>()
  const statement = (key: string, sql: () => string) => {
    let found = prepared.get(key)
    if (!found) {
      found = db.prepare(sql()).safeIntegers(true)
      prepared.set(key, found)
    }
    return found
  }

  return {
    /** Rows and whether they came from the hourly roll-up (every dimension but `run`). */
    report(q: UsageQuery): { rows: UsageReportRow[]; cached: boolean } {
      const range = q.namespace === null ? { from: null, to: null } : descendantRange(q.namespace)
      const params = { org: q.orgId, from: q.from, to: q.to, ns: q.namespace, ns_from: range.from, ns_to: range.to }
      const fromRuns = q.groupBy === 'run'
      const stmt = fromRuns
        ? statement(`run:${q.bin}`, () => runSql(q.bin))
        : statement(`rollup:${q.bin}:${q.groupBy}`, () => rollupSql(q.bin, q.groupBy as Exclude<UsageDimension, 'run'> | null))
      const keys = fromRuns ? RUN_KEYS : q.groupBy ? ROLLUP_GROUPS[q.groupBy as Exclude<UsageDimension, 'run'>] : []
      const rows = (stmt.all(params) as Raw[]).map((raw): UsageReportRow => {
        const nullable = (value: unknown) => (value === '' || value === null || value === undefined ? null : String(value))
        return {
          bucket: raw.bucket,
          keys: Object.fromEntries(keys.map((k) => [k, nullable(raw[k])])),
          runs: Number(raw.runs ?? 0),
          input_tokens: Number(raw.input_tokens ?? 0),
          output_tokens: Number(raw.output_tokens ?? 0),
          reasoning_tokens: Number(raw.reasoning_tokens ?? 0),
          cache_read_tokens: Number(raw.cache_read_tokens ?? 0),
          cache_write_tokens: Number(raw.cache_write_tokens ?? 0),
          cost: unitsToMoney(BigInt(raw.cost_units ?? 0n)),
        }
      })
      return { rows, cached: !fromRuns }
    },
  }
}
