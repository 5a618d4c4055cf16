import { Type, type Static } from '@sinclair/typebox'
import { DateTime, Namespace, Nullable, StringEnum, TaggedUnion, Uuid } from './common.ts'

const closed = { additionalProperties: false } as const
const Int32Max = 2_147_483_647

const ConfigMode = StringEnum(['append', 'replace'])
const TokenEstimate = Type.Integer({ minimum: 0, maximum: Int32Max })
const RecencyThreshold = Type.Number({ minimum: 0, maximum: 1, description: 'Share of the history budget, 0-1.' })
const TruncationShape = StringEnum(['head', 'tail', 'head_and_tail'])

export const ToolDefinition = Type.Object(
  {
    name: Type.String({ description: 'Unique within a bundle; 1-64 of a-z A-Z 0-9 _ -.' }),
    input_schema: Type.Record(Type.String(), Type.Unknown(), {
      description: 'JSON Schema of the arguments object; local $ref only.',
    }),
    description: Type.Optional(Nullable(Type.String())),
    strict: Type.Optional(Nullable(Type.Boolean())),
  },
  { ...closed, $id: 'ToolDefinition' },
)

const EagerCompactionOff = Type.Object({ mode: Type.Literal('off') }, { ...closed, $id: 'EagerCompactionOff' })
const EagerCompactionAtFill = Type.Object(
  { mode: Type.Literal('at_fill'), at: Type.Number({ exclusiveMinimum: 0, maximum: 1 }) },
  { ...closed, $id: 'EagerCompactionAtFill' },
)

export const ContextBudget = Type.Object(
  {
    version: Type.Literal(3),
    headroom: Type.Number({ minimum: 0, maximum: 0.9, description: 'Share of the context window kept free.' }),
    history_mode: Type.Optional(StringEnum(['summarize', 'drop_oldest'])),
    eager_compaction: Type.Optional(TaggedUnion('mode', [EagerCompactionOff, EagerCompactionAtFill])),
    max_history_tokens: Type.Optional(Nullable(Type.Integer({ minimum: 32000, maximum: Int32Max }))),
  },
  { ...closed, $id: 'ContextBudget' },
)

const TruncationKeep = Type.Object({ mode: Type.Literal('keep') }, { ...closed, $id: 'TruncationKeep' })
const TruncationAlways = Type.Object(
  { mode: Type.Literal('always'), to: TokenEstimate, keep: Type.Optional(TruncationShape) },
  { ...closed, $id: 'TruncationAlways' },
)
const TruncationOver = Type.Object(
  { mode: Type.Literal('over'), over: TokenEstimate, to: TokenEstimate, keep: Type.Optional(TruncationShape) },
  { ...closed, $id: 'TruncationOver' },
)

export const Truncation = TaggedUnion('mode', [TruncationKeep, TruncationAlways, TruncationOver], { $id: 'Truncation' })

const ToolTreatmentFields = {
  arguments: Type.Optional(Type.Ref(Truncation)),
  result: Type.Optional(Type.Ref(Truncation)),
}

export const RetentionRules = Type.Object(
  {
    version: Type.Integer({ minimum: 0, maximum: Int32Max, description: 'Schema version; 1 is supported.' }),
    media: Type.Optional(
      Type.Object(
        {
          default: Type.Optional(RecencyThreshold),
          rules: Type.Optional(
            Type.Array(Type.Object({ mime: Type.String({ minLength: 1 }), retain: RecencyThreshold }, closed)),
          ),
        },
        closed,
      ),
    ),
    tools: Type.Optional(
      Type.Object(
        {
          default: Type.Optional(Type.Object(ToolTreatmentFields, closed)),
          rules: Type.Optional(
            Type.Array(Type.Object({ tool: Type.String({ minLength: 1 }), ...ToolTreatmentFields }, closed)),
          ),
          errors: Type.Optional(Nullable(Type.Ref(Truncation))),
          mark_truncations: Type.Optional(Type.Boolean()),
        },
        closed,
      ),
    ),
    text: Type.Optional(
      Type.Object(
        { prompt: Type.Optional(Type.Ref(Truncation)), message: Type.Optional(Type.Ref(Truncation)) },
        closed,
      ),
    ),
    reasoning: Type.Optional(RecencyThreshold),
    verbatim_within: Type.Optional(RecencyThreshold),
    anchor_parts: Type.Optional(Type.Integer({ minimum: 0, maximum: Int32Max })),
  },
  { ...closed, $id: 'RetentionRules' },
)

const versionFields = {
  id: Uuid,
  version: Type.Integer(),
  estimated_tokens: TokenEstimate,
  is_active: Type.Boolean(),
  created_at: DateTime,
  mode: Type.Optional(Nullable(ConfigMode)),
  namespace: Type.Optional(Nullable(Namespace)),
}

export const ConfigVersionResponse = Type.Object(versionFields, { $id: 'ConfigVersionResponse' })
export const InstructionResponse = Type.Object(
  { ...versionFields, body: Type.String() },
  { $id: 'InstructionResponse' },
)
export const ToolSchemaResponse = Type.Object(
  { ...versionFields, definitions: Type.Array(Type.Ref(ToolDefinition)) },
  { $id: 'ToolSchemaResponse' },
)
export const RetentionPolicyResponse = Type.Object(
  { ...versionFields, rules: Type.Ref(RetentionRules) },
  { $id: 'RetentionPolicyResponse' },
)
export const ContextBudgetResponse = Type.Object(
  { ...versionFields, budget: Type.Ref(ContextBudget), model_id: Type.Optional(Nullable(Uuid)) },
  { $id: 'ContextBudgetResponse' },
)

