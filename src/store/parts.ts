import { createHash } from 'node:crypto'
import type { PartBody, PartKind } from '../domain/parts.ts'
import type { DecodedMedia } from '../domain/turns/submission.ts'
import { wallClock, type Clock, type Db } from './database.ts'
import { newId } from '../domain/new-id.ts'

export type PartRow = {
  ordinal: number
  id: string
  chat_id: string
  run_id: string | null
  kind: PartKind
  body: string
  user_metadata: string
  created_at: string
  tokens: number
  /** The part's place in its run's answer (migration 0018); null when it is no run's answer. */
  answer_index: number | null
}

/** An attachment to store: the decoded submission, as the domain describes it. */
export type NewMedia = DecodedMedia

export type MediaRow = {
  media_id: string
  part_ordinal: number
  position: number
  sha256: string
  mime: string
  byte_len: number
  filename: string | null
  width: number | null
  height: number | null
  page_count: number | null
  bytes?: Buffer
}

/** What packing reads of every part of a chat it has not seen: no body (read when needed). */
export type PackingMetaRow = Pick<PartRow, 'ordinal' | 'run_id' | 'kind' | 'tokens'> & { body_length: number; tool_use_id: string | null; has_media: 0 | 1 }

export type NewPart = { body: PartBody; userMetadata?: unknown; runId?: string | null; tokens?: number; media?: NewMedia[] }

export type PartPageQuery = { chatId: string; beforeOrdinal?: number; afterOrdinal?: number; limit: number }
/** Rows oldest first; `hasMore` is about the direction paged (older unless paging forward). */
export type PartPage = { rows: PartRow[]; hasMore: boolean }

// Both are range scans of parts_chat_ordinal (test/store/parts.test.ts checks the plan).
export const PARTS_OLDER_SQL = 'SELECT * FROM parts WHERE chat_id = ? AND ordinal < ? ORDER BY ordinal DESC LIMIT ?'
export const PARTS_NEWER_SQL = 'SELECT * FROM parts WHERE chat_id = ? AND ordinal > ? ORDER BY ordinal ASC LIMIT ?'

