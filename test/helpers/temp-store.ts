import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase, type Db } from '../../src/store/database.ts'
import { createStore, type Store } from '../../src/store/index.ts'

/** A migrated store over a real SQLite file in a fresh temporary directory. */
export function openTempStore(): { db: Db; store: Store; file: string; dir: string; close: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'parley-store-'))
  const file = join(dir, 'parley.db')
  const db = openDatabase(file)
  return {
    db,
    store: createStore(db),
    file,
    dir,
    close() {
      if (db.open) db.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

export type QueryPlanRow = { id: number; parent: number; detail: string }

export function queryPlan(db: Db, sql: string, ...params: unknown[]): QueryPlanRow[] {
  return db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as QueryPlanRow[]
}
