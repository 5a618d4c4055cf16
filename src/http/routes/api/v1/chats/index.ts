import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { NotFoundError, ValidationError } from '../../../../../domain/errors.ts'
import { CHAT_PAGE_DEFAULT, CHAT_PAGE_MAX, clampLimit } from '../../../../../domain/paging.ts'
import { checkUserMetadata } from '../../../../../domain/user-metadata.ts'
import type { ChatRow } from '../../../../../store/chats.ts'
import type { AppDeps } from '../../../../app-deps.ts'
import { orgOf } from '../../../../plugins/auth.ts'
import {
  ChatCreated,
  ChatPage,
  ChatParams,
  ChatSummary,
  CreateChatRequest,
  ForkChatRequest,
  ListChatsQuery,
} from '../../../../schemas/chats.ts'
import { ApiKeySecurity, errors } from '../../../../schemas/common.ts'

export function toChatSummary(row: ChatRow): ChatSummary {
  return {
    id: row.id,
    namespace: row.namespace,
    title: row.title,
    description: row.description,
    user_metadata: JSON.parse(row.user_metadata),
    length: row.part_count,
    created_at: row.created_at,
    updated_at: row.updated_at,
  }
}

/** The single lookup every chat-addressed route uses: a foreign chat and a missing one are the same miss. */
export function findChat(deps: AppDeps, orgId: string, chatId: string): ChatRow {
  const row = deps.store.chats.get(orgId, chatId)
  if (!row) throw new NotFoundError(`chat ${chatId} not found`)
  return row
}

const emptyToNull = (value: string | null | undefined) => (value === undefined || value === '' ? null : value)

export const chatRoutes =
  (deps: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.get(
      '/api/v1/chats',
      {
        schema: {
          operationId: 'listChats',
          tags: ['chats'],
          summary: 'List chats, newest first',
          security: ApiKeySecurity,
          querystring: ListChatsQuery,
          response: { 200: Type.Ref(ChatPage), ...errors(401, 422, 500, 503) },
        },
      },
      async (request) => {
        const q = request.query
        if (q.after_id !== undefined && q.before_id !== undefined) {
          throw new ValidationError([
            { in: 'query', pointer: '/before_id', message: 'cannot be combined with after_id; page in one direction' },
          ])
        }
        const page = deps.store.chats.list({
          orgId: orgOf(request),
          namespace: q.namespace,
          afterId: q.after_id,
          beforeId: q.before_id,
          limit: clampLimit(q.limit, CHAT_PAGE_MAX, CHAT_PAGE_DEFAULT),
        })
        if (!page) {
          const pointer = q.after_id !== undefined ? '/after_id' : '/before_id'
          throw new ValidationError([{ in: 'query', pointer, message: 'names no chat of this organisation' }])
        }
        const data = page.rows.map(toChatSummary)
        return {
          data,
          first_id: data[0]?.id ?? null,
          last_id: data.at(-1)?.id ?? null,
          has_more: page.hasMore,
        }
      },
    )

    app.post(
      '/api/v1/chats',
      {
        schema: {
          operationId: 'createChat',
          tags: ['chats'],
          summary: 'Create an empty chat',
          security: ApiKeySecurity,
          body: Type.Ref(CreateChatRequest),
          response: { 201: Type.Ref(ChatCreated), ...errors(400, 401, 413, 422, 500, 503) },
        },
        // The minimal body is {}; a POST with no body at all means the same.
        preValidation: async (request) => {
          if (request.body === undefined || request.body === null) request.body = {}
        },
      },
      async (request, reply) => {
        const body = request.body
        const metadata = body.user_metadata ?? {}
        const problem = checkUserMetadata(metadata, '/user_metadata')
        if (problem) throw new ValidationError([problem])
        const row = deps.store.chats.create({
          orgId: orgOf(request),
          namespace: body.namespace ?? null,
          title: emptyToNull(body.title),
          description: emptyToNull(body.description),
          userMetadata: metadata,
        })
        const { length: _length, updated_at: _updated, ...created } = toChatSummary(row)
        return reply.code(201).send(created)
      },
    )

    app.post(
      '/api/v1/chats/:chat_id/fork',
      {
        schema: {
          operationId: 'forkChat',
          tags: ['chats'],
          summary: 'Fork a chat at a part',
          security: ApiKeySecurity,
          params: ChatParams,
          body: Type.Ref(ForkChatRequest),
          response: { 201: Type.Ref(ChatCreated), ...errors(400, 401, 404, 413, 422, 500, 503) },
        },
        // Like creation's: {} (or no body) forks the whole settled ledger.
        preValidation: async (request) => {
          if (request.body === undefined || request.body === null) request.body = {}
        },
      },
      async (request, reply) => {
        const orgId = orgOf(request)
        const body = request.body
        const metadata = body.user_metadata ?? {}
        const problem = checkUserMetadata(metadata, '/user_metadata')
        if (problem) throw new ValidationError([problem])
        // The same lookup as every chat route: another organisation's chat is the same 404 as a missing one.
        const chat = findChat(deps, orgId, request.params.chat_id)
        const row = await deps.host.fork(orgId, chat.id, {
          ...(body.up_to_ordinal === undefined ? {} : { upToOrdinal: body.up_to_ordinal }),
          title: emptyToNull(body.title),
          description: emptyToNull(body.description),
          userMetadata: metadata,
        })
        if (!row) throw new NotFoundError(`chat ${chat.id} not found`)
        const { length: _length, updated_at: _updated, ...created } = toChatSummary(row)
        return reply.code(201).send(created)
      },
    )

    app.get(
      '/api/v1/chats/:chat_id',
      {
        schema: {
          operationId: 'getChat',
          tags: ['chats'],
          summary: 'Get a chat',
          security: ApiKeySecurity,
          params: ChatParams,
          response: { 200: Type.Ref(ChatSummary), ...errors(400, 401, 404, 422, 500, 503) },
        },
      },
      async (request) => toChatSummary(findChat(deps, orgOf(request), request.params.chat_id)),
    )

    app.delete(
      '/api/v1/chats/:chat_id',
      {
        schema: {
          operationId: 'deleteChat',
          tags: ['chats'],
          summary: 'Delete a chat and its ledger',
          security: ApiKeySecurity,
          params: ChatParams,
          response: { 204: Type.Null({ description: 'Deleted' }), ...errors(400, 401, 404, 422, 500, 503) },
        },
      },
      async (request, reply) => {
        const orgId = orgOf(request)
        const chat = findChat(deps, orgId, request.params.chat_id)
        // Through the chat's actor (decision 020): a running run is stopped and settled first, and
        // the actor and what it kept go with the rows. Deleted meanwhile by another request: 404.
        if (!(await deps.host.delete(orgId, chat.id))) throw new NotFoundError(`chat ${chat.id} not found`)
        return reply.code(204).send(null)
      },
    )
  }
