import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { ContextBudget, RetentionRules } from '../../../../../domain/config/config-types.ts'
import { PLATFORM_DEFAULT_BUDGET, PLATFORM_DEFAULT_RETENTION } from '../../../../../domain/config/platform-defaults.ts'
import { validateRetentionRules } from '../../../../../domain/config/validate-retention-rules.ts'
import { estimateTokens } from '../../../../../domain/tokens/estimate-tokens.ts'
import { createConfigResolver } from '../../../../../store/config-resolution.ts'
import type { AppDeps } from '../../../../app-deps.ts'
import type { BodyWork } from '../../../../body-work/body-work.ts'
import { orgOf } from '../../../../plugins/auth.ts'
import { ApiKeySecurity, errors, Namespace } from '../../../../schemas/common.ts'
import {
  ConfigVersionResponse,
  ContextBudgetResponse,
  DefaultPoliciesResponse,
  InstructionResponse,
  NamespaceModelQuery,
  NamespaceQuery,
  PublishContextBudgetRequest,
  PublishInstructionRequest,
  PublishRetentionPolicyRequest,
  PublishToolsRequest,
  ResolvedBudget,
  ResolvedConfig,
  RetentionPolicyResponse,
  ToolSchemaResponse,
} from '../../../../schemas/config.ts'
import { rejectProblems, versionedConfigRoutes } from './versioned-config-routes.ts'

const CONFIG_ERRORS = errors(400, 401, 404, 422, 500, 502, 503)

