import { Type } from '@sinclair/typebox'
import { DateTime, Namespace, Nullable } from './common.ts'

export const Discovery = Type.Object(
  {
    service: Type.String(),
    docs: Type.String(),
    llms_txt: Type.String(),
    openapi: Type.String(),
    versions: Type.Record(Type.String(), Type.String()),
  },
  { $id: 'Discovery' },
)

export const ApiVersion = Type.Object(
  { version: Type.String(), commit: Type.String(), api_version: Type.String() },
  { $id: 'ApiVersion' },
)

export const PublicPlatformUpdate = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    kind: Type.Union([Type.Literal('release'), Type.Literal('notice'), Type.Literal('maintenance')]),
    title: Type.String(),
    body: Type.String(),
    important: Type.Boolean(),
    published_at: DateTime,
    version: Type.Optional(Nullable(Type.String())),
  },
  { $id: 'PublicPlatformUpdate' },
)

export const NamespacePage = Type.Object(
  { data: Type.Array(Namespace, { description: 'Every namespace in use by a chat, ascending.' }) },
  { $id: 'NamespacePage' },
)
