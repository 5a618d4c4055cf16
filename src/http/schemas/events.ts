import { Type, type Static, type TSchema } from '@sinclair/typebox'
import { Nullable, StringEnum, TaggedUnion, Uuid } from './common.ts'
import { ConfigWarning } from './config.ts'

/**
 * The server-sent events of a turn (docs/guide/turn-stream.md), one schema per event's `data`. OpenAPI 3.1 has no
 * notation for an event stream, so the 200 of the turn endpoint is documented as what a generic SSE
 * client yields per frame, the parsed `data` (`RunEventPayload`, an `anyOf`), with the event names and
 * their data schemas in `x-sse-events` (decisions 021 and 036).
 */

const NonNegative = Type.Integer({ minimum: 0 })

export const RunEventData = Type.Object(
  {
    chat_id: Uuid,
    run_id: Uuid,
    closed_tool_calls: Type.Array(Type.String(), {
      description: 'Tool calls this submission closed: answered by a `tool_result` or tombstoned (abandoned, cancelled, expired).',
    }),
  },
  { $id: 'RunEventData', description: 'Always the first event: the run and the tool calls the submission closed.' },
)

export const ConfigWarningsEventData = Type.Object(
  { warnings: Type.Array(Type.Ref(ConfigWarning)) },
  {
    $id: 'ConfigWarningsEventData',
    description: 'How the configuration resolved for this turn. Second event; sent again after compaction when the warnings changed.',
  },
)

export const TranslationWarning = Type.Object(
  {
    code: Type.String({
      description:
        'e.g. `reasoning_effort_coerced`, `reasoning_effort_fixed`, `max_tokens_lowered`, `attachment_replaced_by_marker`, `strict_dropped`, `is_error_dropped`, `replay_dropped`, `vendor_warning`.',
    }),
    message: Type.String(),
    details: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  },
  { $id: 'TranslationWarning', description: 'Something of the request the selected model cannot take as sent, and what was done instead.' },
)

export const TranslationWarningsEventData = Type.Object(
  { warnings: Type.Array(Type.Ref(TranslationWarning)) },
  { $id: 'TranslationWarningsEventData', description: 'Model compatibility warnings, before any content.' },
)

export const CompactingEventData = Type.Object(
  {
    blocks: Type.Integer({ minimum: 0, description: 'Blocks of older history this turn summarises before it can answer.' }),
    in_progress_elsewhere: Type.Integer({ minimum: 0, description: 'Blocks other work is summarising; the turn waits for them.' }),
  },
  { $id: 'CompactingEventData', description: 'The turn waits for summaries of older history (compaction) before its model call.' },
)

export const TextBlockStart = Type.Object({ kind: Type.Literal('text') }, { $id: 'TextBlockStart', description: 'A block of the answer\'s text.' })
export const ReasoningBlockStart = Type.Object({ kind: Type.Literal('reasoning') }, { $id: 'ReasoningBlockStart', description: 'A block of the model\'s reasoning.' })
export const RefusalBlockStart = Type.Object({ kind: Type.Literal('refusal') }, { $id: 'RefusalBlockStart', description: 'A block in which the model refuses.' })
export const ToolCallBlockStart = Type.Object(
  {
    kind: Type.Literal('tool_call'),
    tool_name: Type.String(),
    tool_use_id: Type.String({ description: 'Answer it with a `tool_result` part of this id in the next turn.' }),
  },
  { $id: 'ToolCallBlockStart', description: 'A tool call; its arguments arrive as `tool_input` deltas.' },
)

export const BlockStartEventData = TaggedUnion('kind', [TextBlockStart, ReasoningBlockStart, RefusalBlockStart, ToolCallBlockStart], {
  $id: 'BlockStartEventData',
  description: 'Opens a content block; a turn may have many.',
})

export const DeltaEventData = Type.Object(
  {
    kind: StringEnum(['text', 'reasoning', 'tool_input', 'refusal'], {
      description: '`tool_input` carries fragments of the JSON-encoded arguments of the open tool call.',
    }),
    text: Type.String(),
  },
  { $id: 'DeltaEventData', description: 'The next piece of the open block.' },
)

export const BlockStopEventData = Type.Object({}, { $id: 'BlockStopEventData', description: 'Closes the open block (an empty object).' })

const EventUsage = Type.Object(
  {
    input_tokens: NonNegative,
    output_tokens: NonNegative,
    reasoning_tokens: Type.Integer({ minimum: 0, description: 'A subset of output_tokens, never added to it.' }),
    cache_read_tokens: NonNegative,
    cache_write_tokens: NonNegative,
  },
  { $id: 'Usage' },
)

export const DoneEventData = Type.Object(
  {
    compaction: Nullable(
      Type.Object({ blocks_generated: NonNegative, blocks_reused: NonNegative, in_progress_elsewhere: NonNegative }, { description: 'Summaries this context sent; null when none.' }),
    ),
    cost: Nullable(Type.String({ description: 'Money, a decimal string in cost_currency; null means settlement is pending: read the run later.' })),
    cost_currency: Type.String(),
    model_served: Nullable(Type.String({ description: "The provider's spelling of the model; not a catalogue key." })),
    pending_tool_calls: Type.Array(Type.Object({ tool_name: Type.String(), tool_use_id: Type.String() }), {
      description: 'Tool calls to answer with `tool_result` parts in the next turn (stop_reason `tool_use`).',
    }),
    provider_response_id: Nullable(Type.String()),
    server_tools: Nullable(
      Type.Object({ document_search_calls: NonNegative, provider_cost: Type.Optional(Nullable(Type.String())) }),
    ),
    stop_reason: StringEnum(['end_turn', 'max_tokens', 'tool_use', 'stop_sequence', 'refusal']),
    usage: Type.Ref(EventUsage),
  },
  { $id: 'DoneEventData', description: 'Terminal success, sent once the run is settled.' },
)

