import type { CatalogueEntry } from '../catalogue/catalogue-entry.ts'

/** Whose compaction this is: the chat, who pays, on which model. */
export type CompactionJob = {
  chatId: string
  orgId: string
  apiKeyId: string | null
  namespace: string | null
  model: CatalogueEntry
  markupPercent: string
  /** The customer run waiting for it; null for eager work after a run settled. */
  forRunId: string | null
}
