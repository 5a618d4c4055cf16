import { Type } from '@sinclair/typebox'
import { OpenAIErrorBody } from '../../schemas/openai-responses.ts'

/** The facade takes the same API keys, sent as OpenAI's SDKs send theirs: `Authorization: Bearer <key>`. */
export const OpenAISecurity = [{ apiKey: [] as string[] }]

/** The facade's error answers: OpenAI's shape (src/http/openai/openai-error.ts). */
export function openaiErrors(...statuses: number[]) {
  return Object.fromEntries(statuses.map((status) => [status, Type.Ref(OpenAIErrorBody)]))
}