export function createPartStore(db: Db, clock: Clock = wallClock) {
  // A run's answer parts are written one by one while it streams; an erasure waits for the chat to be
  // at rest, so the place after the run's latest answer part is the new one's.
  const insert = db.prepare<{ id: string; chat: string; run: string | null; kind: string; body: string; metadata: string; at: string; tokens: number }, PartRow>(
    `INSERT INTO parts (id, chat_id, run_id, kind, body, user_metadata, created_at, tokens, answer_index)
     VALUES (@id, @chat, @run, @kind, @body, @metadata, @at, @tokens,
       CASE WHEN @run IS NOT NULL AND @kind IN ('message', 'reasoning', 'tool_call')
         THEN (SELECT coalesce(max(answer_index) + 1, 0) FROM parts WHERE run_id = @run AND chat_id = @chat) END)
     RETURNING *`,
  )
  const insertBlob = db.prepare<[string, Buffer]>('INSERT OR IGNORE INTO media_blobs (sha256, bytes) VALUES (?, ?)')
  const insertMedia = db.prepare(
    `INSERT INTO part_media (media_id, part_ordinal, position, sha256, mime, byte_len, filename, width, height, page_count)
     VALUES (@media_id, @part_ordinal, @position, @sha256, @mime, @byte_len, @filename, @width, @height, @page_count)`,
  )
  const bumpChat = db.prepare<[number, string, string]>(
    'UPDATE chats SET part_count = part_count + ?, updated_at = ? WHERE id = ?',
  )
  const older = db.prepare<[string, number, number], PartRow>(PARTS_OLDER_SQL)
  const newer = db.prepare<[string, number, number], PartRow>(PARTS_NEWER_SQL)
  const mediaStubs = db.prepare<[string], MediaRow>(
    `SELECT * FROM part_media WHERE part_ordinal IN (SELECT value FROM json_each(?)) ORDER BY part_ordinal, position`,
  )
  const mediaFull = db.prepare<[string], MediaRow>(
    `SELECT m.*, b.bytes FROM part_media m JOIN media_blobs b ON b.sha256 = m.sha256
     WHERE m.part_ordinal IN (SELECT value FROM json_each(?)) ORDER BY m.part_ordinal, m.position`,
  )
  const bodiesBetween = db.prepare<[string, number, number], { ordinal: number; body: string }>(
    'SELECT ordinal, body FROM parts WHERE chat_id = ? AND ordinal BETWEEN ? AND ? ORDER BY ordinal',
  )
  const mediaBytes = db.prepare<[string], { media_id: string; bytes: Buffer }>(
    `SELECT m.media_id, b.bytes FROM part_media m JOIN media_blobs b ON b.sha256 = m.sha256
     WHERE m.media_id IN (SELECT value FROM json_each(?))`,
  )
  const blob = db.prepare<[string], { bytes: Buffer }>('SELECT bytes FROM media_blobs WHERE sha256 = ?')
  const ofRun = db.prepare<[string], PartRow>('SELECT * FROM parts WHERE run_id = ? ORDER BY ordinal')
  // The facade's lookups (decision 055): a call by its id, newest first (a call id is the vendor's, unique in practice); a part by id.
  const toolCallById = db.prepare<[string, string], PartRow>(
    `SELECT * FROM parts WHERE chat_id = ? AND kind = 'tool_call' AND json_extract(body, '$.tool_use_id') = ? ORDER BY ordinal DESC LIMIT 1`,
  )
  const exchange = db.prepare<[string, string], PartRow>(
    `SELECT * FROM parts WHERE chat_id = ? AND kind IN ('tool_call', 'tool_result') AND json_extract(body, '$.tool_use_id') = ? ORDER BY ordinal`,
  )
  const answerAt = db.prepare<[string, string, number], PartRow>('SELECT * FROM parts WHERE run_id = ? AND chat_id = ? AND answer_index = ?')
  const inChatById = db.prepare<[string, string], PartRow>('SELECT * FROM parts WHERE id = ? AND chat_id = ?')
  const between = db.prepare<[string, number, number], PartRow>('SELECT * FROM parts WHERE chat_id = ? AND ordinal BETWEEN ? AND ? ORDER BY ordinal')
  // A fork's copied parts keep their run ids (docs/decisions/037-fork.md): a chat reads only its own.
  const ofRunInChat = db.prepare<[string, string], PartRow>('SELECT * FROM parts WHERE run_id = ? AND chat_id = ? ORDER BY ordinal')
  const packingMeta = db.prepare<[string, number], PackingMetaRow>(
    `SELECT p.ordinal, p.run_id, p.kind, p.tokens, length(p.body) AS body_length,
       CASE WHEN p.kind IN ('tool_call', 'tool_result') THEN json_extract(p.body, '$.tool_use_id') END AS tool_use_id,
       EXISTS (SELECT 1 FROM part_media m WHERE m.part_ordinal = p.ordinal) AS has_media
     FROM parts p WHERE p.chat_id = ? AND p.ordinal > ? ORDER BY p.ordinal`,
  )
  // has_media spares a second query for the attachments of parts that have none (most of them).
  const after = db.prepare<[string, number], PartRow & { has_media: 0 | 1 }>(
    `SELECT p.*, EXISTS (SELECT 1 FROM part_media m WHERE m.part_ordinal = p.ordinal) AS has_media
     FROM parts p WHERE p.chat_id = ? AND p.ordinal > ? ORDER BY p.ordinal`,
  )

  const appendRows = (chatId: string, parts: NewPart[]): PartRow[] => {
    const now = clock().toISOString()
    const rows = parts.map((part) => {
      const row = insert.get({
        id: newId(),
        chat: chatId,
        run: part.runId ?? null,
        kind: part.body.type,
        body: JSON.stringify(part.body),
        metadata: JSON.stringify(part.userMetadata ?? {}),
        at: now,
        tokens: part.tokens ?? 0,
      })!
      part.media?.forEach((media, position) => {
        const sha256 = media.sha256 ?? createHash('sha256').update(media.bytes).digest('hex')
        insertBlob.run(sha256, media.bytes)
        insertMedia.run({
          media_id: newId(),
          part_ordinal: row.ordinal,
          position,
          sha256,
          mime: media.mime,
          byte_len: media.bytes.length,
          filename: media.filename,
          width: media.width,
          height: media.height,
          page_count: media.page_count,
        })
      })
      return row
    })
    bumpChat.run(parts.length, now, chatId)
    return rows
  }
  const append = db.transaction(appendRows)

  const groupMedia = (rows: MediaRow[]) => {
    const byPart = new Map<number, MediaRow[]>()
    for (const row of rows) byPart.set(row.part_ordinal, [...(byPart.get(row.part_ordinal) ?? []), row])
    return byPart
  }

  return {
    /** Appends in one transaction, or in the caller's when it holds one (its rollback undoes a failed append). */
    append: (chatId: string, parts: NewPart[]) => (db.inTransaction ? appendRows(chatId, parts) : append(chatId, parts)),
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
    /** Attachments of the given parts, by part ordinal; with their bytes when `withBytes`. */
    mediaOf(ordinals: number[], withBytes: boolean): Map<number, MediaRow[]> {
      if (ordinals.length === 0) return new Map()
      return groupMedia((withBytes ? mediaFull : mediaStubs).all(JSON.stringify(ordinals)))
    },
    ofRun: (runId: string) => ofRun.all(runId),
    toolCallOf: (chatId: string, toolUseId: string) => toolCallById.get(chatId, toolUseId),
    inChat: (chatId: string, partId: string) => inChatById.get(partId, chatId),
    /** The run's answer part at this place in its answer, in this chat; undefined when there is none (or it was erased). */
    answerOf: (runId: string, chatId: string, index: number) => answerAt.get(runId, chatId, index),
    /** A tool call's exchange in the chat: the call and its results, oldest first. */
    exchangeOf: (chatId: string, toolUseId: string) => exchange.all(chatId, toolUseId),
    /** A chat's parts with ordinals from `first` to `last`, oldest first. */
    between: (chatId: string, first: number, last: number) => between.all(chatId, first, last),
    /** The run's parts in this chat (a fork holds copies of its source's, under the same run id). */
    ofRunInChat: (runId: string, chatId: string) => ofRunInChat.all(runId, chatId),
    /** The bodies of a chat's parts with ordinals from `first` to `last`, oldest first. */
    bodiesBetween: (chatId: string, first: number, last: number) => bodiesBetween.all(chatId, first, last),
    /** Attachment bytes by media id. */
    mediaBytes(mediaIds: string[]): Map<string, Buffer> {
      if (mediaIds.length === 0) return new Map()
      return new Map(mediaBytes.all(JSON.stringify(mediaIds)).map((r) => [r.media_id, r.bytes]))
    },
    /** The bytes stored under a SHA-256 (hex), if any part holds them. */
    blob: (sha256: string): Buffer | undefined => blob.get(sha256)?.bytes,
    /** Packing's view of the chat's parts newer than an ordinal, without their bodies. */
    packingMeta: (chatId: string, ordinal: number) => packingMeta.all(chatId, ordinal),
    /** The chat's parts newer than an ordinal, oldest first, each saying whether it has attachments. */
    after: (chatId: string, ordinal: number) => after.all(chatId, ordinal),
  }
}

export type PartStore = ReturnType<typeof createPartStore>
