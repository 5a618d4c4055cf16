import { Type, type Static } from '@sinclair/typebox'
import { StringEnum } from './common.ts'

export const Liveness = Type.Object(
  { status: StringEnum(['ok'] as const, { description: 'The process is up and answering HTTP.' }) },
  { $id: 'Liveness' },
)

export const Readiness = Type.Object(
  {
    status: StringEnum(['ready'] as const),
    role: StringEnum(['primary', 'replica'] as const, {
      description: 'primary: this node writes and its database took a write lock; replica: it reads its LiteFS copy and knows the primary it relays writes to.',
    }),
    providers: Type.Record(Type.String(), Type.Integer({ minimum: 1 }), {
      description: 'Active models per provider (a vendor whose key is set, and `sandbox` when it is on), e.g. `{"openai":2,"sandbox":4}`; a provider with none is absent.',
    }),
    models: Type.Integer({ minimum: 0, description: 'All active models: what `/v1/catalogue` lists.' }),
    warnings: Type.Array(Type.String(), {
      description:
        'Empty when this node has a model to serve. With no model active the node stays ready (reads, history and usage still work) ' +
        'but says here that every turn will answer 422, and what to set (docs/decisions/035-active-providers-at-start.md).',
    }),
  },
  { $id: 'Readiness' },
)
export type Readiness = Static<typeof Readiness>

export const HEALTH_SCHEMAS = [Liveness, Readiness]
