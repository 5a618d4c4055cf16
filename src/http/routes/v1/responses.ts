import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { settledOf, type RunEventSource } from '../../../actors/run-channel.ts'
import { ValidationError } from '../../../domain/errors.ts'
import { echoOfRequest } from '../../../domain/openai/request-echo.ts'
import { requestToTurn } from '../../../domain/openai/request-to-turn.ts'
import type { ChatRow } from '../../../store/chats.ts'
import type { AppDeps } from '../../app-deps.ts'
import { chatLookups, findConversation, previousResponse, responseOfRun } from '../../openai/facade-reads.ts'
import { orgOf } from '../../plugins/auth.ts'
import { Namespace } from '../../schemas/common.ts'
import { OpenAICreateResponse, OpenAIResponse, OpenAIStreamFrame, type OpenAICreateResponse as CreateBody } from '../../schemas/openai-responses.ts'
import { endOpenStreams, type OpenStreams } from '../../sse/write-run-stream.ts'
import { writeResponsesStream } from '../../sse/write-responses-stream.ts'
import { submitTurn } from '../../submit-turn.ts'
import { TURN_BODY_LIMIT, type TurnRouteOptions } from '../api/v1/chats/responses.ts'
import { openaiErrors, OpenAISecurity } from './openai-route-docs.ts'

export const NamespaceHeader = Type.Object({
  'x-parley-namespace': Type.Optional({ ...Namespace, description: 'The namespace of a conversation this request creates (decision 055); absent: the organisation\'s default scope.' }),
})

/** Where a response runs: the chat it continues, or one it makes (a new chat, or a fork at an older response). */
type Placement = { chat: ChatRow; made: boolean }

const CREATE_DESCRIPTION = [
  "OpenAI's Responses API over Parley's chats (docs/guide/openai-sdk.md, docs/decisions/055-openai-facade.md).",
  '`conversation` appends a turn to that chat; `previous_response_id` continues its chat when it names the latest response, and forks the chat at it otherwise; neither makes a new chat.',
  '`stream: true` answers with the Responses event sequence; `background: true` answers at once with the response in progress; `store: false` runs in a chat of its own that is deleted once the run is settled (its billing stays).',
].join(' ')

export const openaiResponseRoutes =
  (deps: AppDeps, options: TurnRouteOptions): FastifyPluginAsyncTypebox =>
  async (app) => {
    const streams: OpenStreams = new Set()
    app.addHook('preClose', () => endOpenStreams(streams))

    /** The chat this request runs in; a chat made here is deleted again if the turn is refused. */
    const place = async (orgId: string, body: CreateBody, namespace: string | null): Promise<Placement> => {
      const throwaway = body.store === false
      if (body.conversation != null) {
        const chat = findConversation(deps, orgId, typeof body.conversation === 'string' ? body.conversation : body.conversation.id)
        return throwaway ? { chat: await forkAt(orgId, chat.id, null), made: true } : { chat, made: false }
      }
      if (body.previous_response_id != null) {
        const { run, chat } = previousResponse(deps, orgId, body.previous_response_id)
        const latest = deps.store.runs.latestCustomerRun(chat.id)
        if (latest?.id === run.id && !throwaway) return { chat, made: false }
        // An older response (or a response not to be stored) continues in a fork at it, as POST /chats/{id}/fork makes.
        const parts = deps.store.parts.ofRunInChat(run.id, chat.id)
        return { chat: await forkAt(orgId, chat.id, parts.at(-1)?.ordinal ?? null), made: true }
      }
      return { chat: deps.store.chats.create({ orgId, namespace, title: null, description: null, userMetadata: {} }), made: true }
    }
    const forkAt = async (orgId: string, chatId: string, upToOrdinal: number | null) => {
      const fork = await deps.host.fork(orgId, chatId, { ...(upToOrdinal === null ? {} : { upToOrdinal }), title: null, description: null, userMetadata: {} })
      if (!fork) throw new ValidationError([{ in: 'body', pointer: '/previous_response_id', message: 'its conversation was deleted meanwhile' }])
      return fork
    }

    app.post(
      '/v1/responses',
      {
        bodyLimit: TURN_BODY_LIMIT,
        onRequest: options.slots.take,
        schema: {
          operationId: 'openaiCreateResponse',
          tags: ['openai'],
          summary: 'Create a response (OpenAI Responses API)',
          description: CREATE_DESCRIPTION,
          security: OpenAISecurity,
          headers: NamespaceHeader,
          body: Type.Ref(OpenAICreateResponse),
          response: {
            200: {
              description: 'The response (`application/json`), or with `stream: true` its events (`text/event-stream`, `event:` the type, `data:` the event).',
              content: { 'application/json': { schema: Type.Ref(OpenAIResponse) }, 'text/event-stream': { schema: Type.Ref(OpenAIStreamFrame) } },
            },
            ...openaiErrors(400, 401, 404, 413, 429, 500, 502, 503),
          },
        },
      },
      async (request, reply) => {
        const orgId = orgOf(request)
        const body = request.body
        if (body.conversation != null && body.previous_response_id != null) {
          throw new ValidationError([{ in: 'body', pointer: '/previous_response_id', message: 'cannot be combined with conversation: name one' }])
        }
        const { chat, made } = await place(orgId, body, request.headers['x-parley-namespace'] ?? null)
        let admitted: { runId: string; events: RunEventSource }
        try {
          const translated = requestToTurn(body, chatLookups(deps, made && body.previous_response_id == null && body.conversation == null ? null : chat.id))
          if (translated.problems.length > 0) throw new ValidationError(translated.problems)
          const echo = echoOfRequest(body)
          admitted = await submitTurn(deps, options.bodyWork, { orgId, apiKeyId: request.identity?.keyId ?? null }, chat, { ...translated.request, stream: true }, echo)
        } catch (error) {
          // A refused request changes nothing: a chat made for it goes unless a run was committed in it.
          if (made && deps.store.runs.latestCustomerRun(chat.id) === undefined) await deps.host.delete(orgId, chat.id)
          throw error
        }
        const { runId, events } = admitted
        if (body.store === false) void settledOf(events).then(() => deps.host.delete(orgId, chat.id))
        const current = () => responseOfRun(deps, deps.store.runs.get(orgId, runId)!)
        if (body.stream === true) {
          writeResponsesStream(reply, runId, events, current(), current, streams)
          return reply
        }
        if (body.background === true) return current()
        await settledOf(events)
        return current()
      },
    )
  }

