import { Type } from '@sinclair/typebox'
import { Nullable } from './common.ts'
import { OpenAIInputItem } from './openai-responses.ts'

const closed = { additionalProperties: false } as const
const Metadata = Type.Record(Type.String({ maxLength: 64 }), Type.String({ maxLength: 512 }), {
  maxProperties: 16,
  description: "Up to 16 string pairs: the chat's user_metadata (at most 1024 bytes as JSON).",
})

export const CreateConversation = Type.Object(
  {
    items: Type.Optional(Nullable(Type.Array(Type.Ref(OpenAIInputItem), { maxItems: 20 }))),
    metadata: Type.Optional(Nullable(Metadata)),
  },
  { ...closed, $id: 'OpenAICreateConversation' },
)
export const AddConversationItems = Type.Object(
  { items: Type.Array(Type.Ref(OpenAIInputItem), { minItems: 1, maxItems: 20 }), include: Type.Optional(Type.Array(Type.String(), { maxItems: 16 })) },
  { ...closed, $id: 'OpenAIAddConversationItems' },
)
export const UpdateConversation = Type.Object({ metadata: Metadata }, { ...closed, $id: 'OpenAIUpdateConversation' })

export const OpenAIConversation = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('conversation'),
    created_at: Type.Integer(),
    metadata: Type.Record(Type.String(), Type.Unknown()),
  },
  { $id: 'OpenAIConversation' },
)

export const ConversationParams = Type.Object({ conversation_id: Type.String({ minLength: 1, maxLength: 128 }) })
export const ConversationItemParams = Type.Object({ conversation_id: Type.String({ minLength: 1, maxLength: 128 }), item_id: Type.String({ minLength: 1, maxLength: 128 }) })

export const OPENAI_CONVERSATION_SCHEMAS = [CreateConversation, AddConversationItems, UpdateConversation, OpenAIConversation]
