import { SerializerSelector } from '@fastify/fast-json-stringify-compiler'
import type { FastifyServerOptions } from 'fastify'

type SerializerFactory = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildSerializer'] & {}
type Compiler = ReturnType<SerializerFactory>
type Serializer = ReturnType<Compiler>

const defaultFactory = SerializerSelector()

/** One compiler per set of shared schemas, with the serializers it made by response schema text. */
const compilers = new Map<string, { compile: Compiler; serializers: Map<string, Serializer> }>()
/** The text of each shared schema Fastify hands over (its own clones: stable for one app). */
const schemaText = new WeakMap<object, string>()

function textOf(schema: unknown): string {
  if (typeof schema !== 'object' || schema === null) return JSON.stringify(schema)
  let text = schemaText.get(schema)
  if (text === undefined) {
    text = JSON.stringify(schema)
    schemaText.set(schema, text)
  }
  return text
}

/**
 * Fastify's serializer factory (fast-json-stringify), with each response schema compiled once
 * (decision 019). Fastify compiles every route's every status separately, and each compilation
 * validates and indexes all the shared schemas again: the error envelope on ~60 routes, about
 * 300 compilations, was most of the cost of building the app. A serializer depends only on the
 * response schema and the shared schemas it may $ref, so serializers are kept by the text of both
 * (and of the serializer options): one compilation per distinct schema, reused by later apps in
 * the same process (tests build many). Serializers are pure functions of their input.
 */
export const cachedSerializerFactory: SerializerFactory = (externalSchemas, options) => {
  const shared = (externalSchemas ?? {}) as Record<string, unknown>
  const key = JSON.stringify(options ?? null) + '\n' + Object.keys(shared).sort().map((id) => `${id}=${textOf(shared[id])}`).join('\n')
  let entry = compilers.get(key)
  if (!entry) {
    entry = { compile: defaultFactory(externalSchemas, options), serializers: new Map() }
    compilers.set(key, entry)
  }
  const { compile, serializers } = entry
  return (route) => {
    const text = JSON.stringify(route.schema)
    let serializer = serializers.get(text)
    if (!serializer) {
      serializer = compile(route)
      serializers.set(text, serializer)
    }
    return serializer
  }
}