export const configRoutes =
  (deps: AppDeps, options: { bodyWork: Pick<BodyWork, 'checkToolBundle'> }): FastifyPluginAsyncTypebox =>
  async (app) => {
    await app.register(
      versionedConfigRoutes<PublishInstructionRequest>(deps, {
        kind: 'instructions',
        segment: 'instructions',
        name: 'Instructions',
        payloadField: 'body',
        publishBody: Type.Ref(PublishInstructionRequest),
        versionResponse: Type.Ref(ConfigVersionResponse),
        fullResponse: Type.Ref(InstructionResponse),
        publishesMany: false,
        byModel: false,
        toVersions: (body, orgId) => [
          {
            orgId,
            kind: 'instructions',
            namespace: body.namespace ?? null,
            mode: body.mode,
            document: body.body,
            estimatedTokens: estimateTokens(body.body),
          },
        ],
      }),
    )

    await app.register(
      versionedConfigRoutes<PublishToolsRequest>(deps, {
        kind: 'tools',
        segment: 'tools',
        name: 'Tools',
        payloadField: 'definitions',
        publishBody: Type.Ref(PublishToolsRequest),
        versionResponse: Type.Ref(ConfigVersionResponse),
        fullResponse: Type.Ref(ToolSchemaResponse),
        publishesMany: false,
        byModel: false,
        // Checked, estimated and written out as JSON in one task, on the body-work pool's threads when
        // the bundle is large (2,000 tools held the event loop 0.1–1 s, issue 36; decision 061).
        toVersions: async (body, orgId) => {
          const checked = await options.bodyWork.checkToolBundle(body.definitions)
          rejectProblems(checked.problems)
          return [
            {
              orgId,
              kind: 'tools',
              namespace: body.namespace ?? null,
              mode: body.mode,
              document: body.definitions,
              documentJson: checked.documentJson,
              estimatedTokens: checked.estimatedTokens,
            },
          ]
        },
      }),
    )

    await app.register(
      versionedConfigRoutes<PublishRetentionPolicyRequest>(deps, {
        kind: 'retention',
        segment: 'retention',
        name: 'RetentionPolicy',
        payloadField: 'rules',
        publishBody: Type.Ref(PublishRetentionPolicyRequest),
        versionResponse: Type.Ref(RetentionPolicyResponse),
        fullResponse: Type.Ref(RetentionPolicyResponse),
        publishesMany: false,
        byModel: false,
        toVersions: (body, orgId) => {
          rejectProblems(validateRetentionRules(body.rules as RetentionRules), '/rules')
          // Retention shapes what is replayed; it costs no tokens of its own (docs/guide/namespaces-and-configuration.md).
          return [
            { orgId, kind: 'retention', namespace: body.namespace ?? null, mode: null, document: body.rules, estimatedTokens: 0 },
          ]
        },
      }),
    )

    await app.register(
      versionedConfigRoutes<PublishContextBudgetRequest>(deps, {
        kind: 'budget',
        segment: 'budgets',
        name: 'Budget',
        payloadField: 'budget',
        publishBody: Type.Ref(PublishContextBudgetRequest),
        versionResponse: Type.Ref(ContextBudgetResponse),
        fullResponse: Type.Ref(ContextBudgetResponse),
        publishesMany: true,
        byModel: true,
        toVersions: (body, orgId) => {
          // A budget for a model the catalogue does not have could never apply: 422 with a pointer (decision 017).
          const known = new Set(deps.catalogue.list().map((m) => m.id))
          rejectProblems(
            (body.model_ids ?? []).flatMap((id, i) =>
              known.has(id) ? [] : [{ pointer: `/${i}`, message: `no model with id ${id} in the catalogue (GET /api/v1/models lists them)` }],
            ),
            '/model_ids',
          )
          const models = body.model_ids && body.model_ids.length > 0 ? [...new Set(body.model_ids)] : [null]
          return models.map((modelId) => ({
            orgId,
            kind: 'budget' as const,
            namespace: body.namespace ?? null,
            modelId,
            mode: null,
            document: body.budget as ContextBudget,
            estimatedTokens: 0,
          }))
        },
      }),
    )

    const resolver = createConfigResolver(deps.store)
    const common = { tags: ['configuration'], security: ApiKeySecurity }

    app.get(
      '/api/v1/config/defaults',
      {
        schema: {
          ...common,
          operationId: 'getDefaultPolicies',
          summary: 'Platform default budget and retention documents',
          response: { 200: Type.Ref(DefaultPoliciesResponse), ...CONFIG_ERRORS },
        },
      },
      async () => ({ budget: PLATFORM_DEFAULT_BUDGET, retention: PLATFORM_DEFAULT_RETENTION }),
    )

    app.get(
      '/api/v1/config/namespaces',
      {
        schema: {
          ...common,
          operationId: 'listConfigNamespaces',
          summary: 'Namespaces used by chats or configuration, ascending',
          response: { 200: Type.Array(Namespace), ...CONFIG_ERRORS },
        },
      },
      async (request) => {
        const orgId = orgOf(request)
        const used = new Set([...deps.store.chats.namespaces(orgId), ...deps.store.config.namespaces(orgId)])
        return [...used].sort()
      },
    )

    app.get(
      '/api/v1/config/resolved',
      {
        schema: {
          ...common,
          operationId: 'resolveConfig',
          summary: 'Instructions, tools and retention as a chat in this namespace receives them',
          querystring: NamespaceQuery,
          response: { 200: Type.Ref(ResolvedConfig), ...CONFIG_ERRORS },
        },
      },
      async (request) => resolver.resolveConfig(orgOf(request), request.query.namespace ?? null),
    )

    app.get(
      '/api/v1/config/resolved-budget',
      {
        schema: {
          ...common,
          operationId: 'resolveBudget',
          summary: 'The context budget in force for a namespace and model',
          querystring: NamespaceModelQuery,
          response: { 200: Type.Ref(ResolvedBudget), ...CONFIG_ERRORS },
        },
      },
      async (request) => {
        const namespace = request.query.namespace ?? null
        const modelId = request.query.model ?? null
        return { ...resolver.resolveBudget(orgOf(request), namespace, modelId), model_id: modelId, namespace }
      },
    )
  }
