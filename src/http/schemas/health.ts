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
  },
  { $id: 'Readiness' },
)
export type Readiness = Static<typeof Readiness>

export const HEALTH_SCHEMAS = [Liveness, Readiness]
