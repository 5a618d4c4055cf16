import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { AppDeps } from '../../../app-deps.ts'
import { orgOf } from '../../../plugins/auth.ts'
import { ApiKeySecurity, errors } from '../../../schemas/common.ts'
import { NamespacePage } from '../../../schemas/public.ts'

export const namespaceRoutes =
  (deps: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.get(
      '/api/v1/namespaces',
      {
        schema: {
          operationId: 'listNamespaces',
          tags: ['namespaces'],
          summary: 'Every namespace in use by a chat, ascending',
          security: ApiKeySecurity,
          response: { 200: Type.Ref(NamespacePage), ...errors(401, 422, 500, 503) },
        },
      },
      async (request) => ({ data: deps.store.chats.namespaces(orgOf(request)) }),
    )
  }
