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
 * the variant the tag names instead of every variant's, and OpenAPI shows the tag. Each variant is a
 * named schema (its `$id` becomes a component) referenced from the `oneOf`: a discriminator can only
 * select a variant by name (redocly's no-illogical-composition-keywords; decision 036). Register the
 * variants with the app's shared schemas.
 */
export function TaggedUnion<T extends TObject[]>(tag: string, variants: [...T], options: { $id?: string; description?: string } = {}) {
  const refs = variants.map((variant) => {
    if (typeof variant.$id !== 'string') throw new Error(`a variant of a union tagged by "${tag}" has no $id`)
    return Type.Ref(variant.$id)
  })
  return Type.Unsafe<Static<TUnion<T>>>({ ...options, type: 'object', oneOf: refs, discriminator: { propertyName: tag } })
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
    code: Type.String({ description: 'Stable, machine-readable; each operation lists the codes it answers.' }),
    message: Type.String({ description: 'For people: what was wrong, in one sentence.' }),
    details: Type.Optional(Type.Unknown({ description: 'Structured context, e.g. `problems` of a 422 or the `run_id` a 409 names.' })),
    hint: Type.Optional(Nullable(Type.String({ description: 'What to do next, when there is one obvious step.' }))),
  },
  { $id: 'ErrorBody' },
)
export const ErrorEnvelope = Type.Object({ error: Type.Ref(ErrorBody) }, { $id: 'ErrorEnvelope', description: 'Every error answer (docs/guide/errors.md).' })

/** An error envelope whose `code` is one of `codes`: what an operation answers with one status. */
function errorEnvelope(name: string, codes: readonly string[], description: string) {
  return Type.Object(
    {
      error: Type.Object({
        code: StringEnum(codes),
        message: Type.String(),
        details: Type.Optional(Type.Unknown()),
        hint: Type.Optional(Nullable(Type.String())),
      }),
    },
    { $id: name, description },
  )
}

/** The codes docs/guide/errors.md maps to each status (src/http/plugins/error-handler.ts statusOf). */
export const ERROR_RESPONSES = {
  400: errorEnvelope('BadRequestError', ['invalid_request'], 'A malformed path identifier, malformed JSON, or a content type other than application/json.'),
  401: errorEnvelope('UnauthorizedError', ['unauthorized'], 'No API key, or one that is unknown or revoked: send `Authorization: Bearer <API_KEY>`.'),
  402: errorEnvelope('InsufficientBalanceError', ['insufficient_balance'], "The organisation's balance cannot pay for the estimated input plus one output token."),
  404: errorEnvelope('NotFoundError', ['not_found'], 'No such resource; one of another organisation looks missing too.'),
  409: errorEnvelope('ConflictError', ['run_in_progress', 'idempotency_key_reused', 'retry_not_allowed'], 'The chat\'s state forbids the submission; `details.run_id` names the run concerned.'),
  413: errorEnvelope('PayloadTooLargeError', ['payload_too_large'], 'The request body is over the limit (1 MiB; 32 MiB for a turn, base64 overhead included).'),
  415: errorEnvelope(
    'UnsupportedMediaTypeError',
    ['unsupported_media_type'],
    "The body's Content-Type declares a charset other than UTF-8 (`charset=utf-16`, `latin1`, ...): bodies are read as UTF-8 only; the message names the charset declared.",
  ),
  422: errorEnvelope('ValidationFailedError', ['validation_failed'], 'The request is well formed but invalid; `details.problems` lists each problem as `{in, pointer, message}`.'),
  429: errorEnvelope(
    'RateLimitedError',
    ['rate_limited'],
    'More requests a minute than the server allows per API key (RATE_LIMIT_PER_MINUTE), or, `details.reason` says, a bound this operation met (running runs per organisation, readers of a run or of an API key); wait `Retry-After` seconds.',
  ),
  500: errorEnvelope('InternalError', ['internal'], 'A fault of the server; nothing was changed by a rejected write.'),
  502: errorEnvelope('UpstreamError', ['upstream_error'], 'The model vendor failed before the stream opened.'),
  503: errorEnvelope('UnavailableError', ['unavailable'], 'The server (or its database primary) cannot take the request now; try again shortly.'),
} as const
export type ErrorStatus = keyof typeof ERROR_RESPONSES

/** The turn endpoint's 422: validation, plus the checks made against the chat and the model. */
export const TurnUnprocessableError = errorEnvelope(
  'TurnUnprocessableError',
  ['validation_failed', 'unsupported_attachment', 'unknown_tool_use_id', 'context_too_large'],
  'The turn is invalid: a problem in the body (`details.problems`), an attachment the model cannot take, a `tool_result` for a call that is not pending, or a context the model cannot hold.',
)

export const ERROR_SCHEMAS = [...Object.values(ERROR_RESPONSES), TurnUnprocessableError]

/** Error responses, by status, for a route's `response` schema: each with the codes that status carries. */
export function errors(...statuses: ErrorStatus[]) {
  return Object.fromEntries(statuses.map((s) => [s, Type.Ref(ERROR_RESPONSES[s])]))
}

/** Operations behind an API key; the document's global security (public ones say `security: []`). */
export const ApiKeySecurity = [{ apiKey: [] as string[] }]
export const PublicSecurity: Array<Record<string, string[]>> = []
