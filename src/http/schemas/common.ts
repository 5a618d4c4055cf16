import { Type, type Static, type TObject, type TSchema, type TUnion } from '@sinclair/typebox'
import { NAMESPACE_PATTERN } from '../../domain/namespace.ts'

/**
 * `T | null`. A primitive schema becomes `type: [t, "null"]` so a bad value yields one clear
 * problem instead of one per anyOf branch; anything else falls back to anyOf.
 */
export function Nullable<T extends TSchema>(schema: T) {
  const type = (schema as { type?: unknown }).type
  if (typeof type === 'string' && type !== 'object' && type !== 'array') {
    const values = (schema as { enum?: unknown[] }).enum
    const withNull = values ? { enum: [...values, null] } : {}
    return Type.Unsafe<Static<T> | null>({ ...schema, type: [type, 'null'], ...withNull })
  }
  return Type.Unsafe<Static<T> | null>(Type.Union([schema, Type.Null()]))
}

/**
 * A union tagged by one property, as `oneOf` + `discriminator`: validation reports the problems of
 * the variant the tag names instead of every variant's, and OpenAPI shows the tag.
 */
export function TaggedUnion<T extends TObject[]>(tag: string, variants: [...T], options: { $id?: string; description?: string } = {}) {
  return Type.Unsafe<Static<TUnion<T>>>({ ...options, type: 'object', oneOf: variants, discriminator: { propertyName: tag } })
}

/** A string from a fixed set, as `enum`: one clear problem when it is wrong, not one per literal. */
export function StringEnum<const T extends readonly string[]>(values: T, options: { description?: string } = {}) {
  return Type.Unsafe<T[number]>({ ...options, type: 'string', enum: [...values] })
}

export const Uuid = Type.String({ format: 'uuid' })
export const DateTime = Type.String({ format: 'date-time' })
export const Namespace = Type.String({
  minLength: 1,
  maxLength: 255,
  pattern: NAMESPACE_PATTERN,
  description: 'Slash-separated scope, e.g. `acme/support`.',
})
export const UserMetadata = Type.Record(Type.String(), Type.Unknown(), {
  description: 'JSON object, at most 1024 bytes when serialised compactly.',
})

export const ErrorBody = Type.Object(
  {
    code: Type.String(),
    message: Type.String(),
    details: Type.Optional(Type.Unknown()),
    hint: Type.Optional(Nullable(Type.String())),
  },
  { $id: 'ErrorBody' },
)
export const ErrorEnvelope = Type.Object({ error: Type.Ref(ErrorBody) }, { $id: 'ErrorEnvelope' })

/** Error responses, by status, for a route's `response` schema. */
export function errors(...statuses: number[]) {
  return Object.fromEntries(statuses.map((s) => [s, Type.Ref(ErrorEnvelope)]))
}

export const ApiKeySecurity = [{ apiKey: [] as string[] }]
