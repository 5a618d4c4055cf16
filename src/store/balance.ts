import { randomUUID } from 'node:crypto'
import { moneyToUnits, unitsToMoney } from '../domain/money.ts'
import type { Db } from './database.ts'
import { nowIso } from './database.ts'

export const BALANCE_ENTRY_TYPES = ['usage', 'compaction', 'topup', 'refund', 'adjustment', 'promotional_credit'] as const
export type BalanceEntryType = (typeof BALANCE_ENTRY_TYPES)[number]
export const CURRENCY = 'USD'

export type BalanceEntry = {
  id: string
  org_id: string
  entry_type: BalanceEntryType
  amount: string
  currency: string
  occurred_at: string
}

export function createBalanceStore(db: Db) {
  const insert = db.prepare<[string, string, string, bigint, string, string]>(
    `INSERT INTO balance_entries (id, org_id, entry_type, amount_units, currency, occurred_at)
     VALUES (?, ?, ?, ?, ?, ?)`,
  )
  // Sums stay exact past 2^53 units only as BigInt.
  const sum = db
    .prepare<[string], { total: bigint }>('SELECT coalesce(sum(amount_units), 0) AS total FROM balance_entries WHERE org_id = ?')
    .safeIntegers(true)

  const add = db.transaction((orgId: string, type: BalanceEntryType, amount: string) => {
    const entry: BalanceEntry = {
      id: randomUUID(),
      org_id: orgId,
      entry_type: type,
      amount: unitsToMoney(moneyToUnits(amount)),
      currency: CURRENCY,
      occurred_at: nowIso(),
    }
    insert.run(entry.id, orgId, type, moneyToUnits(amount), CURRENCY, entry.occurred_at)
    return { entry, balance: unitsToMoney(sum.get(orgId)!.total) }
  })

  return {
    /** Writes an entry and reads the new balance in one immediate transaction, so concurrent writers serialise. */
    add: (orgId: string, type: BalanceEntryType, amount: string) => add.immediate(orgId, type, amount),
    balanceOf: (orgId: string) => unitsToMoney(sum.get(orgId)!.total),
  }
}
