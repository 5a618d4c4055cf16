import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { NotFoundError, ValidationError } from '../../../domain/errors.ts'
import { itemRefOf } from '../../../domain/openai/openai-ids.ts'
import { conversationObject } from '../../../domain/openai/conversation-object.ts'
import { ITEM_PAGE_DEFAULT, ITEM_PAGE_MAX } from '../../../domain/openai/item-page.ts'
import { checkUserMetadata } from '../../../domain/user-metadata.ts'
import type { AppDeps } from '../../app-deps.ts'
import { findConversation, findItem, itemsOf, rowOfItem } from '../../openai/facade-reads.ts'
import { orgOf } from '../../plugins/auth.ts'
import { ItemListQuery, OpenAIItemList } from '../../schemas/openai-responses.ts'
import { AddConversationItems, ConversationItemParams, ConversationParams, CreateConversation, OpenAIConversation, UpdateConversation } from '../../schemas/openai-conversations.ts'
import { appendParts, partsOfItems } from '../../openai/append-items.ts'
import { NamespaceHeader } from './responses.ts'
import { openaiErrors, OpenAISecurity } from './openai-route-docs.ts'

const metadataProblem = (metadata: unknown) => checkUserMetadata(metadata, '/metadata')

/**
 * OpenAI's Conversations API over Parley's chats (decision 055): a conversation is a chat, its items
 * are the chat's ledger parts, and `metadata` is the chat's user_metadata. Items are added by
 * responses (`conversation` on POST /v1/responses), as a chat's parts are by turns, or at rest
 * through the chat's actor (APPEND).
 */
