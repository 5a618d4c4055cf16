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
      tombstone_reason: Type.Optional(
        Nullable({
          ...TombstoneReason,
          description: 'Set on a result the server wrote to close a call nobody answered: `abandoned` (the next turn did not answer it), `cancelled` (its run was cancelled or failed), `expired` (older than 24 h).',
        }),
      ),
    }),
    Type.Object({
      type: Type.Literal('message'),
      text: Type.String(),
      refusal: Type.Optional(Nullable(Type.String({ description: 'What the model said instead of answering, when it refused.' }))),
    }),
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
    data_base64: Type.Optional(Nullable(Type.String({ description: 'The bytes, base64; only with `include=full`.' }))),
  },
  { $id: 'HistoryMedia' },
)

export const HistoryPart = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    ordinal: Type.Integer({ description: "The part's place in the ledger: increasing, never renumbered, not contiguous. Page with first_ordinal / last_ordinal." }),
    created_at: DateTime,
    role: Type.Union([Type.Literal('user'), Type.Literal('assistant')]),
    part: Type.Ref(HistoryBody),
    user_metadata: Type.Unknown({ description: 'The user_metadata of the turn that wrote the part.' }),
    media: Type.Optional(Nullable(Type.Array(Type.Ref(HistoryMedia)))),
  },
  { $id: 'HistoryPart' },
)

export const HistoryPageResponse = Type.Object(
  {
    data: Type.Array(Type.Ref(HistoryPart), { description: 'Oldest first, whichever direction was paged.' }),
    first_ordinal: Nullable(Type.Integer({ description: 'Send as before_ordinal for the older page.' })),
    last_ordinal: Nullable(Type.Integer({ description: 'Send as after_ordinal for the newer page.' })),
    has_more: Type.Boolean({ description: 'More parts lie beyond this page in the direction paged.' }),
  },
  { $id: 'HistoryPageResponse' },
)

export const HistoryInclude = StringEnum(['stubs', 'none', 'full'])
export const HistoryQuery = Type.Object(
  {
    before_ordinal: Type.Optional(Type.Integer({ description: 'Parts immediately older than this ordinal.' })),
    after_ordinal: Type.Optional(Type.Integer({ description: 'Parts immediately newer than this ordinal.' })),
    limit: Type.Optional(Type.Integer({ description: '1-100, or 1-20 with include=full; clamped.' })),
    include: Type.Optional({ ...HistoryInclude, description: '`stubs` (default): media described without bytes; `none`: no media; `full`: media with their bytes.' }),
  },
  { additionalProperties: false },
)
export type HistoryQuery = Static<typeof HistoryQuery>
