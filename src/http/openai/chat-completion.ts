import { ValidationError } from '../../domain/errors.ts'
import { chatCompletionToResponses, type ChatCompletionRequest } from '../../domain/openai/chat-completion-request.ts'
import { conversationIdOf, responseIdOf, runIdOf } from '../../domain/openai/openai-ids.ts'
import type { ResponseObject } from '../../domain/openai/response-object.ts'
import type { AppDeps } from '../app-deps.ts'
import type { BodyWork } from '../body-work/body-work.ts'
import type { OpenAICreateResponse } from '../schemas/openai-responses.ts'
import type { TurnCaller } from '../submit-turn.ts'
import { createResponse, type CreatedResponse } from './create-response.ts'

/** How long a stateless completion that ended in tool calls keeps its chat for their results. */
export const HELD_CALLS_MS = 10 * 60_000
/** The most such chats a node keeps; the oldest goes first. */
export const MAX_HELD_CALLS = 256

type Held = { orgId: string; runId: string; chatId: string; callIds: string[]; timer: NodeJS.Timeout }

/**
 * Stateless completions that ended in tool calls (docs/decisions/063-chat-completions.md): their
 * chat is kept, for a while and on this node only, so that the next stateless request carrying
 * those calls' results continues it and the results are real tool results, not words. Anything
 * else (expired, evicted, another node) falls back to carrying the calls and results as text.
 */
export function createHeldCalls(deps: AppDeps, options: { ttlMs?: number; max?: number } = {}) {
  const ttl = options.ttlMs ?? HELD_CALLS_MS
  const max = options.max ?? MAX_HELD_CALLS
  const byCall = new Map<string, Held>()
  const entries = new Set<Held>()
  const drop = (held: Held) => {
    clearTimeout(held.timer)
    entries.delete(held)
    for (const id of held.callIds) if (byCall.get(id) === held) byCall.delete(id)
  }
  const discard = (held: Held) => {
    drop(held)
    void deps.host.delete(held.orgId, held.chatId).catch(() => {})
  }
  return {
    hold(orgId: string, runId: string, chatId: string, callIds: string[]) {
      if (entries.size >= max) discard(entries.values().next().value!)
      const held: Held = { orgId, runId, chatId, callIds, timer: setTimeout(() => discard(held), ttl) }
      held.timer.unref()
      entries.add(held)
      for (const id of callIds) byCall.set(id, held)
    },
    /** The held run all these calls belong to, for this organisation; taken out of the holding. */
    take(orgId: string, callIds: string[]): { runId: string; chatId: string } | null {
      const held = callIds.length > 0 ? byCall.get(callIds[0]!) : undefined
      if (!held || held.orgId !== orgId || !callIds.every((id) => held.callIds.includes(id))) return null
      drop(held)
      return { runId: held.runId, chatId: held.chatId }
    },
    /** Held chats still standing (tests). */
    get size() {
      return entries.size
    },
    /** Deletes every held chat (the node closing). */
    async close() {
      await Promise.all([...entries].map(async (held) => {
        drop(held)
        await deps.host.delete(held.orgId, held.chatId).catch(() => {})
      }))
    },
  }
}
export type HeldCalls = ReturnType<typeof createHeldCalls>

export type CreatedCompletion = CreatedResponse & {
  /** Settled, and its chat deleted or held (stateless), or left as it is (a named chat). */
  finished: Promise<ResponseObject>
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** The conversation `X-Parley-Chat` names: a chat id, or the Responses facade's `conv_` id. */
export const conversationOfHeader = (value: string) => (UUID.test(value) ? conversationIdOf(value.toLowerCase()) : value)

/**
 * A Chat Completions request run as a native turn, through the Responses facade's `createResponse`:
 * stateless in a chat of its own (deleted once settled, or held when it ended in tool calls), or
 * appended to the chat `X-Parley-Chat` names.
 */
export async function createChatCompletion(
  deps: AppDeps,
  bodyWork: Pick<BodyWork, 'decodeAttachment'>,
  caller: TurnCaller,
  body: ChatCompletionRequest,
  headers: { chat: string | null; namespace: string | null },
  heldCalls: HeldCalls,
): Promise<CreatedCompletion> {
  let taken: { runId: string; chatId: string } | null = null
  const translated = chatCompletionToResponses(
    body,
    headers.chat === null
      ? {
          kind: 'stateless',
          held: (callIds) => {
            taken = heldCalls.take(caller.orgId, callIds)
            return taken && responseIdOf(taken.runId)
          },
        }
      : { kind: 'chat', conversationId: conversationOfHeader(headers.chat) },
  )
  const continued = taken as { runId: string; chatId: string } | null
  const giveBack = () => {
    if (!continued) return
    const assistant = [...body.messages].reverse().find((m) => m.role === 'assistant') as { tool_calls?: { id: string }[] | null }
    heldCalls.hold(caller.orgId, continued.runId, continued.chatId, (assistant.tool_calls ?? []).map((c) => c.id))
  }
  if (translated.problems.length > 0) {
    giveBack()
    throw new ValidationError(translated.problems)
  }
  const stateless = headers.chat === null
  let created: CreatedResponse
  try {
    created = await createResponse(deps, bodyWork, caller, translated.body as OpenAICreateResponse, headers.namespace, {
      keepUnstored: stateless,
      held: continued,
    })
  } catch (error) {
    giveBack()
    throw error
  }
  const finished = stateless
    ? created.settled.then(async (response) => {
        const calls = response.output.flatMap((item) => ((item as { type?: string }).type === 'function_call' ? [String((item as { call_id?: unknown }).call_id)] : []))
        const runId = runIdOf(response.id)!
        if (response.status === 'completed' && calls.length > 0) heldCalls.hold(caller.orgId, runId, created.chat.id, calls)
        else await deps.host.delete(caller.orgId, created.chat.id)
        return response
      })
    : created.settled
  return { ...created, finished }
}
