import { Type, type Static } from '@sinclair/typebox'
import { DateTime, Namespace, Nullable, UserMetadata, Uuid } from './common.ts'

const ChatTitle = Type.String({ maxLength: 50, description: '1-50 characters; an empty string is treated as unset.' })
const ChatDescription = Type.String({ maxLength: 200, description: '1-200 characters; an empty string is treated as unset.' })

export const CreateChatRequest = Type.Object(
  {
    namespace: Type.Optional(Nullable(Namespace)),
    title: Type.Optional(Nullable(ChatTitle)),
    description: Type.Optional(Nullable(ChatDescription)),
    user_metadata: Type.Optional(UserMetadata),
  },
  { additionalProperties: false, $id: 'CreateChatRequest' },
)
export type CreateChatRequest = Static<typeof CreateChatRequest>

/**
 * docs/decisions/037-fork.md: where to cut, and the new chat's labels, limited and validated as chat
 * creation's are. The namespace is the source's (no `namespace` here).
 */
export const ForkChatRequest = Type.Object(
  {
    up_to_ordinal: Type.Optional(
      Type.Integer({
        minimum: 1,
        description:
          'Copy the parts with ordinals up to this one (an ordinal of the history, e.g. a part\'s `ordinal`). Absent: every settled part. Beyond the ledger, or inside a running run\'s parts: 422.',
      }),
    ),
    title: Type.Optional(Nullable(ChatTitle)),
    description: Type.Optional(Nullable(ChatDescription)),
    user_metadata: Type.Optional(UserMetadata),
  },
  { additionalProperties: false, $id: 'ForkChatRequest' },
)
export type ForkChatRequest = Static<typeof ForkChatRequest>

export const ChatCreated = Type.Object(
  {
    id: Uuid,
    namespace: Nullable(Namespace),
    title: Nullable(Type.String()),
    description: Nullable(Type.String()),
    user_metadata: UserMetadata,
    created_at: DateTime,
  },
  { $id: 'ChatCreated' },
)

export const ChatSummary = Type.Object(
  {
    id: Uuid,
    namespace: Nullable(Namespace),
    title: Nullable(Type.String()),
    description: Nullable(Type.String()),
    user_metadata: UserMetadata,
    length: Type.Integer({ minimum: 0, description: 'Count of parts in the ledger; not an address.' }),
    created_at: DateTime,
    updated_at: DateTime,
  },
  { $id: 'ChatSummary' },
)
export type ChatSummary = Static<typeof ChatSummary>

export const ChatPage = Type.Object(
  {
    data: Type.Array(Type.Ref(ChatSummary), { description: 'Newest first, whichever direction was paged.' }),
    first_id: Nullable({ ...Uuid, description: 'Send as before_id for the newer page.' }),
    last_id: Nullable({ ...Uuid, description: 'Send as after_id for the older page.' }),
    has_more: Type.Boolean({ description: 'More chats lie beyond this page in the direction paged.' }),
  },
  { $id: 'ChatPage' },
)

export const ListChatsQuery = Type.Object({
  namespace: Type.Optional(Namespace),
  after_id: Type.Optional(Type.String({ format: 'uuid', description: 'Page older than this chat.' })),
  before_id: Type.Optional(Type.String({ format: 'uuid', description: 'Page newer than this chat.' })),
  limit: Type.Optional(Type.Integer({ description: '1-100; out-of-range values are clamped.' })),
})
export type ListChatsQuery = Static<typeof ListChatsQuery>

export const ChatParams = Type.Object({ chat_id: Uuid })
export type ChatParams = Static<typeof ChatParams>
