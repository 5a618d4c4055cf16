import { HISTORY_PAGE_MAX, HISTORY_PAGE_MAX_FULL, clampLimit } from '../domain/paging.ts'
import { roleOf } from '../domain/parts.ts'
import type { MediaRow, PartRow, PartStore } from './parts.ts'

/** A history page's query, as the route validated it. */
export type HistoryPageQuery = { before_ordinal?: number; after_ordinal?: number; limit?: number; include?: 'none' | 'stubs' | 'full' }

function toHistoryMedia(row: MediaRow) {
  return {
    media_id: row.media_id,
    mime: row.mime,
    byte_len: row.byte_len,
    filename: row.filename,
    width: row.width,
    height: row.height,
    page_count: row.page_count,
    ...(row.bytes ? { data_base64: Buffer.from(row.bytes).toString('base64') } : {}),
  }
}

/**
 * One part as JSON text. `part` and `user_metadata` are stored as the JSON they are served as, so
 * they are spliced in rather than parsed and serialised again: paging is the hottest read.
 */
function historyPartJson(row: PartRow, media: MediaRow[] | undefined): string {
  const head = `{"id":${JSON.stringify(row.id)},"ordinal":${row.ordinal},"created_at":${JSON.stringify(row.created_at)},"role":"${roleOf(row.kind)}"`
  // Attachments sit on the envelope, and only when the part has some and `include` asked for them.
  const attachments = media ? `,"media":${JSON.stringify(media.map(toHistoryMedia))}` : ''
  return `${head},"part":${servedBody(row)},"user_metadata":${row.user_metadata}${attachments}}`
}

/**
 * A stored body as served: the vendor's replay data (signatures, encrypted reasoning) of a part of
 * any kind is never returned (docs/guide/chats-and-ledger.md, decisions 017 and 026). Only a body
 * that mentions it is parsed: a customer's text that does comes back as it was stored.
 */
function servedBody(row: PartRow): string {
  if (!row.body.includes('"replay"')) return row.body
  const { replay: _replay, ...body } = JSON.parse(row.body) as Record<string, unknown>
  return JSON.stringify(body)
}

/**
 * A page of a chat's ledger as the JSON the history route sends (its shape is the
 * HistoryPageResponse schema). Read on whichever thread holds `parts`: the main thread's store, or
 * the read thread's own connection (src/store/read-thread.ts, decision 048).
 */
export function historyPageJson(parts: Pick<PartStore, 'page' | 'mediaOf'>, chatId: string, q: HistoryPageQuery): string {
  const max = q.include === 'full' ? HISTORY_PAGE_MAX_FULL : HISTORY_PAGE_MAX
  const page = parts.page({ chatId, beforeOrdinal: q.before_ordinal, afterOrdinal: q.after_ordinal, limit: clampLimit(q.limit, max) })
  const include = q.include ?? 'stubs'
  const media = include === 'none' ? new Map<number, MediaRow[]>() : parts.mediaOf(page.rows.map((r) => r.ordinal), include === 'full')
  const data = page.rows.map((row) => historyPartJson(row, media.get(row.ordinal)))
  const first = page.rows[0]?.ordinal ?? null
  const last = page.rows.at(-1)?.ordinal ?? null
  return `{"data":[${data.join(',')}],"first_ordinal":${first},"last_ordinal":${last},"has_more":${page.hasMore}}`
}
