import { moneyToUnits, unitsToMoney } from '../domain/money.ts'
import type { Usage } from '../domain/pricing/usage.ts'
import { wallClock, type Clock, type Db } from './database.ts'
import { newId } from '../domain/new-id.ts'

export const BALANCE_ENTRY_TYPES = ['usage', 'compaction', 'topup', 'refund', 'adjustment', 'promotional_credit'] as const
export type BalanceEntryType = (typeof BALANCE_ENTRY_TYPES)[number]
export type ChargeType = Extract<BalanceEntryType, 'usage' | 'compaction'>
export type CreditType = Exclude<BalanceEntryType, ChargeType>
export const CURRENCY = 'USD'

export type BalanceEntry = {
  id: string
  org_id: string
  entry_type: BalanceEntryType
  amount: string
  currency: string
  occurred_at: string
}

/** One run's model-call spend; `cost` is what the customer pays, as a positive decimal. */
export type RunCharge = {
  orgId: string
  type: ChargeType
  runId: string
  apiKeyId: string | null
  modelId: string
  modelName: string
  namespace: string | null
  usage: Usage
  cost: string
  occurredAt?: string
}

type EntryRow = {
  id: string
  org_id: string
  entry_type: BalanceEntryType
  amount_units: bigint
  occurred_at: string
  run_id: string | null
  api_key_id: string | null
  model_id: string | null
  model_name: string | null
  namespace: string | null
} & Usage

const hourOf = (iso: string) => `${iso.slice(0, 13)}:00:00.000Z`

export function createBalanceStore(db: Db, clock: Clock = wallClock) {
  const insert = db.prepare<[EntryRow]>(
    `INSERT INTO balance_entries (id, org_id, entry_type, amount_units, currency, occurred_at, run_id, api_key_id,
       model_id, model_name, namespace, input_tokens, output_tokens, reasoning_tokens, cache_read_tokens, cache_write_tokens)
     VALUES (@id, @org_id, @entry_type, @amount_units, '${CURRENCY}', @occurred_at, @run_id, @api_key_id,
       @model_id, @model_name, @namespace, @input_tokens, @output_tokens, @reasoning_tokens, @cache_read_tokens, @cache_write_tokens)`,
  )
  const rollUp = db.prepare(
    `INSERT INTO usage_hourly VALUES (@org_id, @hour, @entry_type, @model_id, @model_name, @namespace, @api_key_id,
       1, @runs, @input_tokens, @output_tokens, @reasoning_tokens, @cache_read_tokens, @cache_write_tokens, @cost_units)
     ON CONFLICT (org_id, hour, entry_type, model_id, model_name, namespace, api_key_id) DO UPDATE SET
       entries = entries + 1, runs = runs + excluded.runs,
       input_tokens = input_tokens + excluded.input_tokens, output_tokens = output_tokens + excluded.output_tokens,
       reasoning_tokens = reasoning_tokens + excluded.reasoning_tokens,
       cache_read_tokens = cache_read_tokens + excluded.cache_read_tokens,
       cache_write_tokens = cache_write_tokens + excluded.cache_write_tokens,
       cost_units = cost_units + excluded.cost_units`,
  )
  const addToTotal = db.prepare<[string, bigint]>(
    `INSERT INTO org_balances (org_id, amount_units) VALUES (?, ?)
     ON CONFLICT (org_id) DO UPDATE SET amount_units = amount_units + excluded.amount_units`,
  )
  // Totals stay exact past 2^53 units only as BigInt.
  const sum = db
    .prepare<[string], { total: bigint }>('SELECT coalesce((SELECT amount_units FROM org_balances WHERE org_id = ?), 0) AS total')
    .safeIntegers(true)
  const chargeOfRun = db.prepare<[string], { id: string }>('SELECT id FROM balance_entries WHERE run_id = ?')

  const write = (row: EntryRow) => {
    insert.run(row)
    addToTotal.run(row.org_id, row.amount_units)
    const isCharge = row.entry_type === 'usage' || row.entry_type === 'compaction'
    rollUp.run({
      ...row,
      hour: hourOf(row.occurred_at),
      model_id: row.model_id ?? '',
      model_name: row.model_name ?? '',
      namespace: row.namespace ?? '',
      api_key_id: row.api_key_id ?? '',
      runs: row.run_id === null ? 0 : 1,
      cost_units: isCharge ? -row.amount_units : 0n,
    })
    const entry: BalanceEntry = {
      id: row.id,
      org_id: row.org_id,
      entry_type: row.entry_type,
      amount: unitsToMoney(row.amount_units),
      currency: CURRENCY,
      occurred_at: row.occurred_at,
    }
    return { entry, balance: unitsToMoney(sum.get(row.org_id)!.total) }
  }

  const credit = db.transaction((orgId: string, type: CreditType, amount: string, occurredAt: string) =>
    write({
      id: newId(),
      org_id: orgId,
      entry_type: type,
      amount_units: moneyToUnits(amount),
      occurred_at: occurredAt,
      run_id: null,
      api_key_id: null,
      model_id: null,
      model_name: null,
      namespace: null,
      input_tokens: 0,
      output_tokens: 0,
      reasoning_tokens: 0,
      cache_read_tokens: 0,
      cache_write_tokens: 0,
    }),
  )

  const chargeRun = (c: RunCharge) => {
    // A run is billed at most once: a second settlement of the same run changes nothing.
    if (chargeOfRun.get(c.runId)) return null
    return write({
      id: newId(),
      org_id: c.orgId,
      entry_type: c.type,
      amount_units: -moneyToUnits(c.cost),
      occurred_at: c.occurredAt ?? clock().toISOString(),
      run_id: c.runId,
      api_key_id: c.apiKeyId,
      model_id: c.modelId,
      model_name: c.modelName,
      namespace: c.namespace,
      ...c.usage,
    })
  }
  const charge = db.transaction(chargeRun)

  return {
    /** A credit or correction; writes and reads the new balance in one immediate transaction. */
    add: (orgId: string, type: CreditType, amount: string, occurredAt = clock().toISOString()) =>
      credit.immediate(orgId, type, amount, occurredAt),
    /**
     * Debits one run's spend; null when the run was already charged. Joins the caller's transaction
     * if any (its rollback undoes a charge that failed half-way).
     */
    charge: (c: RunCharge) => (db.inTransaction ? chargeRun(c) : charge.immediate(c)),
    balanceOf: (orgId: string) => unitsToMoney(sum.get(orgId)!.total),
  }
}
