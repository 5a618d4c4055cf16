import type { PartBody } from '../parts.ts'
import { estimateTokens, saturatingAdd } from '../tokens/estimate-tokens.ts'
import type { MediaRef, RenderedPart, SentAttachment } from './context-types.ts'
import { renderVerbatim } from './render-part.ts'

export type MediaShape = Pick<MediaRef, 'mime' | 'byteLen' | 'width' | 'height' | 'pageCount'>

/** Vendors bill an image by its area; this is the common tile rule (about 750 pixels a token), capped. */
const IMAGE_TOKENS_CAP = 1600
const TOKENS_PER_PDF_PAGE = 1500
const PDF_BYTES_PER_PAGE_GUESS = 50_000

/** Token estimate of one attachment as a model would read it. */
export function estimateMediaTokens(media: MediaShape): number {
  if (media.mime.startsWith('image/')) {
    if (media.width === null || media.height === null) return IMAGE_TOKENS_CAP
    return Math.min(IMAGE_TOKENS_CAP, Math.max(1, Math.ceil((media.width * media.height) / 750)))
  }
  if (media.mime === 'application/pdf') {
    const pages = media.pageCount ?? Math.max(1, Math.ceil(media.byteLen / PDF_BYTES_PER_PAGE_GUESS))
    return saturatingAdd(pages * TOKENS_PER_PDF_PAGE)
  }
  // Text and anything else: roughly four bytes a token.
  return Math.ceil(media.byteLen / 4)
}

const attachmentTokens = (a: SentAttachment) => (a.kind === 'file' ? estimateMediaTokens(a.media) : estimateTokens(a.text))

/**
 * The project's one estimate of what a part costs a model (docs/guide/context.md): the texts it is sent
 * as, plus its attachments. The sandbox's usage (src/providers/estimate-prompt-tokens.ts) counts the
 * same texts in the vendor prompt, so the two agree.
 */
export function estimateRenderedTokens(part: RenderedPart): number {
  switch (part.type) {
    case 'prompt':
      return saturatingAdd(estimateTokens(part.text), ...part.attachments.map(attachmentTokens))
    case 'tool_result':
      return saturatingAdd(estimateTokens(part.toolName), estimateTokens(part.text), ...part.attachments.map(attachmentTokens))
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

/** A ledger part's estimate as sent whole: stored with the part at write time. */
export function estimatePartTokens(body: PartBody, media: readonly MediaShape[] = []): number {
  const refs = media.map((m, i): MediaRef => ({ mediaId: String(i), filename: null, ...m }))
  return estimateRenderedTokens(renderVerbatim(body, refs))
}
