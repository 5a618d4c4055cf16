import { randomUUID } from 'node:crypto'
import { wallClock, type Clock, type Db } from './database.ts'
import type { ReadMostly } from './read-mostly.ts'

export type Organisation = {
  id: string
  name: string
  slug: string
  markup_percent: string | null
  created_at: string
}

export function createOrganisationStore(db: Db, clock: Clock = wallClock, readMostly?: ReadMostly) {
  const insert = db.prepare<[string, string, string, string]>(
    'INSERT INTO organisations (id, name, slug, created_at) VALUES (?, ?, ?, ?)',
  )
  const byId = db.prepare<[string], Organisation>('SELECT * FROM organisations WHERE id = ?')
  const bySlug = db.prepare<[string], Organisation>('SELECT * FROM organisations WHERE slug = ?')
  const setMarkup = db.prepare<[string, string]>('UPDATE organisations SET markup_percent = ? WHERE id = ?')
  const count = db.prepare<[], { n: number }>('SELECT count(*) AS n FROM organisations')
  const all = db.prepare<[], Organisation>('SELECT * FROM organisations ORDER BY created_at, rowid')
  // Read on every turn (its markup): kept between turns (src/store/read-mostly.ts).
  const kept = readMostly?.lookup((id: string) => byId.get(id))

  return {
    create(name: string, slug: string): Organisation {
      const id = randomUUID()
      insert.run(id, name, slug, clock().toISOString())
      kept?.forget()
      return byId.get(id)!
    },
    get: (id: string) => (kept ? kept.get(id) : byId.get(id)),
    getBySlug: (slug: string) => bySlug.get(slug),
    setMarkup(id: string, percent: string): Organisation | undefined {
      setMarkup.run(percent, id)
      kept?.forget()
      return byId.get(id)
    },
    count: () => count.get()!.n,
    list: () => all.all(),
  }
}
