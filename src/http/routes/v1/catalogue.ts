import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { FastifyRequest } from 'fastify'
import { applyMarkup } from '../../../domain/catalogue/apply-markup.ts'
import { renderModelsMarkdown } from '../../../domain/catalogue/render-models-markdown.ts'
import { NotFoundError } from '../../../domain/errors.ts'
import type { AppDeps } from '../../app-deps.ts'
import { pricedCatalogue, pricingFor } from '../../pricing-context.ts'
import { Catalogue, CatalogueModelResponse } from '../../schemas/catalogue.ts'
import { errors } from '../../schemas/common.ts'

export const CONSOLE_SESSION_COOKIE = 'console_session'

export const catalogueRoutes =
  (deps: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    /** A valid console session prices at its organisation's markup; anything else is anonymous. */
    const pricingOf = (request: FastifyRequest) => {
      const token = request.cookies[CONSOLE_SESSION_COOKIE]
      const orgId = token ? deps.store.consoleSessions.organisationOf(token) : null
      return pricingFor(deps, orgId)
    }

    app.get(
      '/v1/catalogue',
      {
        schema: {
          operationId: 'getCatalogue',
          tags: ['catalogue'],
          summary: 'Active models with prices',
          response: { 200: Type.Ref(Catalogue), ...errors(404, 500, 503) },
        },
      },
      async (request) => {
        const pricing = pricingOf(request)
        return {
          models: pricedCatalogue(deps, pricing),
          markup_percent: pricing.markupPercent,
          organisation_specific: pricing.organisationSpecific,
        }
      },
    )

    app.get(
      '/v1/catalogue/models.md',
      {
        schema: {
          operationId: 'getCatalogueMarkdown',
          tags: ['catalogue'],
          summary: 'The catalogue as a markdown table',
          response: {
            200: {
              description: 'A markdown table of models, attachments and pricing conditions',
              content: { 'text/markdown': { schema: Type.String() } },
            },
            ...errors(404, 500, 503),
          },
        },
      },
      async (request, reply) => {
        const pricing = pricingOf(request)
        return reply
          .type('text/markdown; charset=utf-8')
          .send(renderModelsMarkdown(pricedCatalogue(deps, pricing), pricing.markupPercent, deps.catalogue.pricesAsOf))
      },
    )

    app.get(
      '/v1/catalogue/*',
      {
        schema: {
          operationId: 'getCatalogueModel',
          tags: ['catalogue'],
          summary: 'One model by its public name (names may contain slashes)',
          params: Type.Object({ '*': Type.String({ description: 'public model name, e.g. sandbox/echo' }) }),
          response: { 200: Type.Ref(CatalogueModelResponse), ...errors(404, 500, 503) },
        },
      },
      async (request) => {
        const name = request.params['*']
        const pricing = pricingOf(request)
        const model = deps.catalogue.findByName(name)
        if (!model) throw new NotFoundError(`model ${name} is not in the catalogue`)
        return { ...applyMarkup(model, pricing.markupPercent), markup_percent: pricing.markupPercent }
      },
    )
  }
