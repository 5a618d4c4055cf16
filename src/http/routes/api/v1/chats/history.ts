import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { NotFoundError, ValidationError } from '../../../../../domain/errors.ts'
import type { AppDeps } from '../../../../app-deps.ts'
import { orgOf } from '../../../../plugins/auth.ts'
import { ChatParams } from '../../../../schemas/chats.ts'
import { ApiKeySecurity, errors } from '../../../../schemas/common.ts'
import { HistoryPageResponse, HistoryQuery } from '../../../../schemas/history.ts'
import { historyPageJson } from '../../../../../store/history-page.ts'
import { findChat } from './index.ts'

export const historyRoutes =
  (deps: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.get(
      '/api/v1/chats/:chat_id/history',
      {
        config: { readsOffThread: true },
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
        const orgId = orgOf(request)
        const chatId = request.params.chat_id
        // Off the main thread when there is a read thread (decision 048): a read transaction waits
        // on litefs, and on this thread it would hold every other request with it.
        const json = deps.reads
          ? await deps.reads.historyPage(orgId, chatId, q)
          : historyPageJson(deps.store.parts, findChat(deps, orgId, chatId).id, q)
        if (json === null) throw new NotFoundError(`chat ${chatId} not found`)
        // A string payload skips the response serialiser; its shape is the HistoryPageResponse schema above.
        return reply.type('application/json; charset=utf-8').send(json as never)
      },
    )
  }
