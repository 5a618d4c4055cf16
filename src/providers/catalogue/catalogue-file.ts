import { Type, type Static } from '@sinclair/typebox'

const Rate = Type.String({ pattern: '^\\d+(\\.\\d+)?$' })
const OptionalRate = Type.Union([Rate, Type.Null()])
const closed = { additionalProperties: false } as const

const MediaPolicy = Type.Object(
  {
    mime_types: Type.Array(Type.String({ pattern: '^[a-z]+/[a-z0-9.+-]+$' })),
    max_bytes_per_attachment: Type.Integer({ minimum: 0 }),
    max_attachments_per_request: Type.Optional(Type.Union([Type.Integer({ minimum: 0 }), Type.Null()])),
  },
  closed,
)

const Tier = Type.Object(
  {
    id: Type.String({ minLength: 1 }),
    metric: Type.Literal('context_tokens'),
    min: Type.Integer({ minimum: 0 }),
    max: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()]),
    mode: Type.Union([Type.Literal('cliff'), Type.Literal('graduated')]),
    input: OptionalRate,
    output: OptionalRate,
    cache_read: OptionalRate,
    cache_write: OptionalRate,
  },
  closed,
)

/**
 * A window beyond the standard one that the vendor opens only when asked (Claude's 1M context): the
 * header to send, and the window that holds without it (docs/decisions/027-model-limits.md).
 */
const LongContext = Type.Object(
  { standard_window: Type.Integer({ minimum: 1 }), header: Type.String({ minLength: 1 }), value: Type.String({ minLength: 1 }) },
  closed,
)

/** Where one figure was read, and the day it was checked (decision 041). */
const FigureSource = Type.Object({ source: Type.String({ minLength: 1 }), checked: Type.String({ format: 'date' }) }, closed)
export const SOURCED_FIGURES = ['context_window', 'max_input_tokens', 'max_output_tokens', 'max_request_bytes', 'rates', 'tiers', 'lifecycle'] as const
const REQUIRED_SOURCES: readonly string[] = ['context_window', 'max_output_tokens', 'max_request_bytes', 'rates', 'lifecycle']

export const CatalogueModelSource = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    name: Type.String({ pattern: '^[a-z0-9-]+/[a-z0-9.-]+$' }),
    vendor_model_id: Type.String({ minLength: 1 }),
    display_name: Type.String({ minLength: 1 }),
    provider: Type.Union(
      ['anthropic', 'openai', 'google', 'mistral', 'xai', 'deepseek', 'sandbox'].map((p) => Type.Literal(p)),
    ),
    provider_label: Type.String({ minLength: 1 }),
    model_family: Type.String({ minLength: 1 }),
    context_window: Type.Integer({ minimum: 1, description: 'the most tokens of input and output together, with any long-context opt-in' }),
    max_input_tokens: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], {
      description: "the vendor's own cap on input tokens where it is below the window (gpt-5: 272000); null: the window alone",
    }),
    max_output_tokens: Type.Integer({ minimum: 1 }),
    long_context: Type.Union([LongContext, Type.Null()]),
    max_request_bytes: Type.Integer({ minimum: 1, description: "the vendor's documented limit on one request's bytes" }),
    status: Type.Union([Type.Literal('active'), Type.Literal('deprecated'), Type.Literal('retired')]),
    deprecated_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    retires_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    successor: Type.Union([Type.String({ pattern: '^[a-z0-9-]+/[a-z0-9.-]+$' }), Type.Null()]),
    sources: Type.Object(
      Object.fromEntries(
        SOURCED_FIGURES.map((f) => [
          f,
          REQUIRED_SOURCES.includes(f) ? FigureSource : Type.Optional(FigureSource),
        ]),
      ),
      { ...closed, description: 'where each figure was read and when: the vendor page, or why it is ours' },
    ),
    supports_reasoning: Type.Boolean(),
    max_reasoning_effort: Type.Union(
      [...['low', 'medium', 'high', 'x_high', 'max'].map((e) => Type.Literal(e)), Type.Null()],
    ),
    supports_tools: Type.Boolean(),
    max_tool_definitions: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()]),
    thinking: Type.String({ minLength: 1 }),
    media: Type.String({ minLength: 1, description: 'a key of media_profiles' }),
    rates: Type.Object({ input: Rate, output: Rate, cache_read: OptionalRate, cache_write: OptionalRate }, closed),
    tiers: Type.Array(Tier),
  },
  closed,
)

/** The shape of catalogue/models.json, checked at start-up. */
export const CatalogueFile = Type.Object(
  {
    prices_as_of: Type.String({ format: 'date' }),
    currency: Type.Literal('USD'),
    platform_inline_limit_bytes: Type.Integer({ minimum: 1 }),
    media_profiles: Type.Record(
      Type.String(),
      Type.Object({ user: MediaPolicy, tool_result: MediaPolicy, assistant: MediaPolicy }, closed),
    ),
    models: Type.Array(CatalogueModelSource, { minItems: 1 }),
  },
  closed,
)
export type CatalogueFile = Static<typeof CatalogueFile>
