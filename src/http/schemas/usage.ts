import { Type, type Static } from '@sinclair/typebox'
import { DateTime, Namespace, Nullable, StringEnum, Uuid } from './common.ts'

const EntryType = StringEnum(['usage', 'compaction', 'topup', 'refund', 'adjustment', 'promotional_credit'])
const Dimension = StringEnum(['model', 'namespace', 'api_key', 'entry_type', 'organisation', 'run'])
const Bin = StringEnum(['hour', 'day'])

export const UsageQuery = Type.Object({
  range: StringEnum(['24h', '7d', '30d', '90d']),
  bin: Type.Optional(Bin),
  group_by: Type.Optional(Dimension),
  namespace: Type.Optional(Namespace),
})
export type UsageQuery = Static<typeof UsageQuery>

export const UsageGroup = Type.Union(
  [
    Type.Object({ dimension: Type.Literal('model'), model_id: Nullable(Uuid), model_name: Nullable(Type.String()) }),
    Type.Object({ dimension: Type.Literal('namespace'), namespace: Nullable(Namespace) }),
    Type.Object({ dimension: Type.Literal('api_key'), api_key_id: Nullable(Uuid) }),
    Type.Object({
      dimension: Type.Literal('organisation'),
      organisation_id: Uuid,
      name: Nullable(Type.String()),
      slug: Nullable(Type.String()),
    }),
    Type.Object({ dimension: Type.Literal('entry_type'), entry_type: EntryType }),
    Type.Object({
      dimension: Type.Literal('run'),
      entry_type: EntryType,
      run_id: Nullable(Uuid),
      api_key_id: Nullable(Uuid),
      model_name: Nullable(Type.String()),
      namespace: Nullable(Namespace),
      last_occurred_at: Nullable(DateTime),
    }),
  ],
  { $id: 'UsageGroup' },
)

const Int64 = Type.Integer({ minimum: 0 })
export type UsageGroup = Static<typeof UsageGroup>

export const UsageRow = Type.Object(
  {
    runs: Int64,
    input_tokens: Int64,
    output_tokens: Int64,
    reasoning_tokens: Int64,
    cache_read_tokens: Int64,
    cache_write_tokens: Int64,
    cost: Type.String({ description: 'Model-call spend in USD; credits excluded.' }),
    bucket: Type.Optional(Nullable(DateTime)),
    group: Type.Optional(Nullable(Type.Ref(UsageGroup))),
  },
  { $id: 'UsageRow' },
)

export const UsageReport = Type.Object(
  {
    rows: Type.Array(Type.Ref(UsageRow)),
    window: Type.Object({ from: DateTime, to: DateTime }),
    cached: Type.Boolean(),
    bin: Type.Optional(Nullable(Bin)),
    group_by: Type.Optional(Nullable(Dimension)),
    namespace: Type.Optional(Nullable(Namespace)),
  },
  { $id: 'UsageReport' },
)

export const USAGE_SCHEMAS = [UsageGroup, UsageRow, UsageReport]
