import { randomUUID } from 'node:crypto'
import { wallClock, type Clock, type Db } from './database.ts'

export const UPDATE_KINDS = ['release', 'notice', 'maintenance'] as const
export type UpdateKind = (typeof UPDATE_KINDS)[number]

export type PlatformUpdate = {
  id: string
  kind: UpdateKind
  title: string
  body: string
  important: boolean
  published_at: string
  version: string | null
}
type UpdateRow = Omit<PlatformUpdate, 'important'> & { important: number }

export function createPlatformUpdateStore(db: Db, clock: Clock = wallClock) {
  const insert = db.prepare<[string, string, string, string, number, string | null, string]>(
    'INSERT INTO platform_updates (id, kind, title, body, important, version, published_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
  )
  const newestFirst = db.prepare<[number], UpdateRow>(
    'SELECT * FROM platform_updates ORDER BY published_at DESC, id LIMIT ?',
  )
  const toUpdate = (row: UpdateRow): PlatformUpdate => ({ ...row, important: row.important === 1 })

  return {
    publish(update: Omit<PlatformUpdate, 'id' | 'published_at'>): PlatformUpdate {
      const row: PlatformUpdate = { id: randomUUID(), published_at: clock().toISOString(), ...update }
      insert.run(row.id, row.kind, row.title, row.body, row.important ? 1 : 0, row.version, row.published_at)
      return row
    },
    list: (limit = 100) => newestFirst.all(limit).map(toUpdate),
  }
}
