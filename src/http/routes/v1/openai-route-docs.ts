import { Type } from '@sinclair/typebox'
import { OPENAI_ERRORS, type OpenAIErrorStatus } from '../../schemas/openai-responses.ts'

/** The facade takes the same API keys, sent as OpenAI's SDKs send theirs: `Authorization: Bearer <key>`. */
export const OpenAISecurity = [{ apiKey: [] as string[] }]

/** The facade's error answers: OpenAI's shape (src/http/openai/openai-error.ts), each status with its codes. */
export function openaiErrors(...statuses: OpenAIErrorStatus[]) {
  return Object.fromEntries(statuses.map((status) => [status, Type.Ref(OPENAI_ERRORS[status])]))
}
