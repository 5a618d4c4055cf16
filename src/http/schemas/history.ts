import { Type, type Static } from '@sinclair/typebox'
import { DateTime, Nullable, StringEnum } from './common.ts'

const TrustLevel = Type.Union([Type.Literal('trusted'), Type.Literal('customer_data'), Type.Literal('untrusted')])
const TombstoneReason = Type.Union([Type.Literal('abandoned'), Type.Literal('cancelled'), Type.Literal('expired')])

export const HistoryBody = Type.Union(
  [
    Type.Object({ type: Type.Literal('prompt'), text: Type.String() }),
    Type.Object({
      type: Type.Literal('tool_result'),
      text: Type.String(),
      is_error: Type.Boolean(),
      tool_name: Type.String(),
      tool_use_id: Type.String(),
      trust: TrustLevel,
      tombstone_reason: Type.Optional(Nullable(TombstoneReason)),
    }),
    Type.Object({ type: Type.Literal('message'), text: Type.String(), refusal: Type.Optional(Nullable(Type.String())) }),
    Type.Object({ type: Type.Literal('reasoning'), text: Type.String() }),
    Type.Object({
      type: Type.Literal('tool_call'),
      arguments: Type.String({ description: 'JSON-encoded arguments object.' }),
      tool_name: Type.String(),
      tool_use_id: Type.String(),
    }),
  ],
  { $id: 'HistoryBody' },
)

export const HistoryMedia = Type.Object(
  {
    media_id: Type.String({ format: 'uuid' }),
    mime: Type.String(),
    byte_len: Type.Integer({ minimum: 0 }),
    filename: Type.Optional(Nullable(Type.String())),
    width: Type.Optional(Nullable(Type.Integer({ minimum: 0 }))),
    height: Type.Optional(Nullable(Type.Integer({ minimum: 0 }))),
    page_count: Type.Optional(Nullable(Type.Integer({ minimum: 0 }))),
    data_base64: Type.Optional(Nullable(Type.String())),
  },
  { $id: 'HistoryMedia' },
)

export const HistoryPart = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    ordinal: Type.Integer(),
    created_at: DateTime,
    role: Type.Union([Type.Literal('user'), Type.Literal('assistant')]),
    part: Type.Ref(HistoryBody),
    user_metadata: Type.Unknown(),
    media: Type.Optional(Nullable(Type.Array(Type.Ref(HistoryMedia)))),
  },
  { $id: 'HistoryPart' },
)

export const HistoryPageResponse = Type.Object(
  {
    data: Type.Array(Type.Ref(HistoryPart), { description: 'Oldest first, whichever direction was paged.' }),
    first_ordinal: Nullable(Type.Integer()),
    last_ordinal: Nullable(Type.Integer()),
    has_more: Type.Boolean(),
  },
  { $id: 'HistoryPageResponse' },
)

export const HistoryInclude = StringEnum(['stubs', 'none', 'full'])
export const HistoryQuery = Type.Object(
  {
    before_ordinal: Type.Optional(Type.Integer({ description: 'Parts immediately older than this ordinal.' })),
    after_ordinal: Type.Optional(Type.Integer({ description: 'Parts immediately newer than this ordinal.' })),
    limit: Type.Optional(Type.Integer({ description: '1-100, or 1-20 with include=full; clamped.' })),
    include: Type.Optional(HistoryInclude),
  },
  { additionalProperties: false },
)
export type HistoryQuery = Static<typeof HistoryQuery>
