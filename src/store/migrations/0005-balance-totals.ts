import type { Database } from 'better-sqlite3'

/**
 * Each organisation's balance, kept in the same transaction as every entry: admission reads it on
 * every turn, and a sum over all entries grows with the ledger.
 */
export function up(db: Database): void {
  db.exec(`
    CREATE TABLE org_balances (
      org_id TEXT PRIMARY KEY REFERENCES organisations(id) ON DELETE CASCADE,
      amount_units INTEGER NOT NULL
    ) STRICT, WITHOUT ROWID;
    INSERT INTO org_balances SELECT org_id, sum(amount_units) FROM balance_entries GROUP BY org_id;
  `)
}
