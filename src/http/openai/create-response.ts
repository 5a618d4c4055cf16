import { settledOf, type RunEventSource } from '../../actors/run-channel.ts'
import { ValidationError } from '../../domain/errors.ts'
import { newId } from '../../domain/new-id.ts'
import { echoOfRequest } from '../../domain/openai/request-echo.ts'
import { requestToTurn } from '../../domain/openai/request-to-turn.ts'
import type { ResponseObject } from '../../domain/openai/response-object.ts'
import { runIdOf } from '../../domain/openai/openai-ids.ts'
import type { ChatRow } from '../../store/chats.ts'
import type { RunRow } from '../../store/runs.ts'
import type { AppDeps } from '../app-deps.ts'
import type { BodyWork } from '../body-work/body-work.ts'
import type { OpenAICreateResponse } from '../schemas/openai-responses.ts'
import { submitTurn, type TurnCaller } from '../submit-turn.ts'
import { chatLookups, cutAfterRun, findConversation, previousResponse, responseOfRun } from './facade-reads.ts'

export type CreatedResponse = {
  runId: string
  events: RunEventSource
  /** The chat the response runs in. */
  chat: ChatRow
  /** The response as the ledger holds it once the run is settled (read before a chat not to be stored goes). */
  settled: Promise<ResponseObject>
}

export type CreateOptions = {
  /**
   * Keep the chat of a response not to be stored once it is settled: the WebSocket mode keeps it
   * for as long as its connection may continue it, and deletes it itself (decision 055).
   */
  keepUnstored?: boolean
  /**
   * The connection's own response not to be stored (the WebSocket mode's cache, decision 055): a
   * `previous_response_id` naming it continues its chat, which no other request can find.
   */
  held?: HeldResponse | null
}

/** A response not to be stored that a connection keeps to be continued, and the chat it ran in. */
export type HeldResponse = { runId: string; chatId: string }

/** The chat a continuing request runs in, and whether it was copied for it (a fork, deleted if the turn is refused). */
type Placement = { chat: ChatRow; copied: boolean }

async function forkAt(deps: AppDeps, orgId: string, chatId: string, upToOrdinal: number | null): Promise<ChatRow> {
  const fork = await deps.host.fork(orgId, chatId, { ...(upToOrdinal === null ? {} : { upToOrdinal }), title: null, description: null, userMetadata: {} })
  if (!fork) throw new ValidationError([{ in: 'body', pointer: '/previous_response_id', message: 'its conversation was deleted meanwhile' }])
  return fork
}

/**
 * The chat a request that continues one runs in (decision 055): `conversation`'s chat;
 * `previous_response_id`'s chat when it names the chat's latest response, a fork at it otherwise.
 * A response not to be stored runs in a copy, unless it continues its connection's held response
 * (its chat is the connection's own); a stored one continuing a held response runs in a copy too.
 */
function sourceOf(deps: AppDeps, orgId: string, body: OpenAICreateResponse, held: HeldResponse | null): { chat: ChatRow; forkAfter: number | null | undefined } {
  const throwaway = body.store === false
  if (body.conversation != null) {
    const chat = findConversation(deps, orgId, typeof body.conversation === 'string' ? body.conversation : body.conversation.id)
    return { chat, forkAfter: throwaway ? null : undefined }
  }
  const { run, chat, stored } = continuedResponse(deps, orgId, body.previous_response_id!, held)
  // In place only where the chat is kept as this response asks: a stored chat for a stored response, a held one for one not to be stored.
  if (deps.store.runs.latestCustomerRun(chat.id)?.id === run.id && stored !== throwaway) return { chat, forkAfter: undefined }
  return { chat, forkAfter: cutAfterRun(deps, run, chat.id) }
}

/** The response `previous_response_id` names: the connection's held one (not stored), else a stored one of the organisation. */
function continuedResponse(deps: AppDeps, orgId: string, responseId: string, held: HeldResponse | null): { run: RunRow; chat: ChatRow; stored: boolean } {
  if (held && runIdOf(responseId) === held.runId) {
    const run = deps.store.runs.get(orgId, held.runId)
    const chat = deps.store.chats.get(orgId, held.chatId)
    if (run && chat) return { run, chat, stored: false }
  }
  return { ...previousResponse(deps, orgId, responseId), stored: true }
}

/**
 * A Responses request run as a native turn, up to its stream's opening: the path HTTP and the
 * WebSocket mode share. Everything that can be checked without the chat is checked before anything
 * is written; a response with no chat to continue has its chat written by its admission, so a
 * refused request leaves nothing. A response not to be stored has its chat deleted once its run is
 * settled (unless `keepUnstored`); its billing stays.
 */
export async function createResponse(
  deps: AppDeps,
  bodyWork: Pick<BodyWork, 'decodeAttachment'>,
  caller: TurnCaller,
  body: OpenAICreateResponse,
  namespace: string | null,
  options: CreateOptions = {},
): Promise<CreatedResponse> {
  if (body.conversation != null && body.previous_response_id != null) {
    throw new ValidationError([{ in: 'body', pointer: '/previous_response_id', message: 'cannot be combined with conversation: name one' }])
  }
  const echo = echoOfRequest(body)
  const fresh = body.conversation == null && body.previous_response_id == null
  let placement: Placement
  let admitted: { runId: string; events: RunEventSource }
  if (fresh) {
    const translated = requestToTurn(body, chatLookups(deps, null))
    if (translated.problems.length > 0) throw new ValidationError(translated.problems)
    const chat = { id: newId(), namespace }
    try {
      admitted = await submitTurn(deps, bodyWork, caller, chat, { ...translated.request, stream: true }, { openaiRequest: echo, newChat: { namespace } })
    } catch (error) {
      // Failed before its stream opened, its run committed failed: a chat not to be stored goes all the same.
      if (body.store === false && deps.store.chats.get(caller.orgId, chat.id)) await deps.host.delete(caller.orgId, chat.id)
      throw error
    }
    placement = { chat: deps.store.chats.get(caller.orgId, chat.id)!, copied: false }
  } else {
    const source = sourceOf(deps, caller.orgId, body, options.held ?? null)
    // Read against the source: a fork holds copies of its parts, under the same call ids.
    const translated = requestToTurn(body, chatLookups(deps, source.chat.id))
    if (translated.problems.length > 0) throw new ValidationError(translated.problems)
    placement = source.forkAfter === undefined ? { chat: source.chat, copied: false } : { chat: await forkAt(deps, caller.orgId, source.chat.id, source.forkAfter), copied: true }
    try {
      admitted = await submitTurn(deps, bodyWork, caller, placement.chat, { ...translated.request, stream: true }, { openaiRequest: echo })
    } catch (error) {
      if (placement.copied) await deps.host.delete(caller.orgId, placement.chat.id)
      throw error
    }
  }
  const { chat } = placement
  const settled = settledOf(admitted.events).then(() => responseOfRun(deps, deps.store.runs.get(caller.orgId, admitted.runId)!))
  if (body.store === false && !options.keepUnstored) void settled.then(() => deps.host.delete(caller.orgId, chat.id))
  return { ...admitted, chat, settled }
}
