/** The ledger's part kinds and the role each implies (docs/guide/chats-and-ledger.md). */
export const PART_KINDS = ['prompt', 'tool_result', 'message', 'reasoning', 'tool_call'] as const
export type PartKind = (typeof PART_KINDS)[number]
export type Role = 'user' | 'assistant'

export function roleOf(kind: PartKind): Role {
  switch (kind) {
    case 'prompt':
    case 'tool_result':
      return 'user'
    case 'message':
    case 'reasoning':
    case 'tool_call':
      return 'assistant'
    default: {
      const unknownKind: never = kind
      throw new Error(`unknown part kind ${String(unknownKind)}`)
    }
  }
}

export const TRUST_LEVELS = ['trusted', 'customer_data', 'untrusted'] as const
export type TrustLevel = (typeof TRUST_LEVELS)[number]
export const TOMBSTONE_REASONS = ['abandoned', 'cancelled', 'expired'] as const
export type TombstoneReason = (typeof TOMBSTONE_REASONS)[number]

export type PartBody =
  | { type: 'prompt'; text: string }
  | {
      type: 'tool_result'
      text: string
      is_error: boolean
      tool_name: string
      tool_use_id: string
      trust: TrustLevel
      tombstone_reason?: TombstoneReason | null
    }
  | { type: 'message'; text: string; refusal?: string | null; replay?: VendorReplay }
  | { type: 'reasoning'; text: string; replay?: VendorReplay }
  | { type: 'tool_call'; arguments: string; tool_name: string; tool_use_id: string; replay?: VendorReplay }

/**
 * What a vendor needs to accept its own output back (decisions 017 and 026): on reasoning,
 * Anthropic's thinking signature or redacted data, Google's thought signature, OpenAI's reasoning
 * item id and encrypted content; on a tool call or a message, Google's thought signature.
 * `metadata` is the AI SDK's providerMetadata of the block as the vendor's package emitted it,
 * keyed by that package's name; `provider` is the catalogue provider that produced it, the only one
 * it is ever sent back to. Stored with the part, never returned by the API
 * (docs/guide/chats-and-ledger.md).
 */
export type VendorReplay = { provider: string; metadata: Record<string, Record<string, unknown>> }
