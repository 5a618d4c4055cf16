import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type, type TSchema } from '@sinclair/typebox'
import { NotFoundError, ValidationError } from '../../../../../domain/errors.ts'
import type { ConfigKind, ConfigVersion, NewConfigVersion } from '../../../../../store/config-versions.ts'
import type { AppDeps } from '../../../../app-deps.ts'
import { orgOf } from '../../../../plugins/auth.ts'
import { ApiKeySecurity, errors } from '../../../../schemas/common.ts'
import { ConfigIdParams, DeactivateResponse, NamespaceModelQuery, NamespaceQuery } from '../../../../schemas/config.ts'

const CONFIG_ERRORS = errors(400, 401, 404, 422, 500, 502, 503)

/** How one kind of configuration differs from the others; the routes themselves are shared. */
export type VersionedConfigSpec<Body> = {
  kind: ConfigKind
  /** URL segment under /api/v1/config. */
  segment: string
  /** Operation id stem, e.g. "Instructions". */
  name: string
  /** Where the document sits in a full response: body, definitions, rules or budget. */
  payloadField: string
  publishBody: TSchema
  /** Shape of one version in lists and publish/activate answers. */
  versionResponse: TSchema
  /** Shape of GET by id. */
  fullResponse: TSchema
  /** Budgets fan out into one row per model, so their publish answers an array. */
  publishesMany: boolean
  /** Budgets are addressed by (namespace, model); the rest by namespace. */
  byModel: boolean
  /**
   * Validates beyond the schema (throwing ValidationError) and returns the rows to write; a
   * promise when the work goes off the event loop (a large tool bundle, decision 061).
   */
  toVersions: (body: Body, orgId: string) => NewConfigVersion[] | Promise<NewConfigVersion[]>
}

export function presentVersion(v: ConfigVersion, payloadField: string) {
  return {
    id: v.id,
    version: v.version,
    estimated_tokens: v.estimated_tokens,
    is_active: v.is_active,
    created_at: v.created_at,
    mode: v.mode,
    namespace: v.namespace,
    model_id: v.model_id,
    [payloadField]: v.document,
  }
}

/** Throws 422 with the document's problems, their pointers placed under `base` in the body. */
export function rejectProblems(problems: { pointer: string; message: string }[], base = ''): void {
  if (problems.length === 0) return
  throw new ValidationError(problems.map((p) => ({ in: 'body', pointer: `${base}${p.pointer}`, message: p.message })))
}

export const versionedConfigRoutes =
  <Body>(deps: AppDeps, spec: VersionedConfigSpec<Body>): FastifyPluginAsyncTypebox =>
  async (app) => {
    const base = `/api/v1/config/${spec.segment}`
    const scopeQuery = spec.byModel ? NamespaceModelQuery : NamespaceQuery
    const present = (v: ConfigVersion) => presentVersion(v, spec.payloadField)
    const common = { tags: ['configuration'], security: ApiKeySecurity }
    type ScopeQuery = { namespace?: string; model?: string }

    app.get(
      base,
      {
        schema: {
          ...common,
          operationId: `listActive${spec.name}`,
          summary: `Active ${spec.segment} at one scope`,
          querystring: NamespaceQuery,
          response: { 200: Type.Array(spec.versionResponse), ...CONFIG_ERRORS },
        },
      },
      async (request) => deps.store.config.activeAt(orgOf(request), spec.kind, request.query.namespace ?? null).map(present),
    )

    app.post(
      base,
      {
        schema: {
          ...common,
          operationId: `publish${spec.name}`,
          summary: `Publish a new active version of ${spec.segment}`,
          body: spec.publishBody,
          response: {
            200: spec.publishesMany ? Type.Array(spec.versionResponse) : spec.versionResponse,
            ...CONFIG_ERRORS,
            // A body over the app's limit (DEFAULT_BODY_LIMIT) is refused before it is read as a document.
            ...errors(413),
          },
        },
      },
      async (request) => {
        const published = deps.store.config.publish(await spec.toVersions(request.body as Body, orgOf(request))).map(present)
        return spec.publishesMany ? published : published[0]
      },
    )

    app.delete(
      `${base}/active`,
      {
        schema: {
          ...common,
          operationId: `withdraw${spec.name}`,
          summary: `Withdraw the active ${spec.segment} override at one scope`,
          querystring: scopeQuery,
          response: { 200: Type.Ref(DeactivateResponse), ...CONFIG_ERRORS },
        },
      },
      async (request) => {
        const q = request.query as ScopeQuery
        return { was_active: deps.store.config.withdraw(orgOf(request), spec.kind, q.namespace ?? null, q.model ?? null) }
      },
    )

    app.get(
      `${base}/versions`,
      {
        schema: {
          ...common,
          operationId: `listVersionsOf${spec.name}`,
          summary: `Every version of ${spec.segment} at one scope, newest first`,
          querystring: scopeQuery,
          response: { 200: Type.Array(spec.versionResponse), ...CONFIG_ERRORS },
        },
      },
      async (request) => {
        const q = request.query as ScopeQuery
        return deps.store.config.versions(orgOf(request), spec.kind, q.namespace ?? null, q.model ?? null).map(present)
      },
    )

    const findVersion = (orgId: string, id: string) => {
      const version = deps.store.config.get(orgId, spec.kind, id)
      if (!version) throw new NotFoundError(`${spec.segment} version ${id} not found`)
      return version
    }

    app.get(
      `${base}/:id`,
      {
        schema: {
          ...common,
          operationId: `get${spec.name}Version`,
          summary: `One version of ${spec.segment}, with its document`,
          params: ConfigIdParams,
          response: { 200: spec.fullResponse, ...CONFIG_ERRORS },
        },
      },
      async (request) => present(findVersion(orgOf(request), request.params.id)),
    )

    app.post(
      `${base}/:id/activate`,
      {
        schema: {
          ...common,
          operationId: `activate${spec.name}Version`,
          summary: `Make one version of ${spec.segment} the active one of its scope`,
          params: ConfigIdParams,
          response: { 200: spec.versionResponse, ...CONFIG_ERRORS },
        },
      },
      async (request) => {
        const orgId = orgOf(request)
        const activated = deps.store.config.activate(orgId, spec.kind, request.params.id)
        if (!activated) throw new NotFoundError(`${spec.segment} version ${request.params.id} not found`)
        return present(activated)
      },
    )
  }
