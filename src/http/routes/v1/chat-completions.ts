import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { NotFoundError, UpstreamError } from '../../../domain/errors.ts'
import { toChatCompletion } from '../../../domain/openai/chat-completion-object.ts'
import type { ChatCompletionRequest } from '../../../domain/openai/chat-completion-request.ts'
import { modelListOf, modelOf } from '../../../domain/openai/model-list.ts'
import type { AppDeps } from '../../app-deps.ts'
import { createChatCompletion, createHeldCalls } from '../../openai/chat-completion.ts'
import { orgOf } from '../../plugins/auth.ts'
import { ChatHeader, OpenAIChatCompletion, OpenAIChatCompletionStreamData, OpenAIChatCompletionRequest, OpenAIModel, OpenAIModelList } from '../../schemas/openai-chat-completions.ts'
import { writeChatCompletionStream } from '../../sse/write-chat-completion-stream.ts'
import { endOpenStreams, type OpenStreams } from '../../sse/write-run-stream.ts'
import { TURN_BODY_LIMIT, type TurnRouteOptions } from '../api/v1/chats/responses.ts'
import { openaiErrors, OpenAISecurity } from './openai-route-docs.ts'
import { NamespaceHeader } from './responses.ts'

const CREATE_DESCRIPTION = [
  "OpenAI's Chat Completions over Parley's turns (docs/guide/openai-sdk.md, docs/decisions/063-chat-completions.md), for tools that speak only that.",
  'Stateless by default: the messages are the whole conversation, run as one billed turn on the catalogue model `model` names, in a chat of its own deleted once the run is settled; the id is `chatcmpl-` and the run id without dashes (GET /api/v1/runs/{id}).',
  "Earlier assistant messages and tool results are carried as history (a tool call and its result told in words), except the results of the calls a stateless completion of this node just made, which continue its run.",
  '`X-Parley-Chat: <chat id>` appends to that chat instead: the messages after the last assistant message are the turn\'s input, and the earlier ones are taken to be the chat\'s history.',
  '`stream: true` answers with `chat.completion.chunk` objects as `data:` lines, ending `data: [DONE]`.',
].join(' ')

export const openaiChatCompletionRoutes =
  (deps: AppDeps, options: TurnRouteOptions): FastifyPluginAsyncTypebox =>
  async (app) => {
    const streams: OpenStreams = new Set()
    const held = createHeldCalls(deps)
    app.addHook('preClose', () => endOpenStreams(streams))
    app.addHook('onClose', () => held.close())

    app.post(
      '/v1/chat/completions',
      {
        bodyLimit: TURN_BODY_LIMIT,
        onRequest: options.slots.take,
        schema: {
          operationId: 'openaiCreateChatCompletion',
          tags: ['openai'],
          summary: 'Create a chat completion (OpenAI Chat Completions API)',
          description: CREATE_DESCRIPTION,
          security: OpenAISecurity,
          headers: Type.Composite([NamespaceHeader, ChatHeader]),
          body: Type.Ref(OpenAIChatCompletionRequest),
          response: {
            200: {
              description: 'The completion (`application/json`), or with `stream: true` its chunks (`text/event-stream`, `data:` lines, the last `[DONE]`).',
              content: { 'application/json': { schema: Type.Ref(OpenAIChatCompletion) }, 'text/event-stream': { schema: Type.Ref(OpenAIChatCompletionStreamData), 'x-sse-events': { message: '#/components/schemas/OpenAIChatCompletionStreamData' } } },
            },
            ...openaiErrors(400, 401, 404, 413, 429, 500, 502, 503),
          },
        },
      },
      async (request, reply) => {
        const orgId = orgOf(request)
        const body = request.body as ChatCompletionRequest & { stream?: boolean | null; stream_options?: { include_usage?: boolean } | null }
        const headers = { chat: request.headers['x-parley-chat'] ?? null, namespace: request.headers['x-parley-namespace'] ?? null }
        const created = await createChatCompletion(deps, options.bodyWork, { orgId, apiKeyId: request.identity?.keyId ?? null }, body, headers, held)
        const run = deps.store.runs.get(orgId, created.runId)!
        if (body.stream === true) {
          const opening = { runId: created.runId, model: run.model_name, created: Math.floor(Date.parse(run.created_at) / 1000), includeUsage: body.stream_options?.include_usage === true }
          writeChatCompletionStream(reply, opening, created.events, created.finished, streams)
          return reply
        }
        const response = await created.finished
        if (response.status === 'failed') throw new UpstreamError(`the run failed: ${response.error?.code ?? 'server_error'}`)
        return toChatCompletion(created.runId, response)
      },
    )

    app.get(
      '/v1/models',
      {
        schema: {
          operationId: 'openaiListModels',
          tags: ['openai'],
          summary: 'The active catalogue models (OpenAI Models API)',
          security: OpenAISecurity,
          response: { 200: Type.Ref(OpenAIModelList), ...openaiErrors(401, 500, 503) },
        },
      },
      async () => modelListOf(deps.catalogue.list(), deps.catalogue.pricesAsOf),
    )

    app.get(
      '/v1/models/*',
      {
        schema: {
          operationId: 'openaiGetModel',
          tags: ['openai'],
          summary: 'One active catalogue model by its name (OpenAI Models API)',
          security: OpenAISecurity,
          params: Type.Object({ '*': Type.String({ description: 'The model\'s catalogue name, e.g. sandbox/echo (slashes unescaped).' }) }),
          response: { 200: Type.Ref(OpenAIModel), ...openaiErrors(401, 404, 500, 503) },
        },
      },
      async (request) => {
        const name = request.params['*']
        const entry = deps.catalogue.list().find((m) => m.name === name)
        if (!entry) throw new NotFoundError(`The model '${name}' does not exist or is not active (GET /v1/models lists the active ones).`)
        return modelOf(entry, deps.catalogue.pricesAsOf)
      },
    )
  }
