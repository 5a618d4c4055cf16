import type { PartBody } from '../parts.ts'
import { estimateTokens, saturatingAdd } from '../tokens/estimate-tokens.ts'
import type { MediaRef, RenderedPart, SentAttachment } from './context-types.ts'
import { imageTokens, unknownImageTokens, type ImageRule } from './image-tokens.ts'
import { renderVerbatim } from './render-part.ts'

export type MediaShape = Pick<MediaRef, 'mime' | 'byteLen' | 'width' | 'height' | 'pageCount'>

const TOKENS_PER_PDF_PAGE = 1500
const PDF_BYTES_PER_PAGE_GUESS = 50_000

/** Token estimate of one attachment as a model would read it: images by its vendor's rule (src/domain/context/image-tokens.ts). */
export function estimateMediaTokens(media: MediaShape, rule: ImageRule): number {
  if (media.mime.startsWith('image/')) {
    if (media.width === null || media.height === null) return unknownImageTokens(rule)
    return imageTokens(media.width, media.height, rule)
  }
  if (media.mime === 'application/pdf') {
    const pages = media.pageCount ?? Math.max(1, Math.ceil(media.byteLen / PDF_BYTES_PER_PAGE_GUESS))
    return saturatingAdd(pages * TOKENS_PER_PDF_PAGE)
  }
  // Text and anything else: roughly four bytes a token.
  return Math.ceil(media.byteLen / 4)
}

const attachmentTokens = (a: SentAttachment, rule: ImageRule) => (a.kind === 'file' ? estimateMediaTokens(a.media, rule) : estimateTokens(a.text))

/**
 * The project's one estimate of what a part costs a model (docs/guide/context.md): the texts it is sent
 * as, plus its attachments. The sandbox's usage (src/providers/estimate-prompt-tokens.ts) counts the
 * same texts in the vendor prompt, so the two agree. Images count by the rule of the model's vendor.
 */
export function estimateRenderedTokens(part: RenderedPart, rule: ImageRule): number {
  switch (part.type) {
    case 'prompt':
      return saturatingAdd(estimateTokens(part.text), ...part.attachments.map((a) => attachmentTokens(a, rule)))
    case 'tool_result':
      return saturatingAdd(estimateTokens(part.toolName), estimateTokens(part.text), ...part.attachments.map((a) => attachmentTokens(a, rule)))
    case 'message':
    case 'reasoning':
    case 'summary':
      return estimateTokens(part.text)
    case 'tool_call':
      return saturatingAdd(estimateTokens(part.toolName), estimateTokens(part.arguments))
    default: {
      const unknown: never = part
      throw new Error(`unknown part ${JSON.stringify(unknown)}`)
    }
  }
}

/**
 * A ledger part's estimate as sent whole: stored with the part at write time, for the model of the
 * turn that writes it (a part without images counts the same under every rule).
 */
export function estimatePartTokens(body: PartBody, media: readonly MediaShape[] = [], rule: ImageRule = 'anthropic'): number {
  const refs = media.map((m, i): MediaRef => ({ mediaId: String(i), filename: null, ...m }))
  return estimateRenderedTokens(renderVerbatim(body, refs), rule)
}
