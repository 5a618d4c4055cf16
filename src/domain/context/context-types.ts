import type { PartBody, PartKind, VendorReplay } from '../parts.ts'

/** An attachment as packing knows it: its stored description, never its bytes. */
export type MediaRef = {
  mediaId: string
  mime: string
  byteLen: number
  filename: string | null
  width: number | null
  height: number | null
  pageCount: number | null
}

/** A packable ledger part: what packing reads of it. */
export type LedgerPart = {
  ordinal: number
  kind: PartKind
  runId: string | null
  body: PartBody
  media: readonly MediaRef[]
}

/** One attachment as the model receives it: the file, or a text marker in its place. */
export type SentAttachment = { kind: 'file'; media: MediaRef } | { kind: 'marker'; media: MediaRef; text: string }

/**
 * A part exactly as the model receives it (docs/guide/context.md: "what the model received"): the texts
 * that are sent, fences and markers included. Conversions to vendor prompts add no text of their own.
 */
export type RenderedPart =
  | { type: 'prompt'; text: string; attachments: SentAttachment[] }
  | { type: 'tool_result'; toolUseId: string; toolName: string; text: string; isError: boolean; attachments: SentAttachment[] }
  /**
   * `replay` (on messages, reasoning and tool calls): the vendor's data to accept its own output
   * back, sent only to that vendor (decisions 017 and 026). Only a part sent whole carries it.
   */
  | { type: 'message'; text: string; replay?: VendorReplay }
  | { type: 'reasoning'; text: string; replay?: VendorReplay }
  | { type: 'tool_call'; toolUseId: string; toolName: string; arguments: string; replay?: VendorReplay }
  /** A block of older history as a compaction run summarised it (src/domain/context/render-summary.ts). */
  | { type: 'summary'; text: string }

/** docs/guide/context.md `treatment` of a part. */
export type Treatment = 'verbatim' | 'truncated' | 'omitted' | 'summarised' | 'dropped'

/** A part of the packed context: null content when it is left out (an omitted reasoning part). */
export type PackedPart = { ordinal: number; kind: PartKind | 'summary'; treatment: Treatment; content: RenderedPart | null; tokens: number }
