import type { PartBody } from '../parts.ts'
import { estimateTokens, saturatingAdd } from '../tokens/estimate-tokens.ts'

export type MediaShape = { mime: string; byte_len: number; width: number | null; height: number | null; page_count: number | null }

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
    const pages = media.page_count ?? Math.max(1, Math.ceil(media.byte_len / PDF_BYTES_PER_PAGE_GUESS))
    return saturatingAdd(pages * TOKENS_PER_PDF_PAGE)
  }
  // Text and anything else: roughly four bytes a token.
  return Math.ceil(media.byte_len / 4)
}

/** Token estimate of one ledger part with its attachments, stored with the part at write time. */
export function estimatePartTokens(body: PartBody, media: MediaShape[] = []): number {
  const own = (() => {
    switch (body.type) {
      case 'prompt':
      case 'reasoning':
        return estimateTokens(body.text)
      case 'message':
        return estimateTokens(body.text) + estimateTokens(body.refusal ?? '')
      case 'tool_result':
        return estimateTokens(body.text) + estimateTokens(body.tool_name)
      case 'tool_call':
        return estimateTokens(body.arguments) + estimateTokens(body.tool_name)
      default: {
        const unknown: never = body
        throw new Error(`unknown part ${JSON.stringify(unknown)}`)
      }
    }
  })()
  return saturatingAdd(own, ...media.map(estimateMediaTokens))
}
