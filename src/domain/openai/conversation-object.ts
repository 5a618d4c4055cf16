import { conversationIdOf } from './openai-ids.ts'

/** A chat as an OpenAI `conversation`: its id, when it was made, and its user_metadata as `metadata`. */
export function conversationObject(chat: { id: string; created_at: string; user_metadata: string }) {
  return {
    id: conversationIdOf(chat.id),
    object: 'conversation' as const,
    created_at: Math.floor(Date.parse(chat.created_at) / 1000),
    metadata: JSON.parse(chat.user_metadata) as Record<string, unknown>,
  }
}
