import { ValidationError } from '../../domain/errors.ts'
import { newId } from '../../domain/new-id.ts'
import { requestToTurn } from '../../domain/openai/request-to-turn.ts'
import type { AppDeps } from '../app-deps.ts'
import type { BodyWork } from '../body-work/body-work.ts'
import type { OpenAICreateResponse } from '../schemas/openai-responses.ts'
import { prepareTurn, type TurnCaller } from '../submit-turn.ts'
import { chatLookups, cutAfterRun, findConversation, previousResponse } from './facade-reads.ts'

/**
 * `POST /v1/responses/input_tokens` (decision 055): what the request would send, packed as its turn
 * would be (the chat's history under its budget and retention, the configured instructions and
 * tools, the input) and counted as the vendor is expected to count it. Writes nothing it keeps: an
 * older response is counted on a copy of its chat cut at it, made once the request is checked and
 * deleted again; a request with no chat is counted on an empty history, no chat made.
 */
export async function countInputTokens(deps: AppDeps, bodyWork: Pick<BodyWork, 'decodeAttachment'>, caller: TurnCaller, body: OpenAICreateResponse, namespace: string | null): Promise<number> {
  if (body.conversation != null && body.previous_response_id != null) {
    throw new ValidationError([{ in: 'body', pointer: '/previous_response_id', message: 'cannot be combined with conversation: name one' }])
  }
  let chat: { id: string; namespace: string | null } = { id: newId(), namespace }
  let cutAt: number | null | undefined
  if (body.conversation != null) chat = findConversation(deps, caller.orgId, typeof body.conversation === 'string' ? body.conversation : body.conversation.id)
  else if (body.previous_response_id != null) {
    const previous = previousResponse(deps, caller.orgId, body.previous_response_id)
    chat = previous.chat
    if (deps.store.runs.latestCustomerRun(chat.id)?.id !== previous.run.id) cutAt = cutAfterRun(deps, previous.run, chat.id)
  }
  const fresh = body.conversation == null && body.previous_response_id == null
  const translated = requestToTurn(body, chatLookups(deps, fresh ? null : chat.id))
  if (translated.problems.length > 0) throw new ValidationError(translated.problems)
  const turn = { ...translated.request, stream: true }
  // Checked whole on the chat it names before any copy is made.
  const prepared = await prepareTurn(deps, bodyWork, caller, chat, turn)
  if (cutAt === undefined) return deps.host.countInput(prepared.submission, prepared.attachments)
  const copy = await deps.host.fork(caller.orgId, chat.id, { ...(cutAt === null ? {} : { upToOrdinal: cutAt }), title: null, description: null, userMetadata: {} })
  if (!copy) throw new ValidationError([{ in: 'body', pointer: '/previous_response_id', message: 'its conversation was deleted meanwhile' }])
  try {
    const { submission, attachments } = await prepareTurn(deps, bodyWork, caller, copy, turn)
    return deps.host.countInput(submission, attachments)
  } finally {
    await deps.host.delete(caller.orgId, copy.id)
  }
}
