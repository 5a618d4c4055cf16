import { wallClock, type Clock, type Db } from './database.ts'
import type { ReadMostly } from './read-mostly.ts'

export type CatalogueVersionRow = { version: number; effective_at: string; imported_at: string; source: string; body: string }

/** Imported catalogue versions (decision 041): appended, never changed. */
export function createCatalogueVersionStore(db: Db, clock: Clock = wallClock, readMostly?: ReadMostly) {
  const latest = db.prepare<[], { version: number }>('SELECT COALESCE(MAX(version), 0) AS version FROM catalogue_versions')
  const all = db.prepare<[], CatalogueVersionRow>('SELECT * FROM catalogue_versions ORDER BY version')
  const insert = db.prepare<[number, string, string, string, string]>(
    'INSERT INTO catalogue_versions (version, effective_at, imported_at, source, body) VALUES (?, ?, ?, ?, ?)',
  )
  // Checked on every turn, appended to by imports: kept between them (src/store/read-mostly.ts).
  const kept = readMostly?.lookup((_: 'latest') => latest.get()!.version)
  return {
    /** The highest version number; 0 when only the shipped file exists. */
    latestVersion: (): number => (kept ? kept.get('latest') : latest.get()!.version),
    all: (): CatalogueVersionRow[] => all.all(),
    /** Appends the next version; the caller holds the transaction that also announces it. */
    append(v: { effective_at: string; source: string; body: string }): CatalogueVersionRow {
      const row: CatalogueVersionRow = { version: latest.get()!.version + 1, imported_at: clock().toISOString(), ...v }
      insert.run(row.version, row.effective_at, row.imported_at, row.source, row.body)
      kept?.forget()
      return row
    },
  }
}
