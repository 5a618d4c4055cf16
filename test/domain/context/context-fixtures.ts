import { expect } from 'vitest'
import type { CatalogueEntry, MediaPolicy } from '../../../src/domain/catalogue/catalogue-entry.ts'
import type { ContextBudget, RetentionRules } from '../../../src/domain/config/config-types.ts'
import type { MediaRef, RenderedPart } from '../../../src/domain/context/context-types.ts'
import { estimatePartTokens } from '../../../src/domain/context/estimate-part-tokens.ts'
import { packContext, type NewPart, type PackInput, type PackResult } from '../../../src/domain/context/pack-context.ts'
import { PackingHistory } from '../../../src/domain/context/packing-history.ts'
import type { PartBody, TrustLevel } from '../../../src/domain/parts.ts'

/** Ten words, one o200k token each (' one' … ' ten'): cuts land on word boundaries. */
export const TEN = ' one two three four five six seven eight nine ten'

/** `n` tokens of ' word'. */
/** n tokens of text, each a one-letter word: 2 characters a token, so up to 2,048 tokens are counted exactly, not sampled (src/domain/tokens/estimate-tokens.ts). */
export const words = (n: number) => ' a'.repeat(n)

export const prompt = (text: string): PartBody => ({ type: 'prompt', text })
export const message = (text: string, refusal: string | null = null): PartBody => ({ type: 'message', text, refusal })
export const reasoning = (text: string): PartBody => ({ type: 'reasoning', text })
export const call = (id: string, name: string, args: string): PartBody => ({ type: 'tool_call', tool_use_id: id, tool_name: name, arguments: args })
export const result = (
  id: string,
  name: string,
  text: string,
  opts: { isError?: boolean; trust?: TrustLevel; tombstone?: 'abandoned' | 'cancelled' | 'expired' } = {},
): PartBody => ({
  type: 'tool_result',
  tool_use_id: id,
  tool_name: name,
  text,
  is_error: opts.isError ?? false,
  trust: opts.trust ?? 'trusted',
  ...(opts.tombstone ? { tombstone_reason: opts.tombstone } : {}),
})

/** An attachment description; 30×25 images cost ceil(750 / 750) = 1 token. */
export const media = (filename: string | null, mime: string, byteLen: number, id = filename ?? mime): MediaRef => ({
  mediaId: id,
  mime,
  byteLen,
  filename,
  width: mime.startsWith('image/') ? 30 : null,
  height: mime.startsWith('image/') ? 25 : null,
  pageCount: null,
})

export const mediaPolicy = (mime_types: string[], max_attachments_per_request: number | null = null): MediaPolicy => ({
  mime_types,
  max_bytes_per_attachment: 10_000_000,
  max_attachments_per_request,
})

const ALL = ['image/png', 'image/jpeg', 'application/pdf', 'text/plain']

/** A model of the sandbox (Anthropic's image rule); `max_request_bytes` the sandbox's 20 MiB unless chosen. */
export const model = (
  context_window: number,
  carriers: { user?: MediaPolicy; tool_result?: MediaPolicy } = {},
  max_request_bytes = 20 * 1024 * 1024,
): Pick<CatalogueEntry, 'context_window' | 'media' | 'provider' | 'max_request_bytes'> => ({
  context_window,
  provider: 'sandbox',
  max_request_bytes,
  media: {
    user: carriers.user ?? mediaPolicy(ALL),
    tool_result: carriers.tool_result ?? mediaPolicy(ALL),
    assistant: mediaPolicy([]),
    max_attachments_per_part: 20,
    configured: true,
  },
})

export const BUDGET: ContextBudget = { version: 3, headroom: 0, history_mode: 'drop_oldest' }
export const NO_RULES: RetentionRules = { version: 1 }

/** A ledger built by hand: ordinals as given, tokens the real whole estimate unless chosen. */
export class Ledger {
  readonly history = new PackingHistory()

  add(ordinal: number, body: PartBody, opts: { runId?: string | null; media?: MediaRef[]; tokens?: number } = {}): this {
    const attachments = opts.media ?? []
    this.history.append({
      ordinal,
      kind: body.type,
      runId: opts.runId ?? null,
      toolUseId: body.type === 'tool_call' || body.type === 'tool_result' ? body.tool_use_id : null,
      tokens: opts.tokens ?? estimatePartTokens(body, attachments),
      media: attachments,
      body,
      renders: null,
    })
    return this
  }
}

export type PackOptions = Partial<Omit<PackInput, 'history'>> & { history: PackingHistory }

export function packRaw(opts: PackOptions): PackResult {
  return packContext({
    newParts: [] as NewPart[],
    currentRuns: [],
    instructionsTokens: 0,
    toolsTokens: 0,
    rules: NO_RULES,
    budget: BUDGET,
    model: model(1_000),
    ...opts,
  })
}

/** Packs and insists the result is packed (every body is present in these tests). */
export function pack(opts: PackOptions) {
  const packed = packRaw(opts)
  if (packed.kind !== 'packed') throw new Error(`expected a packed context, got ${JSON.stringify(packed)}`)
  return { ...packed.value, warnings: packed.warnings }
}

/** The packed part of one ordinal. */
export function partAt(packed: ReturnType<typeof pack>, ordinal: number) {
  const found = packed.parts.find((p) => p.ordinal === ordinal)
  expect(found, `ordinal ${ordinal} is packed`).toBeDefined()
  return found!
}

/** The text a packed part is sent with (prompt, result, message, reasoning) or its arguments (call). */
export function sentText(content: RenderedPart | null): string {
  if (content === null) throw new Error('part was omitted')
  return content.type === 'tool_call' ? content.arguments : content.text
}

export const ordinalsOf = (packed: ReturnType<typeof pack>) => packed.parts.map((p) => p.ordinal)
