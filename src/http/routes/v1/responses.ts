import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { AppDeps } from '../../app-deps.ts'
import { createResponse } from '../../openai/create-response.ts'
import { compactResponse } from '../../openai/compact-response.ts'
import { countInputTokens } from '../../openai/count-input.ts'
import { compactionOfRunId, findResponseRun, inputItemsOf, responseOfRun } from '../../openai/facade-reads.ts'
import { pageOfItems } from '../../../domain/openai/item-page.ts'
import { orgOf } from '../../plugins/auth.ts'
import { Namespace } from '../../schemas/common.ts'
import { ItemListQuery, OpenAICompactRequest, OpenAICompaction, OpenAICountRequest, OpenAICreateResponse, OpenAIItemList, OpenAIResponse, OpenAIStreamFrame, ResponseParams } from '../../schemas/openai-responses.ts'
import { endOpenStreams, type OpenStreams } from '../../sse/write-run-stream.ts'
import { writeResponsesStream } from '../../sse/write-responses-stream.ts'
import { TURN_BODY_LIMIT, type TurnRouteOptions } from '../api/v1/chats/responses.ts'
import { openaiErrors, OpenAISecurity } from './openai-route-docs.ts'

export const NamespaceHeader = Type.Object({
  'x-parley-namespace': Type.Optional({ ...Namespace, description: 'The namespace of a conversation this request creates (decision 055); absent: the organisation\'s default scope.' }),
})

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
        const { runId, events, settled } = await createResponse(deps, options.bodyWork, { orgId, apiKeyId: request.identity?.keyId ?? null }, body, request.headers['x-parley-namespace'] ?? null)
        const current = () => responseOfRun(deps, deps.store.runs.get(orgId, runId)!)
        if (body.stream === true) {
          writeResponsesStream(reply, runId, events, current(), settled, streams, compactionOfRunId(deps, runId))
          return reply
        }
        if (body.background === true) return current()
        return settled
      },
    )

    app.post(
      '/v1/responses/input_tokens',
      {
        bodyLimit: TURN_BODY_LIMIT,
        schema: {
          operationId: 'openaiCountInputTokens',
          tags: ['openai'],
          summary: 'Count the input a response would send, packed as its turn would be (OpenAI Responses API)',
          security: OpenAISecurity,
          headers: NamespaceHeader,
          body: Type.Ref(OpenAICountRequest),
          response: {
            200: Type.Object({ object: Type.Literal('response.input_tokens'), input_tokens: Type.Integer({ minimum: 0 }) }),
            ...openaiErrors(400, 401, 404, 413, 500, 503),
          },
        },
      },
      async (request) => {
        const caller = { orgId: orgOf(request), apiKeyId: request.identity?.keyId ?? null }
        const tokens = await countInputTokens(deps, options.bodyWork, caller, request.body, request.headers['x-parley-namespace'] ?? null)
        return { object: 'response.input_tokens' as const, input_tokens: tokens }
      },
    )

    app.post(
      '/v1/responses/compact',
      {
        bodyLimit: TURN_BODY_LIMIT,
        schema: {
          operationId: 'openaiCompactResponse',
          tags: ['openai'],
          summary: 'Compact a conversation window into a summary (OpenAI Responses API)',
          description:
            'The chat of `previous_response_id` up to that response, then `input`, summarised by `model` in one compaction run, billed as compaction. Send the answer\'s `compaction` item as input in place of what it summarises. Nothing else is kept. See docs/decisions/055-openai-facade.md.',
          security: OpenAISecurity,
          body: Type.Ref(OpenAICompactRequest),
          response: { 200: Type.Ref(OpenAICompaction), ...openaiErrors(400, 401, 404, 413, 429, 500, 502, 503) },
        },
      },
      async (request, reply) => {
        // The run stops when the client hangs up before the answer: it is not billed for more than was made.
        const abort = new AbortController()
        reply.raw.once('close', () => {
          if (!reply.raw.writableFinished) abort.abort()
        })
        return compactResponse(deps, { orgId: orgOf(request), apiKeyId: request.identity?.keyId ?? null }, request.body, abort.signal)
      },
    )

    app.get(
      '/v1/responses/:response_id',
      {
        schema: {
          operationId: 'openaiGetResponse',
          tags: ['openai'],
          summary: 'Get a response (OpenAI Responses API)',
          security: OpenAISecurity,
          params: ResponseParams,
          response: { 200: Type.Ref(OpenAIResponse), ...openaiErrors(400, 401, 404, 500, 503) },
        },
      },
      async (request) => responseOfRun(deps, findResponseRun(deps, orgOf(request), request.params.response_id)),
    )

    app.post(
      '/v1/responses/:response_id/cancel',
      {
        schema: {
          operationId: 'openaiCancelResponse',
          tags: ['openai'],
          summary: 'Cancel a response in progress; its output so far is kept (OpenAI Responses API)',
          security: OpenAISecurity,
          params: ResponseParams,
          response: { 200: Type.Ref(OpenAIResponse), ...openaiErrors(400, 401, 404, 500, 503) },
        },
      },
      async (request) => {
        const orgId = orgOf(request)
        const run = findResponseRun(deps, orgId, request.params.response_id)
        if (run.status === 'running') await deps.host.cancel(run.chat_id, run.id)
        return responseOfRun(deps, deps.store.runs.get(orgId, run.id)!)
      },
    )

    app.get(
      '/v1/responses/:response_id/input_items',
      {
        schema: {
          operationId: 'openaiListInputItems',
          tags: ['openai'],
          summary: 'The items a response was given: its input as the ledger holds it (OpenAI Responses API)',
          security: OpenAISecurity,
          params: ResponseParams,
          querystring: ItemListQuery,
          response: { 200: Type.Ref(OpenAIItemList), ...openaiErrors(400, 401, 404, 500, 503) },
        },
      },
      async (request) => {
        const run = findResponseRun(deps, orgOf(request), request.params.response_id)
        return pageOfItems(inputItemsOf(deps, run), request.query)
      },
    )
  }
