import { Type, type Static } from '@sinclair/typebox'
import { DateTime, Namespace, Nullable, StringEnum, TaggedUnion, UserMetadata, Uuid } from './common.ts'
import { ToolDefinition } from './config.ts'

const closed = { additionalProperties: false } as const
const TrustLevel = StringEnum(['trusted', 'customer_data', 'untrusted'])

export const SubmittedMedia = Type.Object(
  {
    mime: Type.String({ minLength: 1, description: 'Explicit MIME type.' }),
    data_base64: Type.String({ description: 'Standard base64, no data-URI prefix.' }),
    filename: Type.Optional(Nullable(Type.String())),
  },
  { ...closed, $id: 'SubmittedMedia' },
)

const MediaList = Type.Array(Type.Ref(SubmittedMedia), { maxItems: 20, description: 'At most 20 attachments per part.' })

export const SubmittedPart = TaggedUnion(
  'type',
  [
    Type.Object({ type: Type.Literal('prompt'), text: Type.Optional(Type.String()), media: Type.Optional(MediaList) }, closed),
    Type.Object(
      {
        type: Type.Literal('tool_result'),
        tool_use_id: Type.String({ minLength: 1 }),
        tool_name: Type.String({ minLength: 1 }),
        text: Type.Optional(Type.String()),
        is_error: Type.Optional(Type.Boolean()),
        trust: Type.Optional(TrustLevel),
        media: Type.Optional(MediaList),
      },
      closed,
    ),
  ],
  { $id: 'SubmittedPart' },
)

export const CreateResponseRequest = Type.Object(
  {
    model: Type.String({ minLength: 1, description: 'Catalogue name of an active model.' }),
    input: Type.Array(Type.Ref(SubmittedPart), { maxItems: 128 }),
    idempotency_key: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 128 }))),
    max_tokens: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 2_147_483_647 }))),
    reasoning_effort: Type.Optional(Nullable(StringEnum(['off', 'low', 'medium', 'high', 'x_high', 'max']))),
    retry_of: Type.Optional(Nullable(Uuid)),
    tools: Type.Optional(Nullable(Type.Array(Type.Ref(ToolDefinition)))),
    user_metadata: Type.Optional(UserMetadata),
  },
  { ...closed, $id: 'CreateResponseRequest' },
)
export type CreateResponseRequest = Static<typeof CreateResponseRequest>

const Usage = Type.Object({
  input_tokens: Type.Integer({ minimum: 0 }),
  output_tokens: Type.Integer({ minimum: 0 }),
  reasoning_tokens: Type.Integer({ minimum: 0 }),
  cache_read_tokens: Type.Integer({ minimum: 0 }),
  cache_write_tokens: Type.Integer({ minimum: 0 }),
})

export const RunInspection = Type.Object(
  {
    id: Uuid,
    chat_id: Uuid,
    model: Type.String(),
    namespace: Nullable(Namespace),
    origin: StringEnum(['customer', 'compaction']),
    status: StringEnum(['running', 'succeeded', 'failed', 'cancelled']),
    is_live: Type.Boolean(),
    created_at: DateTime,
    completed_at: Nullable(DateTime),
    settled_at: Nullable(DateTime),
    cost: Nullable(Type.String()),
    error: Nullable(Type.String()),
    latency_ms: Nullable(Type.Integer()),
    provider_request_id: Nullable(Type.String()),
    usage: Nullable(Usage),
    manifest: Type.Record(Type.String(), Type.Unknown(), { description: 'Context and configuration the run used.' }),
  },
  { $id: 'RunInspection' },
)

export const RunParams = Type.Object({ run_id: Uuid })

export const RESPONSE_SCHEMAS = [SubmittedMedia, SubmittedPart, CreateResponseRequest, RunInspection]
