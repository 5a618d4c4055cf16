import { Type, type Static } from '@sinclair/typebox'
import { Nullable } from './common.ts'

const RatePerMillion = Type.String({ description: 'Price per one million tokens, decimal string.' })

const MediaPolicy = Type.Object({
  mime_types: Type.Array(Type.String()),
  max_bytes_per_attachment: Type.Integer({ minimum: 0 }),
  max_attachments_per_request: Type.Optional(Nullable(Type.Integer({ minimum: 0 }))),
})

export const MediaCapabilities = Type.Object({
  user: MediaPolicy,
  tool_result: MediaPolicy,
  assistant: MediaPolicy,
  max_attachments_per_part: Type.Integer({ minimum: 0 }),
  configured: Type.Boolean(),
})

export const BilledRates = Type.Object({
  input: RatePerMillion,
  output: RatePerMillion,
  currency: Type.String(),
  cache_read: Type.Optional(Nullable(RatePerMillion)),
  cache_write: Type.Optional(Nullable(RatePerMillion)),
})

export const BilledTier = Type.Object({
  id: Type.String(),
  metric: Type.String(),
  min: Type.Integer({ minimum: 0 }),
  mode: Type.Union([Type.Literal('cliff'), Type.Literal('graduated')]),
  max: Type.Optional(Nullable(Type.Integer({ minimum: 0 }))),
  input: Type.Optional(Nullable(RatePerMillion)),
  output: Type.Optional(Nullable(RatePerMillion)),
  cache_read: Type.Optional(Nullable(RatePerMillion)),
  cache_write: Type.Optional(Nullable(RatePerMillion)),
})

const catalogueModelFields = {
  id: Type.String({ format: 'uuid' }),
  name: Type.String({ description: 'The identifier to send as `model`; may contain slashes.' }),
  display_name: Type.String(),
  provider: Type.String(),
  provider_label: Type.String(),
  model_family: Type.String(),
  context_window: Type.Integer(),
  max_output_tokens: Type.Integer(),
  supports_reasoning: Type.Boolean(),
  supports_tools: Type.Boolean(),
  thinking: Type.String(),
  media: MediaCapabilities,
  rates: BilledRates,
  tiers: Type.Array(BilledTier),
  avg_time_to_first_token_ms: Type.Optional(Nullable(Type.Number())),
  icon_url: Type.Optional(Nullable(Type.String())),
  max_reasoning_effort: Type.Optional(Nullable(Type.String())),
  max_tool_definitions: Type.Optional(Nullable(Type.Integer())),
  uptime: Type.Optional(Nullable(Type.String())),
}

export const CatalogueModel = Type.Object(catalogueModelFields, { $id: 'CatalogueModel' })
export type CatalogueModel = Static<typeof CatalogueModel>

export const Catalogue = Type.Object(
  {
    models: Type.Array(Type.Ref(CatalogueModel)),
    markup_percent: Type.String(),
    organisation_specific: Type.Boolean(),
  },
  { $id: 'Catalogue' },
)

export const CatalogueModelResponse = Type.Object(
  { ...catalogueModelFields, markup_percent: Type.String() },
  { $id: 'CatalogueModelResponse' },
)
