import { Type, type Static } from '@sinclair/typebox'
import { DateTime, Namespace, Nullable, StringEnum, TaggedUnion, Uuid } from './common.ts'
import { ToolDefinition } from './config.ts'

const closed = { additionalProperties: false } as const
const TrustLevel = StringEnum(['trusted', 'customer_data', 'untrusted'], {
  description:
    '`customer_data` (default): stored as sent, text over 1 MiB is refused; `trusted`: stored as sent; `untrusted`: cut to 256 KiB, control characters removed, and packed inside delimiters that mark it as data, not instructions.',
})

export const SubmittedMedia = Type.Object(
  {
    mime: Type.String({ minLength: 1, description: 'Explicit MIME type.' }),
    data_base64: Type.String({ description: 'Standard base64, no data-URI prefix.' }),
    filename: Type.Optional(Nullable(Type.String())),
  },
  { ...closed, $id: 'SubmittedMedia' },
)

const MediaList = Type.Array(Type.Ref(SubmittedMedia), { maxItems: 20, description: 'At most 20 attachments per part.' })

export const PromptPart = Type.Object(
  { type: Type.Literal('prompt'), text: Type.Optional(Type.String({ description: 'What the user says.' })), media: Type.Optional(MediaList) },
  { ...closed, $id: 'PromptPart', description: 'A user message, with optional attachments.' },
)

export const ToolResultPart = Type.Object(
  {
    type: Type.Literal('tool_result'),
    tool_use_id: Type.String({ minLength: 1, description: 'A pending call of this chat: from `done.pending_tool_calls` or a `block_start` of kind `tool_call`.' }),
    tool_name: Type.String({ minLength: 1 }),
    text: Type.Optional(Type.String({ description: 'The result, as the model will read it.' })),
    is_error: Type.Optional(Type.Boolean({ description: 'The call failed; `text` says how.' })),
    trust: Type.Optional(TrustLevel),
    media: Type.Optional(MediaList),
  },
  { ...closed, $id: 'ToolResultPart', description: 'The answer to a tool call of the previous run.' },
)

export const SubmittedPart = TaggedUnion('type', [PromptPart, ToolResultPart], { $id: 'SubmittedPart' })

/** A per-turn system instruction is bounded as a published one's text is not: it comes with every turn. */
export const MAX_TURN_INSTRUCTIONS_CHARS = 262_144

export const ToolChoiceTool = Type.Object(
  { type: Type.Literal('tool'), name: Type.String({ minLength: 1, maxLength: 64, description: 'A tool the turn offers (configured or sent with it).' }) },
  { ...closed, $id: 'ToolChoiceTool', description: 'The model must call this tool.' },
)
export const ToolChoice = Type.Union([StringEnum(['auto', 'none', 'required']), Type.Ref(ToolChoiceTool)], {
  $id: 'ToolChoice',
  description: '`auto` (the default): the model decides; `none`: it may not call a tool; `required`: it must call one; `{"type":"tool","name":…}`: it must call that one. `required` and a named tool need the turn to offer tools.',
})

export const ResponseFormatText = Type.Object({ type: Type.Literal('text') }, { ...closed, $id: 'ResponseFormatText', description: 'Free text (the default).' })
export const ResponseFormatJsonObject = Type.Object(
  { type: Type.Literal('json_object') },
  { ...closed, $id: 'ResponseFormatJsonObject', description: 'One JSON object, no schema: the vendor\'s JSON mode.' },
)
export const ResponseFormatJsonSchema = Type.Object(
  {
    type: Type.Literal('json_schema'),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: '^[a-zA-Z0-9_-]+$', description: 'The schema\'s name, for vendors that take one.' })),
    description: Type.Optional(Type.String({ maxLength: 1024 })),
    schema: Type.Record(Type.String(), Type.Unknown(), { description: 'A JSON Schema (draft 2020-12 or 07) the answer must follow: an object schema.' }),
  },
  { ...closed, $id: 'ResponseFormatJsonSchema', description: 'JSON that follows `schema`, translated to each vendor\'s structured output.' },
)
export const ResponseFormat = TaggedUnion('type', [ResponseFormatText, ResponseFormatJsonObject, ResponseFormatJsonSchema], {
  $id: 'ResponseFormat',
  description: 'The shape of the answer\'s text (docs/guide/turn-options.md).',
})

