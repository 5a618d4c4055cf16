import { randomUUID } from 'node:crypto'
import type { PartBody, PartKind } from '../domain/parts.ts'
import type { Db } from './database.ts'
import { nowIso } from './database.ts'

export type PartRow = {
  ordinal: number
  id: string
  chat_id: string
  run_id: string | null
  kind: PartKind
  body: string
  user_metadata: string
  created_at: string
}

export type NewPart = { body: PartBody; userMetadata?: unknown; runId?: string | null }

export type PartPageQuery = { chatId: string; beforeOrdinal?: number; afterOrdinal?: number; limit: number }
/** Rows oldest first; `hasMore` is about the direction paged (older unless paging forward). */
export type PartPage = { rows: PartRow[]; hasMore: boolean }

// Both are range scans of parts_chat_ordinal (test/store/parts.test.ts checks the plan).
export const PARTS_OLDER_SQL = 'SELECT * FROM parts WHERE chat_id = ? AND ordinal < ? ORDER BY ordinal DESC LIMIT ?'
export const PARTS_NEWER_SQL = 'SELECT * FROM parts WHERE chat_id = ? AND ordinal > ? ORDER BY ordinal ASC LIMIT ?'

export function createPartStore(db: Db) {
  const insert = db.prepare<[string, string, string | null, string, string, string, string], never>(
    `INSERT INTO parts (id, chat_id, run_id, kind, body, user_metadata, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING *`,
  )
  const bumpChat = db.prepare<[number, string, string]>(
    'UPDATE chats SET part_count = part_count + ?, updated_at = ? WHERE id = ?',
  )
  const older = db.prepare<[string, number, number], PartRow>(PARTS_OLDER_SQL)
  const newer = db.prepare<[string, number, number], PartRow>(PARTS_NEWER_SQL)

  const append = db.transaction((chatId: string, parts: NewPart[]): PartRow[] => {
    const now = nowIso()
    const rows = parts.map(
      (part) =>
        insert.get(
          randomUUID(),
          chatId,
          part.runId ?? null,
          part.body.type,
          JSON.stringify(part.body),
          JSON.stringify(part.userMetadata ?? {}),
          now,
        ) as unknown as PartRow,
    )
    bumpChat.run(parts.length, now, chatId)
    return rows
  })

  return {
    /** Appends in one transaction (a savepoint when the caller already holds one). */
    append: (chatId: string, parts: NewPart[]) => append(chatId, parts),
    page(query: PartPageQuery): PartPage {
      const forward = query.afterOrdinal !== undefined
      const rows = forward
        ? newer.all(query.chatId, query.afterOrdinal!, query.limit + 1)
        : older.all(query.chatId, query.beforeOrdinal ?? Number.MAX_SAFE_INTEGER, query.limit + 1)
      const hasMore = rows.length > query.limit
      if (hasMore) rows.pop()
      if (!forward) rows.reverse()
      return { rows, hasMore }
    },
  }
}
