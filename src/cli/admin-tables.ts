import type { UsageGroup } from '../http/schemas/usage.ts'
import type { usageReportBody } from '../http/usage-report-body.ts'
import type { ApiKeyListing } from '../store/api-keys.ts'
import type { BalanceHistoryEntry } from '../store/balance-history.ts'
import type { UsageDimension } from '../store/usage-report.ts'
import { renderTable, type Column } from './render-table.ts'

/** What `runs` prints per run (and `--json` as is). */
export type RunLine = {
  id: string
  status: string
  origin: string
  model: string
  cost: string | null
  chat_id: string
  namespace: string | null
  api_key_id: string | null
  created_at: string
  completed_at: string | null
  error: string | null
}

export type UsageReportBody = ReturnType<typeof usageReportBody>
type UsageLine = UsageReportBody['rows'][number]

export function keyTable(keys: readonly ApiKeyListing[]): string {
  return renderTable(
    keys,
    [
      { heading: 'ID', cell: (k) => k.id },
      { heading: 'NAME', cell: (k) => k.name },
      { heading: 'CREATED', cell: (k) => k.created_at },
      { heading: 'LAST RUN', cell: (k) => k.last_run_at },
      { heading: 'STATUS', cell: (k) => (k.revoked_at === null ? 'active' : `revoked ${k.revoked_at}`) },
    ],
    'no API keys',
  )
}

export function runTable(runs: readonly RunLine[]): string {
  return renderTable(
    runs,
    [
      { heading: 'ID', cell: (r) => r.id },
      { heading: 'STATUS', cell: (r) => r.status },
      // Compaction runs are billed though nobody asked for them; the column says which is which.
      { heading: 'ORIGIN', cell: (r) => r.origin },
      { heading: 'MODEL', cell: (r) => r.model },
      // Null while running or not yet settled.
      { heading: 'COST', cell: (r) => r.cost, right: true },
      { heading: 'CHAT', cell: (r) => r.chat_id },
      { heading: 'CREATED', cell: (r) => r.created_at },
    ],
    'no runs',
  )
}

/** The columns naming a group of the usage report, per dimension. */
function groupColumns(dimension: UsageDimension): Column<UsageLine>[] {
  const group = <D extends UsageGroup['dimension']>(row: UsageLine) => row.group as Extract<UsageGroup, { dimension: D }>
  switch (dimension) {
    case 'model':
      // Only a credit has no model (docs/guide/billing-and-usage.md): say so rather than leave a gap.
      return [{ heading: 'MODEL', cell: (r) => group<'model'>(r).model_name ?? '(credits)' }]
    case 'namespace':
      return [{ heading: 'NAMESPACE', cell: (r) => group<'namespace'>(r).namespace }]
    case 'api_key':
      return [{ heading: 'API KEY', cell: (r) => group<'api_key'>(r).api_key_id }]
    case 'entry_type':
      return [{ heading: 'TYPE', cell: (r) => group<'entry_type'>(r).entry_type }]
    case 'organisation':
      return [{ heading: 'ORGANISATION', cell: (r) => group<'organisation'>(r).slug }]
    case 'run':
      return [
        { heading: 'TYPE', cell: (r) => group<'run'>(r).entry_type },
        { heading: 'RUN', cell: (r) => group<'run'>(r).run_id },
        { heading: 'MODEL', cell: (r) => group<'run'>(r).model_name },
        { heading: 'LAST', cell: (r) => group<'run'>(r).last_occurred_at },
      ]
    default: {
      const unknown: never = dimension
      throw new Error(`unknown usage dimension ${String(unknown)}`)
    }
  }
}

export function usageTable(report: UsageReportBody): string {
  const columns: Column<UsageLine>[] = [
    ...(report.bin ? [{ heading: 'BUCKET', cell: (r: UsageLine) => r.bucket ?? null }] : []),
    ...(report.group_by ? groupColumns(report.group_by) : []),
    { heading: 'RUNS', cell: (r) => r.runs, right: true },
    { heading: 'INPUT', cell: (r) => r.input_tokens, right: true },
    { heading: 'OUTPUT', cell: (r) => r.output_tokens, right: true },
    { heading: 'REASONING', cell: (r) => r.reasoning_tokens, right: true },
    { heading: 'CACHE READ', cell: (r) => r.cache_read_tokens, right: true },
    { heading: 'CACHE WRITE', cell: (r) => r.cache_write_tokens, right: true },
    { heading: 'COST', cell: (r) => r.cost, right: true },
  ]
  const scope = report.namespace ? ` in namespace ${report.namespace}` : ''
  return `usage from ${report.window.from} to ${report.window.to}${scope}\n${renderTable(report.rows, columns, 'no usage')}`
}

export function balanceTable(history: { balance: string; data: readonly BalanceHistoryEntry[] }): string {
  const table = renderTable(
    history.data,
    [
      { heading: 'OCCURRED', cell: (e) => e.occurred_at },
      { heading: 'TYPE', cell: (e) => e.entry_type },
      { heading: 'AMOUNT', cell: (e) => e.amount, right: true },
      { heading: 'BALANCE AFTER', cell: (e) => e.balance_after, right: true },
      { heading: 'RUN', cell: (e) => e.run_id },
      { heading: 'MODEL', cell: (e) => e.model_name },
    ],
    'no balance entries',
  )
  return `balance now: ${history.balance} USD\n${table}`
}
