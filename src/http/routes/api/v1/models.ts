import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { AppDeps } from '../../../app-deps.ts'
import { orgOf } from '../../../plugins/auth.ts'
import { pricedCatalogue, pricingFor } from '../../../pricing-context.ts'
import { CatalogueModel } from '../../../schemas/catalogue.ts'
import { ApiKeySecurity, errors } from '../../../schemas/common.ts'

export const modelRoutes =
  (deps: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.get(
      '/api/v1/models',
      {
        schema: {
          operationId: 'listModels',
          tags: ['catalogue'],
          summary: "Active models at the caller's prices",
          security: ApiKeySecurity,
          response: { 200: Type.Array(Type.Ref(CatalogueModel)), ...errors(401, 422, 500, 503) },
        },
      },
      async (request) => pricedCatalogue(deps, pricingFor(deps, orgOf(request))),
    )
  }
