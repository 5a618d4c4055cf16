import { ParleyApiError } from './parley-error.ts'

/** The data of an openapi-fetch answer, or its error envelope thrown as a ParleyApiError. */
export function unwrap<T>(answer: { data?: T; error?: unknown; response: Response }): T {
  if (answer.response.ok) return answer.data as T
  throw ParleyApiError.fromResponse(answer.response, answer.error)
}
