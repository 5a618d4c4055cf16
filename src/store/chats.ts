import { descendantRange } from '../domain/namespace.ts'
import { wallClock, type Clock, type Db } from './database.ts'
import { newId } from '../domain/new-id.ts'

export type ChatRow = {
  seq: number
  id: string
  org_id: string
  namespace: string | null
  title: string | null
  description: string | null
  user_metadata: string
  part_count: number
  created_at: string
  updated_at: string
}

export type NewChat = {
  orgId: string
  namespace: string | null
  title: string | null
  description: string | null
  userMetadata: unknown
  /** The id, when it was chosen before the row is written (a chat made by its first turn's admission, decision 055). */
  id?: string
}

export type ChatListQuery = {
  orgId: string
  namespace?: string
  /** Page older than this chat. */
  afterId?: string
  /** Page newer than this chat. */
  beforeId?: string
  limit: number
}

/** Rows newest first; `hasMore` is about the direction paged. `null` when a cursor names no chat of the org. */
export type ChatListPage = { rows: ChatRow[]; hasMore: boolean } | null

// Namespace filter: the scope itself or its strict descendants (an index range, see descendantRange).
const IN_SCOPE = `(@ns IS NULL OR namespace = @ns OR (namespace >= @from AND namespace < @to))`
export const CHAT_LIST_OLDER_SQL = `SELECT * FROM chats WHERE org_id = @org AND seq < @cursor AND ${IN_SCOPE} ORDER BY seq DESC LIMIT @limit`
export const CHAT_LIST_NEWER_SQL = `SELECT * FROM chats WHERE org_id = @org AND seq > @cursor AND ${IN_SCOPE} ORDER BY seq ASC LIMIT @limit`

export function createChatStore(db: Db, clock: Clock = wallClock) {
  const insert = db.prepare(
    `INSERT INTO chats (id, org_id, namespace, title, description, user_metadata, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
  )
  const byId = db.prepare<[string, string], ChatRow>('SELECT * FROM chats WHERE id = ? AND org_id = ?')
  const seqOf = db.prepare<[string, string], { seq: number }>('SELECT seq FROM chats WHERE id = ? AND org_id = ?')
  const remove = db.prepare<[string, string]>('DELETE FROM chats WHERE id = ? AND org_id = ?')
  const removeById = db.prepare<[string]>('DELETE FROM chats WHERE id = ?')
  const present = db.prepare<[string], { one: number }>('SELECT 1 AS one FROM chats WHERE id = ?')
  const setMetadata = db.prepare<[string, string, string, string]>('UPDATE chats SET user_metadata = ?, updated_at = ? WHERE id = ? AND org_id = ?')
  type ListParams = { org: string; cursor: number; ns: string | null; from: string | null; to: string | null; limit: number }
  const older = db.prepare<[ListParams], ChatRow>(CHAT_LIST_OLDER_SQL)
  const newer = db.prepare<[ListParams], ChatRow>(CHAT_LIST_NEWER_SQL)
  const namespaces = db.prepare<[string], { namespace: string }>(
    'SELECT DISTINCT namespace FROM chats WHERE org_id = ? AND namespace IS NOT NULL ORDER BY namespace',
  )

  return {
    create(chat: NewChat): ChatRow {
      const id = chat.id ?? newId()
      const now = clock().toISOString()
      insert.run(id, chat.orgId, chat.namespace, chat.title, chat.description, JSON.stringify(chat.userMetadata), now, now)
      return byId.get(id, chat.orgId)!
    },
    /** Scoped by organisation in the query itself: another org's chat is simply not found. */
    get: (orgId: string, id: string) => byId.get(id, orgId),
    /** A chat's labels, not its ledger (the OpenAI facade's conversation update, decision 055); false when no such chat. */
    setUserMetadata: (orgId: string, id: string, metadata: unknown) => setMetadata.run(JSON.stringify(metadata), clock().toISOString(), id, orgId).changes > 0,
    delete: (orgId: string, id: string) => remove.run(id, orgId).changes > 0,
    /**
     * The chat and its ledger (parts, their media rows, summaries) by id, for its actor once the
     * caller's organisation was checked (decision 020). Its runs and balance entries stay.
     */
    deleteById: (id: string) => removeById.run(id).changes > 0,
    /** Whether the chat is there, whoever's it is (the sweep's question: a run of a deleted chat has no actor to settle it). */
    exists: (id: string) => present.get(id) !== undefined,
    list(query: ChatListQuery): ChatListPage {
      const cursorId = query.afterId ?? query.beforeId
      let cursor = Number.MAX_SAFE_INTEGER
      if (cursorId !== undefined) {
        const found = seqOf.get(cursorId, query.orgId)
        if (!found) return null
        cursor = found.seq
      }
      const ns = query.namespace ?? null
      const range = ns === null ? { from: null, to: null } : descendantRange(ns)
      const params = { org: query.orgId, cursor, ns, from: range.from, to: range.to, limit: query.limit + 1 }
      const pagingNewer = query.beforeId !== undefined
      const rows = pagingNewer ? newer.all(params) : older.all(params)
      const hasMore = rows.length > query.limit
      if (hasMore) rows.pop()
      if (pagingNewer) rows.reverse()
      return { rows, hasMore }
    },
    namespaces: (orgId: string) => namespaces.all(orgId).map((r) => r.namespace),
  }
}
