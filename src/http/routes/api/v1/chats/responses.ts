import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { ValidationError } from '../../../../../domain/errors.ts'
import type { TurnRequest } from '../../../../../domain/turns/submission.ts'
import type { AppDeps } from '../../../../app-deps.ts'
import { orgOf } from '../../../../plugins/auth.ts'
import { prepareSubmission } from '../../../../prepare-submission.ts'
import { endOpenStreams, writeRunStream, type OpenStreams } from '../../../../sse/write-run-stream.ts'
import { ChatParams } from '../../../../schemas/chats.ts'
import { ApiKeySecurity, errors } from '../../../../schemas/common.ts'
import { CreateResponseRequest } from '../../../../schemas/responses.ts'
import { findChat } from './index.ts'

/** Turn bodies may carry attachments: up to 32 MiB, base64 overhead included (decisions §3). */
export const TURN_BODY_LIMIT = 32 * 1024 * 1024

export const responseRoutes =
  (deps: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    const streams: OpenStreams = new Set()
    app.addHook('preClose', () => endOpenStreams(streams))

    app.post(
      '/api/v1/chats/:chat_id/responses',
      {
        bodyLimit: TURN_BODY_LIMIT,
        schema: {
          operationId: 'createResponse',
          tags: ['chats'],
          summary: 'Submit a turn (or a retry) and stream the answer as server-sent events',
          description:
            'Events, in order: `run`, `config_warnings`, `translation_warnings`, then `compacting` when the turn waits for summaries of older history (then `config_warnings` again if they changed), `block_start` / `delta` / `block_stop` per content block, and `done` or `error`. A comment line is sent every 15 s as a heartbeat.',
          security: ApiKeySecurity,
          params: ChatParams,
          body: Type.Ref(CreateResponseRequest),
          produces: ['text/event-stream'],
          response: {
            200: Type.String({ description: 'text/event-stream of the events above' }),
            ...errors(400, 401, 402, 404, 409, 413, 422, 500, 502, 503),
          },
        },
      },
      async (request, reply) => {
        const orgId = orgOf(request)
        const chat = findChat(deps, orgId, request.params.chat_id)
        const body = request.body as TurnRequest
        const model = deps.catalogue.findByName(body.model)
        if (!model) {
          throw new ValidationError([{ in: 'body', pointer: '/model', message: `"${body.model}" is not an active model of the catalogue` }])
        }
        const submission = prepareSubmission(body, model, {
          orgId,
          apiKeyId: request.identity?.keyId ?? null,
          chatId: chat.id,
          namespace: chat.namespace,
        })
        const admission = await deps.host.submit(submission)
        // A provider that fails before its first byte is an HTTP error, not a stream (spec §4.2 rule 1).
        const opening = await admission.channel.opening
        if (!opening.ok) {
          // Answered once the run's failure is committed: a GET of the run then reads it failed.
          await admission.channel.settled
          throw opening.error
        }
        writeRunStream(reply, admission, streams, deps.position)
        return reply
      },
    )
  }
