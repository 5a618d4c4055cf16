import { Type, type Static } from '@sinclair/typebox'
import { Nullable, StringEnum } from './common.ts'
import { OPENAI_EFFORTS } from './openai-responses.ts'

/**
 * OpenAI's Chat Completions and Models shapes, as the facade takes and answers them
 * (docs/decisions/063-chat-completions.md). Requests are closed as the Responses facade's are: an
 * unknown parameter is a 400, never silently ignored. Answers are documented loosely.
 */
const closed = { additionalProperties: false } as const
const open = { additionalProperties: true } as const

const TextPart = Type.Object({ type: Type.Literal('text'), text: Type.String() }, closed)
const ImagePart = Type.Object(
  {
    type: Type.Literal('image_url'),
    image_url: Type.Object({ url: Type.String({ description: 'A `data:` URL with base64 bytes; Parley fetches no URL.' }), detail: Type.Optional(StringEnum(['low', 'high', 'auto'])) }, closed),
  },
  closed,
)
const FilePart = Type.Object(
  {
    type: Type.Literal('file'),
    file: Type.Object({ file_data: Type.Optional(Type.String()), filename: Type.Optional(Type.String()), file_id: Type.Optional(Type.String()) }, closed),
  },
  closed,
)
const RefusalPart = Type.Object({ type: Type.Literal('refusal'), refusal: Type.String() }, closed)
const TextContent = Type.Union([Type.String(), Type.Array(TextPart, { maxItems: 128 })])
const Name = Type.Optional(Type.String({ maxLength: 256 }))

const ToolCall = Type.Object(
  {
    id: Type.String({ minLength: 1, maxLength: 256 }),
    type: Type.Literal('function'),
    function: Type.Object({ name: Type.String({ minLength: 1 }), arguments: Type.String() }, closed),
  },
  closed,
)

export const OpenAIChatMessage = Type.Union(
  [
    Type.Object({ role: StringEnum(['system', 'developer']), content: TextContent, name: Name }, closed),
    Type.Object({ role: Type.Literal('user'), content: Type.Union([Type.String(), Type.Array(Type.Union([TextPart, ImagePart, FilePart]), { maxItems: 128 })]), name: Name }, closed),
    Type.Object(
      {
        role: Type.Literal('assistant'),
        content: Type.Optional(Nullable(Type.Union([Type.String(), Type.Array(Type.Union([TextPart, RefusalPart]), { maxItems: 128 })]))),
        refusal: Type.Optional(Nullable(Type.String())),
        tool_calls: Type.Optional(Nullable(Type.Array(ToolCall, { maxItems: 128 }))),
        name: Name,
      },
      closed,
    ),
    Type.Object({ role: Type.Literal('tool'), content: TextContent, tool_call_id: Type.String({ minLength: 1, maxLength: 256 }) }, closed),
  ],
  { $id: 'OpenAIChatMessage' },
)

const FunctionTool = Type.Object(
  {
    type: Type.Literal('function'),
    function: Type.Object(
      {
        name: Type.String({ minLength: 1, maxLength: 64 }),
        description: Type.Optional(Nullable(Type.String())),
        parameters: Type.Optional(Nullable(Type.Record(Type.String(), Type.Unknown()))),
        strict: Type.Optional(Nullable(Type.Boolean())),
      },
      closed,
    ),
  },
  closed,
)

const ResponseFormat = Type.Union([
  Type.Object({ type: Type.Literal('text') }, closed),
  Type.Object({ type: Type.Literal('json_object') }, closed),
  Type.Object(
    {
      type: Type.Literal('json_schema'),
      json_schema: Type.Object(
        {
          name: Type.String({ minLength: 1, maxLength: 64, pattern: '^[a-zA-Z0-9_-]+$' }),
          schema: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
          description: Type.Optional(Type.String()),
          strict: Type.Optional(Nullable(Type.Boolean())),
        },
        closed,
      ),
    },
    closed,
  ),
])

