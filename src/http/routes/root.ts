import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { AppDeps } from '../app-deps.ts'
import { renderLlmsTxt } from '../llms-txt.ts'
import { errors } from '../schemas/common.ts'
import { ApiVersion, Discovery, PublicPlatformUpdate } from '../schemas/public.ts'

export const API_VERSION = 'v1'

export const rootRoutes =
  (deps: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.get(
      '/',
      {
        schema: {
          operationId: 'discover',
          tags: ['public'],
          summary: 'Discovery document',
          response: { 200: Type.Ref(Discovery) },
        },
      },
      async () => ({
        service: 'parley',
        docs: '/docs',
        llms_txt: '/llms.txt',
        openapi: '/openapi.json',
        versions: { v1: '/api/v1' },
      }),
    )

    app.get(
      '/llms.txt',
      {
        schema: {
          operationId: 'getLlmsTxt',
          tags: ['public'],
          summary: 'The API described for LLM agents (llms.txt)',
          produces: ['text/plain'],
          response: { 200: Type.String() },
        },
      },
      async (_request, reply) => reply.type('text/plain; charset=utf-8').send(renderLlmsTxt(app.swagger())),
    )

    const version = () => ({ version: deps.build.version, commit: deps.build.commit, api_version: API_VERSION })

    app.get(
      '/api/v1/version',
      {
        schema: {
          operationId: 'getVersion',
          tags: ['public'],
          summary: 'Service and API version',
          response: { 200: Type.Ref(ApiVersion) },
        },
      },
      async () => version(),
    )

    // Discovery advertises `versions.v1 = /api/v1`, and every advertised path must be served (docs/guide/billing-and-usage.md).
    app.get(
      '/api/v1',
      {
        schema: {
          operationId: 'getApiV1',
          tags: ['public'],
          summary: 'Root of API version 1: its version document',
          response: { 200: Type.Ref(ApiVersion) },
        },
      },
      async () => version(),
    )

    app.get(
      '/api/v1/updates',
      {
        schema: {
          operationId: 'listUpdates',
          tags: ['public'],
          summary: 'Public platform updates, newest first',
          response: { 200: Type.Array(Type.Ref(PublicPlatformUpdate)), ...errors(500) },
        },
      },
      async () => deps.store.updates.list(),
    )
  }
