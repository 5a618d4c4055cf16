import { Type, type Static } from '@sinclair/typebox'
import { Nullable, StringEnum } from './common.ts'
import { OPENAI_ERROR_TYPES, openaiCodesOf } from '../openai/openai-error.ts'

/**
 * The OpenAI Responses facade's request and answer shapes (docs/decisions/055-openai-facade.md,
 * docs/guide/openai-sdk.md). Requests are closed as OpenAI's are: an unknown parameter is a 400.
 * Answers are documented loosely (`additionalProperties`), since their items and events are OpenAI's
 * and fast-json-stringify must not drop what a client reads.
 */
const closed = { additionalProperties: false } as const
const open = { additionalProperties: true } as const

const InputText = Type.Object({ type: Type.Literal('input_text'), text: Type.String() }, closed)
const InputImage = Type.Object(
  {
    type: Type.Literal('input_image'),
    image_url: Type.Optional(Nullable(Type.String({ description: 'A `data:` URL with base64 bytes; Parley fetches no URL.' }))),
    file_id: Type.Optional(Nullable(Type.String())),
    detail: Type.Optional(StringEnum(['low', 'high', 'auto', 'original'])),
  },
  closed,
)
const InputFile = Type.Object(
  {
    type: Type.Literal('input_file'),
    file_data: Type.Optional(Type.String({ description: 'A `data:` URL, or bare base64 with `filename` naming the type.' })),
    filename: Type.Optional(Type.String()),
    file_url: Type.Optional(Type.String()),
    file_id: Type.Optional(Nullable(Type.String())),
  },
  closed,
)
const OutputText = Type.Object(
  { type: Type.Literal('output_text'), text: Type.String(), annotations: Type.Optional(Type.Array(Type.Unknown())), logprobs: Type.Optional(Type.Array(Type.Unknown())) },
  closed,
)
const Refusal = Type.Object({ type: Type.Literal('refusal'), refusal: Type.String() }, closed)
const MessageContent = Type.Union([Type.String(), Type.Array(Type.Union([InputText, InputImage, InputFile, OutputText, Refusal]), { maxItems: 128 })])

const MessageInput = Type.Object(
  {
    type: Type.Optional(Type.Literal('message')),
    role: StringEnum(['user', 'assistant', 'system', 'developer']),
    content: MessageContent,
    id: Type.Optional(Type.String()),
    status: Type.Optional(StringEnum(['in_progress', 'completed', 'incomplete'])),
    phase: Type.Optional(Nullable(Type.String())),
  },
  closed,
)
const FunctionCallInput = Type.Object(
  {
    type: Type.Literal('function_call'),
    call_id: Type.String({ minLength: 1 }),
    name: Type.String({ minLength: 1 }),
    arguments: Type.String(),
    id: Type.Optional(Type.String()),
    status: Type.Optional(StringEnum(['in_progress', 'completed', 'incomplete'])),
  },
  closed,
)
const FunctionCallOutputInput = Type.Object(
  {
    type: Type.Literal('function_call_output'),
    call_id: Type.String({ minLength: 1 }),
    output: Type.Union([Type.String(), Type.Array(Type.Union([InputText, InputImage, InputFile]), { maxItems: 128 })]),
    id: Type.Optional(Nullable(Type.String())),
    status: Type.Optional(Nullable(StringEnum(['in_progress', 'completed', 'incomplete']))),
  },
  closed,
)
const ReasoningInput = Type.Object(
  {
    type: Type.Literal('reasoning'),
    id: Type.Optional(Type.String()),
    summary: Type.Array(Type.Unknown()),
    content: Type.Optional(Type.Array(Type.Unknown())),
    encrypted_content: Type.Optional(Nullable(Type.String())),
    status: Type.Optional(StringEnum(['in_progress', 'completed', 'incomplete'])),
  },
  closed,
)
const CompactionInput = Type.Object(
  { type: Type.Literal('compaction'), encrypted_content: Type.String({ minLength: 1 }), id: Type.Optional(Type.String()) },
  { ...closed, description: 'A summary POST /v1/responses/compact made, carried back as history.' },
)
const ItemReference = Type.Object({ type: Type.Optional(Nullable(Type.Literal('item_reference'))), id: Type.String({ minLength: 1 }) }, closed)

export const OpenAIInputItem = Type.Union([MessageInput, FunctionCallInput, FunctionCallOutputInput, ReasoningInput, CompactionInput, ItemReference], { $id: 'OpenAIInputItem' })
export type OpenAIInputItem = Static<typeof OpenAIInputItem>

export const OpenAIFunctionTool = Type.Object(
  {
    type: Type.Literal('function'),
    name: Type.String({ minLength: 1, maxLength: 64 }),
    description: Type.Optional(Nullable(Type.String())),
    parameters: Type.Optional(Nullable(Type.Record(Type.String(), Type.Unknown()))),
    strict: Type.Optional(Nullable(Type.Boolean())),
  },
  { ...closed, $id: 'OpenAIFunctionTool' },
)