export const CreateResponseRequest = Type.Object(
  {
    model: Type.String({ minLength: 1, description: 'The catalogue `name` of an active model, e.g. `sandbox/echo` (not the vendor\'s spelling).' }),
    input: Type.Array(Type.Ref(SubmittedPart), {
      maxItems: 128,
      description: 'Prompts and tool results to append, in order; empty (`[]`) with `retry_of`.',
    }),
    idempotency_key: Type.Optional(
      Nullable(
        Type.String({
          minLength: 1,
          maxLength: 128,
          description: 'Makes the submission safe to send again: reused within 24 h it answers 409 naming the first run (read that run, or its events at GET /api/v1/runs/{run_id}/events).',
        }),
      ),
    ),
    max_tokens: Type.Optional(
      Nullable(Type.Integer({ minimum: 1, maximum: 2_147_483_647, description: 'Upper bound on output (thinking included); lowered to the model\'s ceiling and to what the balance pays for, never raised.' })),
    ),
    reasoning_effort: Type.Optional(
      Nullable(StringEnum(['off', 'low', 'medium', 'high', 'x_high', 'max'], { description: 'A level the model does not support is coerced, with a `translation_warnings` entry.' })),
    ),
    retry_of: Type.Optional(Nullable(Type.String({ format: 'uuid', description: 'Retries this run: the latest failed customer run of the chat; send `input: []` and a new idempotency key.' }))),
    tools: Type.Optional(
      Nullable(Type.Array(Type.Ref(ToolDefinition), { description: 'Request-level tools: the nearest level, they shadow configured tools of the same name.' })),
    ),
    user_metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'JSON object of at most 1024 bytes, attached to every part the turn writes.' })),
    instructions: Type.Optional(
      Nullable(
        Type.String({
          maxLength: MAX_TURN_INSTRUCTIONS_CHARS,
          description: 'A system instruction for this turn only, sent after the configured instructions of the chat\'s namespace and counted with them.',
        }),
      ),
    ),
    temperature: Type.Optional(
      Nullable(Type.Number({ minimum: 0, maximum: 2, description: 'Sampling temperature; lowered to the vendor\'s ceiling (Anthropic: 1) with a `translation_warnings` entry.' })),
    ),
    top_p: Type.Optional(Nullable(Type.Number({ minimum: 0, maximum: 1, description: 'Nucleus sampling: the share of probability mass the next token is drawn from.' }))),
    tool_choice: Type.Optional(Nullable(Type.Ref(ToolChoice))),
    response_format: Type.Optional(Nullable(Type.Ref(ResponseFormat))),
    stream: Type.Optional(
      Type.Boolean({
        description: 'false: answer once the run is settled, with one JSON document (TurnAnswer) holding what the stream would have sent; true or absent: stream it.',
      }),
    ),
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
    origin: StringEnum(['customer', 'compaction'], { description: '`compaction` runs summarise history; they are billed though no customer made them.' }),
    status: StringEnum(['running', 'succeeded', 'failed', 'cancelled'], { description: 'The durable answer, e.g. after a dropped stream.' }),
    is_live: Type.Boolean({ description: 'A running run whose owning node still renews its lease; a running run that is not live will be settled as interrupted.' }),
    created_at: DateTime,
    completed_at: Nullable(DateTime),
    settled_at: Nullable(DateTime),
    cost: Nullable(Type.String({ description: 'Money in USD, a decimal string; null while running or until settled.' })),
    error: Nullable(Type.String({ description: 'Why a failed run failed, e.g. `interrupted`.' })),
    latency_ms: Nullable(Type.Integer()),
    provider_request_id: Nullable(Type.String()),
    usage: Nullable({ ...Usage, description: 'Null while in flight, or when the vendor reported none (missing counts are not zero).' }),
    manifest: Type.Record(Type.String(), Type.Unknown(), { description: 'Context and configuration the run used.' }),
    token_estimate: Nullable(
      Type.Object(
        {
          estimated: Type.Integer({ minimum: 0, description: "Parley's estimate of the input, by its one estimator." }),
          correction: Type.Number({ minimum: 0, description: "The model's learned ratio of the vendor's count to that estimate, when the run was packed." }),
          corrected: Type.Integer({ minimum: 0, description: 'The estimate times the correction: the input the request was fitted to the window as.' }),
          reported: Nullable(Type.Integer({ minimum: 0, description: "The vendor's own count (input, cache reads and cache writes); null until it reports one, or when it reported none." })),
        },
        { description: 'Estimated input against what the vendor reported; null for a run recorded without an estimate.' },
      ),
    ),
  },
  { $id: 'RunInspection' },
)

export const RunParams = Type.Object({ run_id: Uuid })

export const RESPONSE_SCHEMAS = [
  SubmittedMedia,
  PromptPart,
  ToolResultPart,
  SubmittedPart,
  ToolChoiceTool,
  ToolChoice,
  ResponseFormatText,
  ResponseFormatJsonObject,
  ResponseFormatJsonSchema,
  ResponseFormat,
  CreateResponseRequest,
  RunInspection,
]
