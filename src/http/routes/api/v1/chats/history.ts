import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { ValidationError } from '../../../../../domain/errors.ts'
import { HISTORY_PAGE_MAX, HISTORY_PAGE_MAX_FULL, clampLimit } from '../../../../../domain/paging.ts'
import { roleOf } from '../../../../../domain/parts.ts'
import type { MediaRow, PartRow } from '../../../../../store/parts.ts'
import type { AppDeps } from '../../../../app-deps.ts'
import { orgOf } from '../../../../plugins/auth.ts'
import { ChatParams } from '../../../../schemas/chats.ts'
import { ApiKeySecurity, errors } from '../../../../schemas/common.ts'
import { HistoryPageResponse, HistoryQuery } from '../../../../schemas/history.ts'
import { findChat } from './index.ts'

function toHistoryMedia(row: MediaRow) {
  return {
    media_id: row.media_id,
    mime: row.mime,
    byte_len: row.byte_len,
    filename: row.filename,
    width: row.width,
    height: row.height,
    page_count: row.page_count,
    ...(row.bytes ? { data_base64: row.bytes.toString('base64') } : {}),
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

export const historyRoutes =
  (deps: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.get(
      '/api/v1/chats/:chat_id/history',
      {
        schema: {
          operationId: 'getChatHistory',
          tags: ['chats'],
          summary: 'Page through the ledger of a chat, oldest first within a page',
          security: ApiKeySecurity,
          params: ChatParams,
          querystring: HistoryQuery,
          response: { 200: Type.Ref(HistoryPageResponse), ...errors(400, 401, 404, 422, 500, 503) },
        },
      },
      async (request, reply) => {
        const q = request.query
        if (q.before_ordinal !== undefined && q.after_ordinal !== undefined) {
          throw new ValidationError([
            { in: 'query', pointer: '/after_ordinal', message: 'cannot be combined with before_ordinal; page in one direction' },
          ])
        }
        const chat = findChat(deps, orgOf(request), request.params.chat_id)
        const max = q.include === 'full' ? HISTORY_PAGE_MAX_FULL : HISTORY_PAGE_MAX
        const page = deps.store.parts.page({
          chatId: chat.id,
          beforeOrdinal: q.before_ordinal,
          afterOrdinal: q.after_ordinal,
          limit: clampLimit(q.limit, max),
        })
        const include = q.include ?? 'stubs'
        const media =
          include === 'none' ? new Map<number, MediaRow[]>() : deps.store.parts.mediaOf(page.rows.map((r) => r.ordinal), include === 'full')
        const data = page.rows.map((row) => historyPartJson(row, media.get(row.ordinal)))
        const first = page.rows[0]?.ordinal ?? null
        const last = page.rows.at(-1)?.ordinal ?? null
        // A string payload skips the response serialiser; its shape is the HistoryPageResponse schema above.
        return reply
          .type('application/json; charset=utf-8')
          .send(`{"data":[${data.join(',')}],"first_ordinal":${first},"last_ordinal":${last},"has_more":${page.hasMore}}` as never)
      },
    )
  }
