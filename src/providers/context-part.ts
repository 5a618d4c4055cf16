import type { PartBody } from '../domain/parts.ts'

/** A ledger part as packing hands it to a provider conversion: its body and attachment bytes. */
export type ContextPart = {
  ordinal: number
  body: PartBody
  media: { mime: string; bytes: Buffer; filename: string | null }[]
}