export const OpenAIChatCompletionRequest = Type.Object(
  {
    model: Type.String({ minLength: 1, description: 'A catalogue `name`, e.g. `sandbox/echo` (GET /v1/models lists them).' }),
    messages: Type.Array(Type.Ref(OpenAIChatMessage), { minItems: 1, maxItems: 1024 }),
    stream: Type.Optional(Nullable(Type.Boolean())),
    stream_options: Type.Optional(Nullable(Type.Object({ include_usage: Type.Optional(Type.Boolean()), include_obfuscation: Type.Optional(Type.Boolean()) }, closed))),
    tools: Type.Optional(Nullable(Type.Array(FunctionTool, { maxItems: 128 }))),
    tool_choice: Type.Optional(Nullable(Type.Union([StringEnum(['none', 'auto', 'required']), Type.Object({ type: Type.Literal('function'), function: Type.Object({ name: Type.String({ minLength: 1 }) }, closed) }, closed)]))),
    parallel_tool_calls: Type.Optional(Nullable(Type.Boolean())),
    temperature: Type.Optional(Nullable(Type.Number({ minimum: 0, maximum: 2 }))),
    top_p: Type.Optional(Nullable(Type.Number({ minimum: 0, maximum: 1 }))),
    max_tokens: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 2_147_483_647, description: 'Deprecated by OpenAI for `max_completion_tokens`; either caps the answer.' }))),
    max_completion_tokens: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 2_147_483_647 }))),
    reasoning_effort: Type.Optional(Nullable(StringEnum(OPENAI_EFFORTS))),
    response_format: Type.Optional(Nullable(ResponseFormat)),
    metadata: Type.Optional(
      Nullable(Type.Record(Type.String({ maxLength: 64 }), Type.String({ maxLength: 512 }), { maxProperties: 16, description: 'Kept as the user_metadata of the parts the turn writes (at most 1024 bytes as JSON).' })),
    ),
    n: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 1, description: 'One choice only.' }))),
    stop: Type.Optional(Type.Null({ description: 'Stop sequences are not offered: null only.' })),
    logprobs: Type.Optional(Nullable(Type.Literal(false, { description: 'Parley returns no log probabilities: false or null only.' }))),
    top_logprobs: Type.Optional(Nullable(Type.Integer({ minimum: 0, maximum: 0 }))),
    presence_penalty: Type.Optional(Nullable(Type.Number({ minimum: 0, maximum: 0, description: 'Not offered: 0 or null only.' }))),
    frequency_penalty: Type.Optional(Nullable(Type.Number({ minimum: 0, maximum: 0, description: 'Not offered: 0 or null only.' }))),
    seed: Type.Optional(Nullable(Type.Integer({ description: 'Accepted and not acted on.' }))),
    store: Type.Optional(Nullable(Type.Boolean({ description: 'Accepted and not acted on: a completion keeps no chat unless `X-Parley-Chat` names one.' }))),
    service_tier: Type.Optional(Nullable(StringEnum(['auto', 'default', 'flex', 'scale', 'priority']))),
    user: Type.Optional(Type.String({ maxLength: 1024 })),
  },
  { ...closed, $id: 'OpenAIChatCompletionRequest' },
)
export type OpenAIChatCompletionRequest = Static<typeof OpenAIChatCompletionRequest>

export const OpenAIChatCompletion = Type.Object(
  {
    id: Type.String({ description: '`chatcmpl-` and the run id without dashes: GET /api/v1/runs/{id} reads the run.' }),
    object: Type.Literal('chat.completion'),
    created: Type.Integer(),
    model: Type.String(),
    choices: Type.Array(Type.Object({ index: Type.Integer(), message: Type.Object({}, open), finish_reason: Type.String() }, open)),
    usage: Nullable(Type.Object({}, open)),
  },
  { ...open, $id: 'OpenAIChatCompletion' },
)

/** One `data:` line of a streamed completion: a `chat.completion.chunk`, and at the end the literal `[DONE]`. */
export const OpenAIChatCompletionChunk = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('chat.completion.chunk'),
    created: Type.Integer(),
    model: Type.String(),
    choices: Type.Array(Type.Object({}, open)),
  },
  { ...open, $id: 'OpenAIChatCompletionChunk' },
)

/** The data of a streamed completion's frame: a chunk, or the error that ends a stream whose run failed (OpenAI's SDKs raise it). */
export const OpenAIChatCompletionStreamData = Type.Union(
  [Type.Ref(OpenAIChatCompletionChunk), Type.Object({ error: Type.Object({ message: Type.String(), type: Type.String(), code: Nullable(Type.String()) }, open) }, closed)],
  { $id: 'OpenAIChatCompletionStreamData', description: 'One `data:` line of a streamed completion (no `event:` line); the stream ends with the literal `data: [DONE]`.' },
)

export const OpenAIModel = Type.Object(
  {
    id: Type.String({ description: 'The catalogue `name`, what a request sends as `model`.' }),
    object: Type.Literal('model'),
    created: Type.Integer(),
    owned_by: Type.String({ description: 'The provider.' }),
  },
  { ...open, $id: 'OpenAIModel' },
)

export const OpenAIModelList = Type.Object({ object: Type.Literal('list'), data: Type.Array(Type.Ref(OpenAIModel)) }, { $id: 'OpenAIModelList' })

export const ChatHeader = Type.Object({
  'x-parley-chat': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 64,
      description: 'Append to this Parley chat (its id, or `conv_` and its id without dashes) instead of running stateless: the messages after the last assistant message are the turn\'s input; the earlier ones are taken to be the chat\'s history.',
    }),
  ),
})

export const OPENAI_CHAT_SCHEMAS = [OpenAIChatMessage, OpenAIChatCompletionRequest, OpenAIChatCompletion, OpenAIChatCompletionChunk, OpenAIChatCompletionStreamData, OpenAIModel, OpenAIModelList]