export const PublishInstructionRequest = Type.Object(
  { body: Type.String(), mode: ConfigMode, namespace: Type.Optional(Nullable(Namespace)) },
  { ...closed, $id: 'PublishInstructionRequest' },
)
export const PublishToolsRequest = Type.Object(
  { definitions: Type.Array(Type.Ref(ToolDefinition)), mode: ConfigMode, namespace: Type.Optional(Nullable(Namespace)) },
  { ...closed, $id: 'PublishToolsRequest' },
)
export const PublishRetentionPolicyRequest = Type.Object(
  { rules: Type.Ref(RetentionRules), namespace: Type.Optional(Nullable(Namespace)) },
  { ...closed, $id: 'PublishRetentionPolicyRequest' },
)
export const PublishContextBudgetRequest = Type.Object(
  {
    budget: Type.Ref(ContextBudget),
    model_ids: Type.Optional(Type.Array(Uuid, { description: 'One version row per model; empty or absent publishes the scope default.' })),
    namespace: Type.Optional(Nullable(Namespace)),
  },
  { ...closed, $id: 'PublishContextBudgetRequest' },
)

export const DeactivateResponse = Type.Object({ was_active: Type.Boolean() }, { $id: 'DeactivateResponse' })
export const DefaultPoliciesResponse = Type.Object(
  { budget: Type.Ref(ContextBudget), retention: Type.Ref(RetentionRules) },
  { $id: 'DefaultPoliciesResponse' },
)

export const ConfigWarning = Type.Union(
  [
    Type.Object({ code: Type.Literal('tool_shadowed'), name: Type.String(), namespace: Nullable(Namespace) }),
    Type.Object({ code: Type.Literal('global_instruction_replaced'), namespace: Namespace }),
    Type.Object({
      code: Type.Literal('global_tools_replaced'),
      namespace: Namespace,
      dropped: Type.Integer({ minimum: 0 }),
    }),
    Type.Object({
      code: Type.Literal('retention_policy_overridden'),
      namespace: Nullable(Namespace),
      displaced: Nullable(Namespace),
    }),
    Type.Object({
      code: Type.Literal('context_budget_resolved_at'),
      namespace: Nullable(Namespace),
      tagged_model: Nullable(Uuid),
    }),
    Type.Object({
      code: Type.Literal('history_dropped'),
      dropped: Type.Integer(),
      start_ordinal: Type.Integer(),
      end_ordinal: Type.Integer(),
      history_mode: Type.Optional(StringEnum(['summarize', 'drop_oldest'])),
      message: Type.Optional(Type.String({ description: 'Set when summaries were asked for but the oldest history was dropped instead.' })),
    }),
  ],
  { $id: 'ConfigWarning' },
)

export const ResolvedConfig = Type.Object(
  {
    estimated_tokens: TokenEstimate,
    instructions: Nullable(Type.String()),
    namespace: Nullable(Namespace),
    retention: Type.Ref(RetentionRules),
    tools: Type.Array(Type.Ref(ToolDefinition)),
    versions: Type.Object({
      instructions: Type.Array(Uuid),
      retention_policy: Nullable(Uuid),
      tools: Type.Array(Uuid),
    }),
    warnings: Type.Array(Type.Ref(ConfigWarning)),
  },
  { $id: 'ResolvedConfig' },
)

export const BudgetSource = Type.Union(
  [
    Type.Object({ kind: Type.Literal('platform_default') }),
    Type.Object({
      kind: Type.Literal('policy'),
      id: Uuid,
      namespace: Nullable(Namespace),
      tagged_model: Nullable(Uuid),
    }),
  ],
  { $id: 'BudgetSource' },
)

export const ResolvedBudget = Type.Object(
  {
    budget: Type.Ref(ContextBudget),
    source: Type.Ref(BudgetSource),
    warnings: Type.Array(Type.Ref(ConfigWarning)),
    model_id: Nullable(Uuid),
    namespace: Nullable(Namespace),
  },
  { $id: 'ResolvedBudget' },
)

export const NamespaceQuery = Type.Object({ namespace: Type.Optional(Namespace) })
export const NamespaceModelQuery = Type.Object({ namespace: Type.Optional(Namespace), model: Type.Optional(Uuid) })
export const ConfigIdParams = Type.Object({ id: Uuid })

export type PublishInstructionRequest = Static<typeof PublishInstructionRequest>
export type PublishToolsRequest = Static<typeof PublishToolsRequest>
export type PublishRetentionPolicyRequest = Static<typeof PublishRetentionPolicyRequest>
export type PublishContextBudgetRequest = Static<typeof PublishContextBudgetRequest>

export const CONFIG_SCHEMAS = [
  ToolDefinition,
  EagerCompactionOff,
  EagerCompactionAtFill,
  ContextBudget,
  TruncationKeep,
  TruncationAlways,
  TruncationOver,
  Truncation,
  RetentionRules,
  ConfigVersionResponse,
  InstructionResponse,
  ToolSchemaResponse,
  RetentionPolicyResponse,
  ContextBudgetResponse,
  PublishInstructionRequest,
  PublishToolsRequest,
  PublishRetentionPolicyRequest,
  PublishContextBudgetRequest,
  DeactivateResponse,
  DefaultPoliciesResponse,
  ConfigWarning,
  ResolvedConfig,
  BudgetSource,
  ResolvedBudget,
]
