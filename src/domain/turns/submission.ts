import type { CatalogueEntry } from '../catalogue/catalogue-entry.ts'
import type { ToolDefinition } from '../config/config-types.ts'
import type { PartBody, TrustLevel } from '../parts.ts'

export const REASONING_EFFORTS = ['off', 'low', 'medium', 'high', 'x_high', 'max'] as const
export type ReasoningEffort = (typeof REASONING_EFFORTS)[number]

export type SubmittedMedia = { mime: string; data_base64: string; filename?: string | null }

export type SubmittedPart =
  | { type: 'prompt'; text?: string; media?: SubmittedMedia[] }
  | {
      type: 'tool_result'
      tool_use_id: string
      tool_name: string
      text?: string
      is_error?: boolean
      trust?: TrustLevel
      media?: SubmittedMedia[]
    }
  /**
   * History the client carries in its input: an assistant's earlier message, written to the ledger as
   * a message of no run (docs/decisions/055-openai-facade.md). Only the OpenAI facade sends it; the
   * native request's schema has no such part.
   */
  | { type: 'assistant_message'; text: string; media?: SubmittedMedia[] }

/** CreateResponseRequest (docs/guide/chats-and-ledger.md). */
export type TurnRequest = {
  model: string
  input: SubmittedPart[]
  idempotency_key?: string | null
  max_tokens?: number | null
  reasoning_effort?: ReasoningEffort | null
  retry_of?: string | null
  tools?: ToolDefinition[] | null
  user_metadata?: Record<string, unknown>
  /** docs/guide/turn-options.md: this turn's own system instruction, after the configured ones. */
  instructions?: string | null
  temperature?: number | null
  /** Nucleus sampling, 0-1, sent as it is (docs/guide/turn-options.md). */
  top_p?: number | null
  tool_choice?: ToolChoice | null
  response_format?: ResponseFormat | null
  /** false: the turn is answered as one JSON document once settled (docs/guide/turn-options.md). */
  stream?: boolean
}

/** Whether and which tool the model must call (docs/guide/turn-options.md). */
export type ToolChoice = 'auto' | 'none' | 'required' | { type: 'tool'; name: string }
/** The shape of the answer's text (docs/guide/turn-options.md). */
export type ResponseFormat = { type: 'text' } | { type: 'json_object' } | { type: 'json_schema'; name?: string; description?: string; schema: Record<string, unknown> }

/** An attachment decoded and measured, ready to check and store. */
export type DecodedMedia = {
  mime: string
  bytes: Buffer
  /** The bytes' SHA-256, hex, when already computed (off the event loop); the store computes it otherwise. */
  sha256?: string
  filename: string | null
  width: number | null
  height: number | null
  page_count: number | null
}

/**
 * An attachment as a submission carries it to the chat's actor: everything about it but its bytes,
 * which it names by their SHA-256 (decision 049). The bytes wait outside the machine's context (the
 * actor host's attachment holder, src/actors/attachment-holder.ts) until admission writes them to the
 * ledger, and are read from there when a vendor request is built.
 */
export type AttachmentRef = Omit<DecodedMedia, 'bytes' | 'sha256'> & { sha256: string; byte_len: number }

/** Each attachment's bytes by their SHA-256: what a submission's references name. */
export type AttachmentBytes = ReadonlyMap<string, Buffer>

export type Carrier = 'user_message' | 'assistant_message' | 'tool_result'

/** A new input part after validation, hygiene and decoding, ready to write: its attachments by reference. */
export type PreparedPart = {
  body: PartBody
  media: AttachmentRef[]
  tokens: number
  /** History carried by the input (an `assistant_message`): written with no run, since no run of this chat made it. */
  seeded?: true
}

/** What the HTTP layer hands the chat actor: a validated turn, plain data (its attachments by reference). */
export type Submission = {
  /** Chosen before admission, so a submission refused while this one is admitted can name it. */
  runId: string
  orgId: string
  apiKeyId: string | null
  chatId: string
  namespace: string | null
  request: TurnRequest
  model: CatalogueEntry
  input: PreparedPart[]
  /**
   * The chat does not exist yet: its row is written by this turn's admission, in the transaction
   * that writes the input and the run, so a refused turn leaves nothing (the facade's responses
   * without a conversation, decision 055).
   */
  newChat?: { namespace: string | null }
  /** What an OpenAI-facade request asked beyond the turn, echoed by its response (decision 055): kept in the manifest as `openai_request`. */
  openaiRequest?: Record<string, unknown>
}