const ToolChoiceFunction = Type.Object({ type: Type.Literal('function'), name: Type.String({ minLength: 1 }) }, closed)
const TextFormat = Type.Union([
  Type.Object({ type: Type.Literal('text') }, closed),
  Type.Object({ type: Type.Literal('json_object') }, closed),
  Type.Object(
    {
      type: Type.Literal('json_schema'),
      name: Type.String({ minLength: 1, maxLength: 64, pattern: '^[a-zA-Z0-9_-]+$' }),
      schema: Type.Record(Type.String(), Type.Unknown()),
      description: Type.Optional(Type.String()),
      strict: Type.Optional(Nullable(Type.Boolean())),
    },
    closed,
  ),
])

export const OPENAI_EFFORTS = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh'] as const
const Metadata = Type.Record(Type.String({ maxLength: 64 }), Type.String({ maxLength: 512 }), {
  maxProperties: 16,
  description: 'Up to 16 string pairs, kept as the user_metadata of every part the response writes (at most 1024 bytes as JSON).',
})

export const OpenAICreateResponse = Type.Object(
  {
    model: Type.String({ minLength: 1, description: 'A catalogue `name`, e.g. `sandbox/agent`.' }),
    input: Type.Optional(Type.Union([Type.String(), Type.Array(OpenAIInputItem, { maxItems: 128 })])),
    instructions: Type.Optional(Nullable(Type.String({ maxLength: 262_144 }))),
    conversation: Type.Optional(Nullable(Type.Union([Type.String({ minLength: 1 }), Type.Object({ id: Type.String({ minLength: 1 }) }, closed)]))),
    previous_response_id: Type.Optional(Nullable(Type.String({ minLength: 1 }))),
    tools: Type.Optional(Type.Array(Type.Ref(OpenAIFunctionTool), { maxItems: 128 })),
    tool_choice: Type.Optional(Type.Union([StringEnum(['none', 'auto', 'required']), ToolChoiceFunction])),
    parallel_tool_calls: Type.Optional(Nullable(Type.Boolean())),
    temperature: Type.Optional(Nullable(Type.Number({ minimum: 0, maximum: 2 }))),
    top_p: Type.Optional(Nullable(Type.Number({ minimum: 0, maximum: 1 }))),
    max_output_tokens: Type.Optional(Nullable(Type.Integer({ minimum: 16, maximum: 2_147_483_647 }))),
    max_tool_calls: Type.Optional(Nullable(Type.Integer({ minimum: 1 }))),
    reasoning: Type.Optional(
      Nullable(
        Type.Object(
          {
            effort: Type.Optional(Nullable(StringEnum(OPENAI_EFFORTS))),
            summary: Type.Optional(Nullable(StringEnum(['auto', 'concise', 'detailed']))),
            generate_summary: Type.Optional(Nullable(StringEnum(['auto', 'concise', 'detailed']))),
          },
          closed,
        ),
      ),
    ),
    text: Type.Optional(Type.Object({ format: Type.Optional(TextFormat), verbosity: Type.Optional(Nullable(StringEnum(['low', 'medium', 'high']))) }, closed)),
    metadata: Type.Optional(Nullable(Metadata)),
    store: Type.Optional(Nullable(Type.Boolean())),
    stream: Type.Optional(Nullable(Type.Boolean())),
    stream_options: Type.Optional(Nullable(Type.Object({ include_obfuscation: Type.Optional(Type.Boolean()) }, closed))),
    background: Type.Optional(Nullable(Type.Boolean())),
    include: Type.Optional(Nullable(Type.Array(Type.String(), { maxItems: 16 }))),
    truncation: Type.Optional(Nullable(StringEnum(['auto', 'disabled']))),
    prompt_cache_key: Type.Optional(Nullable(Type.String({ maxLength: 1024 }))),
    safety_identifier: Type.Optional(Nullable(Type.String({ maxLength: 1024 }))),
    service_tier: Type.Optional(Nullable(StringEnum(['auto', 'default', 'flex', 'scale', 'priority']))),
    top_logprobs: Type.Optional(Nullable(Type.Integer({ minimum: 0, maximum: 0, description: 'Parley returns no log probabilities: 0 or null only.' }))),
    user: Type.Optional(Type.String({ maxLength: 1024 })),
  },
  { ...closed, $id: 'OpenAICreateResponse' },
)
export type OpenAICreateResponse = Static<typeof OpenAICreateResponse>

/** A Responses `response` object; its items and fields are OpenAI's (docs/guide/openai-sdk.md). */
export const OpenAIResponse = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('response'),
    created_at: Type.Integer(),
    status: StringEnum(['queued', 'in_progress', 'completed', 'failed', 'cancelled', 'incomplete']),
    model: Type.String(),
    output: Type.Array(Type.Object({}, open)),
  },
  { ...open, $id: 'OpenAIResponse' },
)

/** One frame of a streamed response: `event:` is the event's type, `data:` the event (decision 036's `{event, data}`). */
export const OpenAIStreamFrame = Type.Object(
  {
    event: Type.String({ description: 'The event type, e.g. `response.output_text.delta`.' }),
    data: Type.Object({ type: Type.String(), sequence_number: Type.Integer({ minimum: 0 }) }, { ...open, description: 'The Responses streaming event.' }),
  },
  { $id: 'OpenAIStreamFrame' },
)