export const openaiConversationRoutes =
  (deps: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.post(
      '/v1/conversations',
      {
        schema: {
          operationId: 'openaiCreateConversation',
          tags: ['openai'],
          summary: 'Create a conversation: an empty chat (OpenAI Conversations API)',
          security: OpenAISecurity,
          headers: NamespaceHeader,
          body: Type.Ref(CreateConversation),
          response: { 200: Type.Ref(OpenAIConversation), ...openaiErrors(400, 401, 413, 500, 503) },
        },
        preValidation: async (request) => {
          if (request.body === undefined || request.body === null) request.body = {}
        },
      },
      async (request) => {
        const body = request.body
        const orgId = orgOf(request)
        const metadata = body.metadata ?? {}
        const problem = metadataProblem(metadata)
        if (problem) throw new ValidationError([problem])
        // Checked before the chat is made: a refused request leaves nothing behind.
        const parts = partsOfItems(deps, null, body.items ?? [], '/items')
        const chat = deps.store.chats.create({ orgId, namespace: request.headers['x-parley-namespace'] ?? null, title: null, description: null, userMetadata: metadata })
        await appendParts(deps, orgId, chat.id, parts)
        return conversationObject(chat)
      },
    )

    app.get(
      '/v1/conversations/:conversation_id',
      {
        schema: {
          operationId: 'openaiGetConversation',
          tags: ['openai'],
          summary: 'Get a conversation (OpenAI Conversations API)',
          security: OpenAISecurity,
          params: ConversationParams,
          response: { 200: Type.Ref(OpenAIConversation), ...openaiErrors(400, 401, 404, 500, 503) },
        },
      },
      async (request) => conversationObject(findConversation(deps, orgOf(request), request.params.conversation_id)),
    )

    app.post(
      '/v1/conversations/:conversation_id',
      {
        schema: {
          operationId: 'openaiUpdateConversation',
          tags: ['openai'],
          summary: "Replace a conversation's metadata (OpenAI Conversations API)",
          security: OpenAISecurity,
          params: ConversationParams,
          body: Type.Ref(UpdateConversation),
          response: { 200: Type.Ref(OpenAIConversation), ...openaiErrors(400, 401, 404, 413, 500, 503) },
        },
      },
      async (request) => {
        const orgId = orgOf(request)
        const chat = findConversation(deps, orgId, request.params.conversation_id)
        const problem = metadataProblem(request.body.metadata)
        if (problem) throw new ValidationError([problem])
        if (!deps.store.chats.setUserMetadata(orgId, chat.id, request.body.metadata)) throw new NotFoundError(`Conversation with id '${request.params.conversation_id}' not found.`)
        return conversationObject(deps.store.chats.get(orgId, chat.id)!)
      },
    )

    app.delete(
      '/v1/conversations/:conversation_id',
      {
        schema: {
          operationId: 'openaiDeleteConversation',
          tags: ['openai'],
          summary: 'Delete a conversation and its ledger; its responses stay billed (OpenAI Conversations API)',
          security: OpenAISecurity,
          params: ConversationParams,
          response: {
            200: Type.Object({ id: Type.String(), object: Type.Literal('conversation.deleted'), deleted: Type.Boolean() }),
            ...openaiErrors(400, 401, 404, 500, 503),
          },
        },
      },
      async (request) => {
        const orgId = orgOf(request)
        const id = request.params.conversation_id
        const chat = findConversation(deps, orgId, id)
        // Through the chat's actor, as DELETE /api/v1/chats/{id}: a running run is stopped and settled first.
        if (!(await deps.host.delete(orgId, chat.id))) throw new NotFoundError(`Conversation with id '${id}' not found.`)
        return { id, object: 'conversation.deleted' as const, deleted: true }
      },
    )

    app.get(
      '/v1/conversations/:conversation_id/items',
      {
        schema: {
          operationId: 'openaiListConversationItems',
          tags: ['openai'],
          summary: "A page of a conversation's items: its chat's ledger (OpenAI Conversations API)",
          security: OpenAISecurity,
          params: ConversationParams,
          querystring: ItemListQuery,
          response: { 200: Type.Ref(OpenAIItemList), ...openaiErrors(400, 401, 404, 500, 503) },
        },
      },
      async (request) => {
        const orgId = orgOf(request)
        const chat = findConversation(deps, orgId, request.params.conversation_id)
        const q = request.query
        const limit = Math.min(Math.max(q.limit ?? ITEM_PAGE_DEFAULT, 1), ITEM_PAGE_MAX)
        const ascending = q.order === 'asc'
        let from: number | undefined
        if (q.after !== undefined) {
          const ref = itemRefOf(q.after)
          const row = ref === null ? undefined : rowOfItem(deps, chat.id, ref)
          if (!row) throw new ValidationError([{ in: 'query', pointer: '/after', message: `names no item of this conversation` }])
          from = row.ordinal
        }
        // One indexed range of the ledger, whatever the chat's length (src/store/parts.ts).
        const page = deps.store.parts.page(ascending ? { chatId: chat.id, afterOrdinal: from ?? 0, limit } : { chatId: chat.id, ...(from === undefined ? {} : { beforeOrdinal: from }), limit })
        const rows = ascending ? page.rows : [...page.rows].reverse()
        const data = itemsOf(rows)
        return { object: 'list' as const, data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: page.hasMore }
      },
    )

    app.post(
      '/v1/conversations/:conversation_id/items',
      {
        schema: {
          operationId: 'openaiAddConversationItems',
          tags: ['openai'],
          summary: "Add items to a conversation: its chat's ledger, with no run (OpenAI Conversations API)",
          description:
            'User and assistant messages of text, and summaries from POST /v1/responses/compact. Added at rest only: not while a response runs (400 conversation_locked), nor while function calls wait for their output. See docs/decisions/055-openai-facade.md.',
          security: OpenAISecurity,
          params: ConversationParams,
          body: Type.Ref(AddConversationItems),
          response: { 200: Type.Ref(OpenAIItemList), ...openaiErrors(400, 401, 404, 413, 500, 503) },
        },
      },
      async (request) => {
        const orgId = orgOf(request)
        const chat = findConversation(deps, orgId, request.params.conversation_id)
        const data = await appendParts(deps, orgId, chat.id, partsOfItems(deps, chat.id, request.body.items, '/items'))
        return { object: 'list' as const, data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: false }
      },
    )

    app.get(
      '/v1/conversations/:conversation_id/items/:item_id',
      {
        schema: {
          operationId: 'openaiGetConversationItem',
          tags: ['openai'],
          summary: 'One item of a conversation (OpenAI Conversations API)',
          security: OpenAISecurity,
          params: ConversationItemParams,
          querystring: Type.Object({ include: Type.Optional(Type.Union([Type.String(), Type.Array(Type.String(), { maxItems: 16 })])) }),
          response: { 200: Type.Object({ type: Type.String(), id: Type.String() }, { additionalProperties: true }), ...openaiErrors(400, 401, 404, 500, 503) },
        },
      },
      async (request) => {
        const orgId = orgOf(request)
        const chat = findConversation(deps, orgId, request.params.conversation_id)
        return itemsOf([findItem(deps, chat.id, request.params.item_id)])[0]!
      },
    )

    app.delete(
      '/v1/conversations/:conversation_id/items/:item_id',
      {
        schema: {
          operationId: 'openaiDeleteConversationItem',
          tags: ['openai'],
          summary: "Delete an item of a conversation: its part is erased from the chat's ledger (OpenAI Conversations API)",
          description:
            "Answers the conversation. A function call and its output are erased together, and the chat's summaries written from an erased part with them; later responses never see it. At rest only: not while a response runs (400 conversation_locked). See docs/decisions/056-erasing-items.md.",
          security: OpenAISecurity,
          params: ConversationItemParams,
          response: { 200: Type.Ref(OpenAIConversation), ...openaiErrors(400, 401, 404, 500, 503) },
        },
      },
      async (request) => {
        const orgId = orgOf(request)
        const chat = findConversation(deps, orgId, request.params.conversation_id)
        await deps.host.erase(orgId, chat.id, findItem(deps, chat.id, request.params.item_id).ordinal)
        return conversationObject(findConversation(deps, orgId, request.params.conversation_id))
      },
    )
  }