/** Codes an `error` event carries: the run's failure, not the request's. */
export const STREAM_ERROR_CODES = ['upstream_error', 'unavailable', 'cancelled', 'chat_deleted', 'interrupted', 'compaction_failed', 'internal'] as const

export const ErrorEventData = Type.Object(
  {
    code: StringEnum(STREAM_ERROR_CODES),
    message: Type.String(),
    details: Type.Optional(Type.Unknown({ description: 'Carries `run_id`.' })),
    hint: Type.Optional(Nullable(Type.String())),
  },
  {
    $id: 'ErrorEventData',
    description: 'Terminal failure after the stream opened (an ErrorBody). Send `input: []` with `retry_of` set to the run to try a failed run again.',
  },
)

const EVENT_DATA = {
  run: RunEventData,
  config_warnings: ConfigWarningsEventData,
  translation_warnings: TranslationWarningsEventData,
  compacting: CompactingEventData,
  block_start: BlockStartEventData,
  delta: DeltaEventData,
  block_stop: BlockStopEventData,
  done: DoneEventData,
  error: ErrorEventData,
} satisfies Record<string, TSchema>

export const RUN_EVENT_NAMES = Object.keys(EVENT_DATA)

function idOf(schema: TSchema): string {
  if (typeof schema.$id !== 'string') throw new Error('an event data schema has no $id')
  return schema.$id
}

/**
 * Each event's name and the component its `data` is, as the document says it on the turn's 200
 * (`x-sse-events`, decision 036): `{"run": "#/components/schemas/RunEventData", ...}`.
 */
export const RUN_EVENT_SCHEMAS: Record<string, string> = Object.fromEntries(
  Object.entries(EVENT_DATA).map(([event, data]) => [event, `#/components/schemas/${idOf(data)}`]),
)

export const RUN_EVENT_ORDER = [
  'Each frame is `event: <name>`, `data: <JSON>`, then `id: <run_id>:<sequence number>`, frames separated by a blank line; the event\'s name says which schema its data has (`x-sse-events`).',
  'Order: `run` (always first), `config_warnings`, `translation_warnings`; then `compacting` when the turn waits for summaries of older history, followed by `config_warnings` again if they changed;',
  'then per content block `block_start`, any number of `delta` (of the block\'s kind; `tool_input` for a tool call), `block_stop`; blocks never interleave.',
  'The stream ends with exactly one `done` (success) or `error` (failure after the stream opened; failures before it are HTTP errors in JSON).',
  'A comment line (`: heartbeat`) comes every 15 s and carries no event. Closing the connection does not cancel the run: resume its stream with `GET /api/v1/runs/{run_id}/events` after the last `id` you had (`Last-Event-ID`), or read `GET /api/v1/runs/{run_id}` and the history.',
].join(' ')

/**
 * What a client that parses the stream yields per frame: its `data`, parsed (decision 036). OpenAPI
 * 3.1 has no notation for the event's name beside it, and the data carry no tag of their own, so
 * this is an `anyOf` of the data schemas; the name-to-schema map is the 200's `x-sse-events`.
 */
export const RunEventPayload = Type.Unsafe<Static<(typeof EVENT_DATA)[keyof typeof EVENT_DATA]>>({
  $id: 'RunEventPayload',
  description: [
    'The `data` of one frame of the turn stream, parsed from JSON: what a generic server-sent-events client yields per event.',
    'The frame\'s `event:` line names which: ' + Object.entries(EVENT_DATA).map(([event, data]) => `\`${event}\` → ${idOf(data)}`).join(', ') + '.',
    'Two data shapes are alike (`config_warnings`, `translation_warnings`), so read the event name, not the shape (docs/guide/turn-stream.md).',
  ].join(' '),
  anyOf: Object.values(EVENT_DATA).map((data) => Type.Ref(idOf(data))),
})

export const TurnAnswerBlock = Type.Object(
  {
    kind: StringEnum(['text', 'reasoning', 'refusal', 'tool_call']),
    text: Type.String({ description: "The block's deltas joined: its text, or a tool call's arguments as JSON text." }),
    tool_name: Type.Optional(Type.String()),
    tool_use_id: Type.Optional(Type.String()),
  },
  { $id: 'TurnAnswerBlock', description: 'One content block, as its `block_start` and `delta` frames would have carried it.' },
)

export const TurnAnswer = Type.Object(
  {
    run: Type.Ref(RunEventData),
    config_warnings: Type.Array(Type.Ref(ConfigWarning)),
    translation_warnings: Type.Array(Type.Ref(TranslationWarning)),
    blocks: Type.Array(Type.Ref(TurnAnswerBlock)),
    done: Nullable(Type.Ref(DoneEventData)),
    error: Nullable(Type.Ref(ErrorEventData)),
  },
  {
    $id: 'TurnAnswer',
    description:
      'A turn sent with `stream: false`, answered once its run is settled: the frames its stream would have sent, folded (docs/guide/turn-options.md). Exactly one of `done` and `error` is set.',
  },
)

export const EVENT_SCHEMAS = [
  RunEventData,
  ConfigWarningsEventData,
  TranslationWarning,
  TranslationWarningsEventData,
  CompactingEventData,
  TextBlockStart,
  ReasoningBlockStart,
  RefusalBlockStart,
  ToolCallBlockStart,
  BlockStartEventData,
  DeltaEventData,
  BlockStopEventData,
  EventUsage,
  DoneEventData,
  ErrorEventData,
  RunEventPayload,
  TurnAnswerBlock,
  TurnAnswer,
]