/** The input a response would send, counted: the create request's fields (nothing runs, so nothing streams or is stored). */
export const OpenAICountRequest = Type.Omit(OpenAICreateResponse, ['stream', 'stream_options', 'background', 'store', 'include', 'metadata', 'service_tier', 'top_logprobs', 'user', 'safety_identifier', 'prompt_cache_key', 'max_tool_calls'], {
  ...closed,
  $id: 'OpenAICountRequest',
})

export const OpenAICompactRequest = Type.Object(
  {
    model: Type.String({ minLength: 1, description: 'The catalogue `name` of the model that writes the summary; its compaction run is billed.' }),
    input: Type.Optional(Type.Union([Type.String(), Type.Array(OpenAIInputItem, { maxItems: 128 })])),
    instructions: Type.Optional(Nullable(Type.String({ maxLength: 262_144 }))),
    previous_response_id: Type.Optional(Nullable(Type.String({ minLength: 1 }))),
    prompt_cache_key: Type.Optional(Nullable(Type.String({ maxLength: 1024 }))),
  },
  { ...closed, $id: 'OpenAICompactRequest' },
)

export const OpenAICompaction = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('response.compaction'),
    created_at: Type.Integer(),
    output: Type.Array(Type.Object({ type: Type.String(), id: Type.String() }, open)),
    usage: Type.Object({}, open),
  },
  { $id: 'OpenAICompaction', description: 'The compacted window: a `compaction` item holding the summary, to send as input in place of what it summarises.' },
)

export const ResponseParams = Type.Object({ response_id: Type.String({ minLength: 1, maxLength: 128 }) })

export const ItemListQuery = Type.Object({
  after: Type.Optional(Type.String({ maxLength: 256, description: 'An item id: the page after it.' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: '1-100, default 20.' })),
  order: Type.Optional(StringEnum(['asc', 'desc'], { description: '`desc` (newest first, the default) or `asc`.' })),
  include: Type.Optional(Type.Union([Type.String(), Type.Array(Type.String(), { maxItems: 16 })])),
})

export const OpenAIItemList = Type.Object(
  {
    object: Type.Literal('list'),
    data: Type.Array(Type.Object({ type: Type.String(), id: Type.String() }, open)),
    first_id: Nullable(Type.String()),
    last_id: Nullable(Type.String()),
    has_more: Type.Boolean(),
  },
  { $id: 'OpenAIItemList', description: 'A page of items (OpenAI\'s list shape).' },
)

/** The statuses the facade's operations document one by one; 405 is among the answers before an operation (4XX). */
const OPENAI_ERROR_STATUSES = [400, 401, 404, 413, 429, 500, 502, 503] as const
export type OpenAIErrorStatus = (typeof OPENAI_ERROR_STATUSES)[number]

/** An error as OpenAI's API sends it, with the codes this status carries (src/http/openai/openai-error.ts). */
function openaiErrorSchema(id: string, codes: string[], description: string) {
  return Type.Object(
    {
      error: Type.Object(
        {
          message: Type.String(),
          type: StringEnum(OPENAI_ERROR_TYPES),
          param: Nullable(Type.String({ description: 'The request parameter concerned, e.g. `input[0].content`.' })),
          code: StringEnum(codes),
        },
        closed,
      ),
    },
    { ...closed, $id: id, description },
  )
}

export const OPENAI_ERRORS = Object.fromEntries(
  OPENAI_ERROR_STATUSES.map((status) => [status, openaiErrorSchema(`OpenAIError${status}`, openaiCodesOf(status), `An error as OpenAI's API answers it with ${status}.`)]),
) as Record<OpenAIErrorStatus, ReturnType<typeof openaiErrorSchema>>

/**
 * A body declared in a charset other than UTF-8, refused before the operation runs with Parley's status
 * and code in OpenAI's shape (decision 057; its row in src/http/openai/openai-error.ts keeps Parley's status).
 */
export const OpenAIError415 = openaiErrorSchema(
  'OpenAIError415',
  ['unsupported_media_type'],
  "A body whose Content-Type declares a charset other than UTF-8, in OpenAI's error shape: bodies are read as UTF-8 only.",
)

/** What any facade operation may answer before it runs, in OpenAI's shape (decision 036's 4XX). */
export const OpenAIError4XX = openaiErrorSchema(
  'OpenAIError4XX',
  [...new Set([...OPENAI_ERROR_STATUSES.filter((s) => s < 500), 405].flatMap((s) => openaiCodesOf(s)))],
  'Refused before the operation runs, in OpenAI\'s error shape: 405 `method_not_allowed` with `Allow`, 400 for a path that is not valid percent-encoding.',
)

export const OPENAI_SCHEMAS = [OpenAIInputItem, OpenAIFunctionTool, OpenAICreateResponse, OpenAIResponse, OpenAIStreamFrame, OpenAIItemList, OpenAICountRequest, OpenAICompactRequest, OpenAICompaction, ...Object.values(OPENAI_ERRORS), OpenAIError415, OpenAIError4XX]
