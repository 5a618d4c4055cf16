import { unitsToMoney } from '../domain/money.ts'
import type { BalanceEntryType } from './balance.ts'
import type { Db } from './database.ts'

/** One ledger entry with the balance it left behind; credits are positive, charges negative. */
export type BalanceHistoryEntry = {
  id: string
  entry_type: BalanceEntryType
  amount: string
  balance_after: string
  occurred_at: string
  run_id: string | null
  model_name: string | null
}

type PageRow = {
  seq: bigint
  id: string
  entry_type: BalanceEntryType
  amount_units: bigint
  occurred_at: string
  run_id: string | null
  model_name: string | null
}

/**
 * The ledger of an organisation's balance, newest first. The ledger is ordered by occurred_at,
 * then by insertion (rowid); an entry's balance_after is the sum of every entry up to it in that
 * order. Rather than summing the whole ledger for each page, it is worked back from the running
 * total (org_balances) minus the entries newer than the page: both reads use an index.
 */
export function createBalanceHistoryStore(db: Db) {
  const page = db
    .prepare<{ org: string; from: string; to: string; limit: number }, PageRow>(
      `SELECT rowid AS seq, id, entry_type, amount_units, occurred_at, run_id, model_name
       FROM balance_entries WHERE org_id = @org AND occurred_at >= @from AND occurred_at < @to
       ORDER BY occurred_at DESC, rowid DESC LIMIT @limit`,
    )
    .safeIntegers(true)
  // Written as a range on (org_id, occurred_at) so balance_entries_org_time serves it.
  const newerThan = db
    .prepare<{ org: string; at: string; seq: bigint }, { units: bigint }>(
      `SELECT coalesce(sum(amount_units), 0) AS units FROM balance_entries
       WHERE org_id = @org AND occurred_at >= @at AND NOT (occurred_at = @at AND rowid <= @seq)`,
    )
    .safeIntegers(true)
  const total = db
    .prepare<[string], { units: bigint }>('SELECT coalesce((SELECT amount_units FROM org_balances WHERE org_id = ?), 0) AS units')
    .safeIntegers(true)

  // One read transaction: an entry written between the reads would otherwise shift every balance.
  const read = db.transaction((orgId: string, range: { from: string; to: string }, limit: number): BalanceHistoryEntry[] => {
    const rows = page.all({ org: orgId, ...range, limit })
    const newest = rows[0]
    if (!newest) return []
    let after = total.get(orgId)!.units - newerThan.get({ org: orgId, at: newest.occurred_at, seq: newest.seq })!.units
    return rows.map((row) => {
      const entry: BalanceHistoryEntry = {
        id: row.id,
        entry_type: row.entry_type,
        amount: unitsToMoney(row.amount_units),
        balance_after: unitsToMoney(after),
        occurred_at: row.occurred_at,
        run_id: row.run_id,
        model_name: row.model_name,
      }
      after -= row.amount_units
      return entry
    })
  })

  return {
    /** At most `limit` entries with from <= occurred_at < to, newest first. */
    history: (orgId: string, range: { from: string; to: string }, limit: number) => read(orgId, range, limit),
  }
}
