import { settledOf, type RunEventSource } from '../../actors/run-channel.ts'
import { ValidationError } from '../../domain/errors.ts'
import { echoOfRequest } from '../../domain/openai/request-echo.ts'
import { requestToTurn } from '../../domain/openai/request-to-turn.ts'
import type { ChatRow } from '../../store/chats.ts'
import type { AppDeps } from '../app-deps.ts'
import type { BodyWork } from '../body-work/body-work.ts'
import type { OpenAICreateResponse } from '../schemas/openai-responses.ts'
import { submitTurn, type TurnCaller } from '../submit-turn.ts'
import { chatLookups, findConversation, previousResponse, responseOfRun } from './facade-reads.ts'
import type { ResponseObject } from '../../domain/openai/response-object.ts'

/** Where a response runs: the chat it continues, or one made for it (a new chat, or a fork). */
type Placement = { chat: ChatRow; made: boolean; fresh: boolean }

async function forkAt(deps: AppDeps, orgId: string, chatId: string, upToOrdinal: number | null): Promise<ChatRow> {
  const fork = await deps.host.fork(orgId, chatId, { ...(upToOrdinal === null ? {} : { upToOrdinal }), title: null, description: null, userMetadata: {} })
  if (!fork) throw new ValidationError([{ in: 'body', pointer: '/previous_response_id', message: 'its conversation was deleted meanwhile' }])
  return fork
}

/**
 * The chat a Responses request runs in (decision 055): `conversation`'s chat; `previous_response_id`'s
 * chat when it names the chat's latest response, a fork at it otherwise; a new chat when neither is
 * sent. A response not to be stored runs in a copy made for it.
 */
async function place(deps: AppDeps, orgId: string, body: OpenAICreateResponse, namespace: string | null): Promise<Placement> {
  const throwaway = body.store === false
  if (body.conversation != null) {
    const chat = findConversation(deps, orgId, typeof body.conversation === 'string' ? body.conversation : body.conversation.id)
    return throwaway ? { chat: await forkAt(deps, orgId, chat.id, null), made: true, fresh: false } : { chat, made: false, fresh: false }
  }
  if (body.previous_response_id != null) {
    const { run, chat } = previousResponse(deps, orgId, body.previous_response_id)
    if (deps.store.runs.latestCustomerRun(chat.id)?.id === run.id && !throwaway) return { chat, made: false, fresh: false }
    const parts = deps.store.parts.ofRunInChat(run.id, chat.id)
    return { chat: await forkAt(deps, orgId, chat.id, parts.at(-1)?.ordinal ?? null), made: true, fresh: false }
  }
  return { chat: deps.store.chats.create({ orgId, namespace, title: null, description: null, userMetadata: {} }), made: true, fresh: true }
}

/**
 * A Responses request run as a native turn, up to its stream's opening: the path HTTP and the
 * WebSocket mode share. A refused request changes nothing: a chat made for it is deleted again.
 * A response not to be stored has its chat deleted once its run is settled; its billing stays.
 */
export async function createResponse(
  deps: AppDeps,
  bodyWork: Pick<BodyWork, 'decodeAttachment'>,
  caller: TurnCaller,
  body: OpenAICreateResponse,
  namespace: string | null,
): Promise<{ runId: string; events: RunEventSource; chat: ChatRow; settled: Promise<ResponseObject> }> {
  if (body.conversation != null && body.previous_response_id != null) {
    throw new ValidationError([{ in: 'body', pointer: '/previous_response_id', message: 'cannot be combined with conversation: name one' }])
  }
  const { chat, made, fresh } = await place(deps, caller.orgId, body, namespace)
  try {
    const translated = requestToTurn(body, chatLookups(deps, fresh ? null : chat.id))
    if (translated.problems.length > 0) throw new ValidationError(translated.problems)
    const admitted = await submitTurn(deps, bodyWork, caller, chat, { ...translated.request, stream: true }, echoOfRequest(body))
    // The response as the ledger holds it once the run is settled: read before a copy not to be stored goes.
    const settled = settledOf(admitted.events).then(() => responseOfRun(deps, deps.store.runs.get(caller.orgId, admitted.runId)!))
    if (body.store === false) void settled.then(() => deps.host.delete(caller.orgId, chat.id))
    return { ...admitted, chat, settled }
  } catch (error) {
    if (made && deps.store.runs.latestCustomerRun(chat.id) === undefined) await deps.host.delete(caller.orgId, chat.id)
    throw error
  }
}
